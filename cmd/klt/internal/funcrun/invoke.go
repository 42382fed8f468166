package funcrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/runtimeapi"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/template"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Bounds on the steps of klt invoke that do not depend on the function.
const (
	buildTimeout    = 5 * time.Minute  // building bootstrap or the emulator (a cold cache)
	emulatorStartup = 15 * time.Second // the emulator listening
	invokeMargin    = 10 * time.Second // over the function's Timeout, for init and the emulator's own reply
	topicsTimeout   = 10 * time.Second // creating the topics on the local Kafka
)

// Config holds the flags of "klt invoke".
type Config struct {
	Template string
	Emulator string
	EnvVars  string
	Params   ParamsFlag // --parameter-overrides
	// LMIConcurrency, when positive, runs the function as a Lambda Managed Instances function
	// with that many invocations at once per execution environment (--lmi-concurrency), as
	// a template's CapacityProviderConfig does without it.
	LMIConcurrency int
}

// NodeServersHelp is the paragraph of the commands' help that says where the Node servers
// come from (internal/standin's order).
const NodeServersHelp = `dynalite and local-aws-sqs are Node.js programs: klt runs them from the node_modules directory
$KLT_NODE_MODULES names; else, in the toolkit's checkout, from its node_modules; else it
installs the versions it pins into your cache directory on first use (npm ci; node and npm on
PATH, the npm registry reachable).
`

// ParamsFlag is a repeatable flag of NAME=VALUE template parameter values
// (--parameter-overrides), which replace the parameters' Defaults.
type ParamsFlag map[string]string

func (f ParamsFlag) String() string {
	var parts []string
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func (f ParamsFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	f[name] = value
	return nil
}

// Invoke does the work of klt invoke: it returns the function's response (also when the
// function failed: then with a non-nil error).
func Invoke(ctx context.Context, c Config, fn string, event []byte, logs io.Writer) ([]byte, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("klt invoke runs the function under the Lambda Runtime Interface Emulator, which runs on Linux only (this is %s)", runtime.GOOS)
	}
	t, err := samspec.ReadInvokeTemplate(c.Template)
	if err != nil {
		return nil, err
	}
	if err := samspec.CheckParameters(t, c.Params); err != nil {
		return nil, fmt.Errorf("--parameter-overrides: %w", err)
	}
	spec, err := (&samspec.Resolver{T: t, Params: c.Params}).Function(fn)
	if err != nil {
		return nil, err
	}
	overrides, err := readEnvVarsFile(c.EnvVars, fn)
	if err != nil {
		return nil, err
	}

	work, err := os.MkdirTemp("", "klt-invoke-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(work)

	// Build the emulator and the function while the servers start.
	type built struct {
		path string
		err  error
	}
	lmi := c.LMIConcurrency
	if lmi == 0 {
		lmi = spec.LMIConcurrency()
	}
	rieDone := make(chan built, 1)
	go func() {
		if c.Emulator != "" || lmi > 0 { // an LMI function runs on klt's own Runtime API server
			rieDone <- built{c.Emulator, nil}
			return
		}
		p, err := BuildEmulator(ctx, work)
		rieDone <- built{p, err}
	}()
	bootstrap, buildErr := BuildBootstrap(ctx, spec, filepath.Join(work, "task"), logs)
	rie := <-rieDone
	if buildErr != nil {
		return nil, buildErr
	}
	if rie.err != nil {
		return nil, rie.err
	}

	env, stop, err := localEnvironment(ctx, t, spec, c.Params, overrides)
	defer stop()
	if err != nil {
		return nil, err
	}
	if lmi > 0 {
		return runLMI(ctx, bootstrap, spec, env, lmi, event, logs)
	}
	return runEmulator(ctx, rie.path, bootstrap, spec, env, event, logs)
}

// runLMI runs the function as a Lambda Managed Instances function, lmi invocations at once
// per execution environment, on klt's Runtime API server (runtimeapi), which runs them
// concurrently and does not enforce timeouts, as LMI does; the Runtime Interface Emulator
// does neither. It invokes the function once with event, then says on logs how the
// environment ran.
func runLMI(ctx context.Context, bootstrap string, f *samspec.FunctionSpec, env []string, lmi int, event []byte, logs io.Writer) ([]byte, error) {
	var mu sync.Mutex
	pool, err := runtimeapi.Start(runtimeapi.Config{
		Name: f.LogicalID, Bootstrap: bootstrap, Env: env, LMIConcurrency: lmi,
		Timeout: time.Duration(f.Timeout) * time.Second,
		Logs: func(_ int, line []byte) {
			mu.Lock()
			defer mu.Unlock()
			logs.Write(append(line, '\n'))
		},
	})
	if err != nil {
		return nil, err
	}
	defer pool.Close()
	resp, err := pool.Invoke(ctx, event)
	if err != nil {
		return nil, err
	}
	fr := FunctionReport(f.LogicalID, pool)
	mu.Lock()
	fmt.Fprintf(logs, "klt invoke: %s ran as a Lambda Managed Instances function, %d invocations at once per execution environment (AWS_LAMBDA_MAX_CONCURRENCY=%d)\n", f.LogicalID, lmi, lmi)
	for _, p := range fr.PastDeadline {
		fmt.Fprintf(logs, "klt invoke: invocation %s ran past its deadline (%s): LMI does not stop it; it was still running when klt stopped the environment\n", p.RequestID, p.Deadline.Format(time.RFC3339Nano))
	}
	mu.Unlock()
	if e := resp.Err; e != nil {
		body, _ := json.Marshal(map[string]string{"errorType": e.Type, "errorMessage": e.Message})
		if e.Type == "Sandbox.Timedout" {
			return body, fmt.Errorf("timed out (Timeout %d s)", f.Timeout)
		}
		return body, fmt.Errorf("function error: %s: %s", e.Type, e.Message)
	}
	return resp.Payload, nil
}

// Needs says which local servers a function uses: those its environment names.
type Needs struct{ DDB, SQS, Kafka bool }

// FunctionNeeds returns the servers function f uses: DynamoDB when its Environment refers to a
// table, SQS when it refers to a queue, Kafka when it has a variable of brokers
// (KAFKA_BOOTSTRAP_SERVERS, or another name samspec.IsBrokersVariable accepts). (Policies
// are not looked at: a stream or queue the function only reads through an event source mapping
// is in its policies too, and a function finds its resources through its environment.)
func FunctionNeeds(t *samspec.InvokeTemplate, f *samspec.FunctionSpec) Needs {
	var n Needs
	for _, k := range f.EnvOrder {
		for _, name := range template.Refs(f.Env[k]) {
			switch t.ResourceType(name) {
			case template.TypeTable, template.TypeSimpleTable:
				n.DDB = true
			case template.TypeQueue:
				n.SQS = true
			}
		}
	}
	for _, k := range f.EnvOrder {
		n.Kafka = n.Kafka || samspec.IsBrokersVariable(k)
	}
	return n
}

// Servers is the local servers of a run, the template's tables and queues on them, and the
// resolver of intrinsics to them.
type Servers struct {
	Resolver  *samspec.Resolver
	Endpoints map[string]string // AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, KAFKA_*
	Kafka     bool              // a Kafka is needed: StartKafka starts it
	SQS       *standin.SQS      // nil when no queue is needed
	Stops     []func()

	kafka *kfake.Cluster // once StartKafka has started it
}

// Stop stops the servers, last started first.
func (ls *Servers) Stop() {
	for i := len(ls.Stops) - 1; i >= 0; i-- {
		ls.Stops[i]()
	}
	ls.Stops = nil
}

// StartServers starts the DynamoDB and SQS servers need names and creates every table and queue of
// the template on them; Kafka waits for StartKafka. The caller must call Stop, also after an
// error. The Resolver has no parameter values yet: set its Params (--parameter-overrides)
// before evaluating; StartKafka sets its Local endpoints.
func StartServers(ctx context.Context, t *samspec.InvokeTemplate, need Needs) (*Servers, error) {
	ls := &Servers{Endpoints: map[string]string{}}
	tables, err := t.Tables()
	if err != nil {
		return ls, err
	}
	r := &samspec.Resolver{T: t, Tables: map[string]samspec.LocalTable{}, Queues: map[string]samspec.LocalQueue{}, QueueURLs: map[string]string{}}
	ls.Resolver = r
	for _, tb := range tables {
		r.Tables[tb.LogicalID] = tb
	}
	for _, q := range t.Queues() {
		r.Queues[q.LogicalID] = q
	}
	if need.DDB {
		s, err := standin.StartDynamoDB(context.Background())
		if err != nil {
			return ls, fmt.Errorf("starting dynalite for the function's tables: %w", err)
		}
		ls.Stops = append(ls.Stops, s.Stop)
		ls.Endpoints["AWS_ENDPOINT_URL_DYNAMODB"] = s.Endpoint()
		if err := createTables(ctx, s.Client(), tables); err != nil {
			return ls, err
		}
	}
	if need.SQS {
		s, err := standin.StartSQS(context.Background())
		if err != nil {
			return ls, fmt.Errorf("starting local-aws-sqs for the function's queues: %w", err)
		}
		ls.Stops = append(ls.Stops, s.Stop)
		ls.SQS = s
		ls.Endpoints["AWS_ENDPOINT_URL_SQS"] = s.Endpoint()
		if err := createQueues(ctx, s, r); err != nil {
			return ls, err
		}
	}
	ls.Kafka = need.Kafka
	return ls, nil
}

// StartKafka starts an in-process Kafka (kfake) when the stack needs one, with topics created
// (more with CreateTopics), and makes its address the Resolver's local Kafka, the value of
// the template's broker parameters (samspec.KafkaBrokerParameters) that have no other.
func (ls *Servers) StartKafka(topics []string) error {
	if !ls.Kafka {
		return nil
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}
	if len(topics) > 0 {
		opts = append(opts, kfake.SeedTopics(1, topics...))
	}
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("starting kfake for KAFKA_BOOTSTRAP_SERVERS: %w", err)
	}
	ls.kafka = kc
	ls.Stops = append(ls.Stops, kc.Close)
	addrs := strings.Join(kc.ListenAddrs(), ",")
	ls.Endpoints["KAFKA_BOOTSTRAP_SERVERS"] = addrs
	ls.Endpoints["KAFKA_AUTH"] = "plaintext"
	if ls.Resolver != nil {
		ls.Resolver.Local.KafkaBootstrapServers = addrs
	}
	return nil
}

// KafkaCluster returns the Kafka StartKafka started, or nil.
func (ls *Servers) KafkaCluster() *kfake.Cluster { return ls.kafka }

// CreateTopics creates topics (those that exist are left as they are) with partitions each on
// the Kafka StartKafka started.
func (ls *Servers) CreateTopics(ctx context.Context, partitions int32, topics ...string) error {
	if len(topics) == 0 {
		return nil
	}
	if ls.kafka == nil {
		return fmt.Errorf("creating topics %s: no local Kafka runs (internal error)", strings.Join(topics, ", "))
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(ls.kafka.ListenAddrs()...))
	if err != nil {
		return err
	}
	defer cl.Close()
	if err := standin.CreateTopics(ctx, cl, standin.Partitions(partitions), topics...); err != nil {
		return fmt.Errorf("the local Kafka: %w", err)
	}
	return nil
}

// Vars returns the function's Environment.Variables, evaluated against the local resources.
// Those the local servers set (KAFKA_BOOTSTRAP_SERVERS...) and those in skip are not evaluated:
// their local values replace the template's.
func (ls *Servers) Vars(f *samspec.FunctionSpec, skip map[string]string) (map[string]string, error) {
	vars := map[string]string{}
	for _, k := range f.EnvOrder {
		_, local := ls.Endpoints[k]
		local = local || ls.Kafka && (k == "KAFKA_BOOTSTRAP_SERVERS" || k == "KAFKA_AUTH")
		if _, over := skip[k]; over || local {
			vars[k] = ""
			continue
		}
		where := f.LogicalID + ".Environment.Variables." + k
		v, err := ls.Resolver.Eval(f.Env[k], where)
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case string:
			// A value is data: it goes to the function's process as it is (newlines too, never
			// through a shell), but a process's environment cannot hold a NUL byte.
			if strings.ContainsRune(v, 0) {
				return nil, fmt.Errorf("%s: %s: the value holds a NUL byte, which no process's environment can", f.Env[k].Pos, where)
			}
			vars[k] = v
		default:
			if v == template.NoValue { // !Ref AWS::NoValue: no such variable
				continue
			}
			return nil, fmt.Errorf("%s: %s: want a string, got %s", f.Env[k].Pos, where, template.Describe(v))
		}
	}
	return vars, nil
}

// TopicsOf returns the topics named by the evaluated variables whose name has TOPIC in it.
func TopicsOf(vars map[string]string) []string {
	var topics []string
	for k, v := range vars {
		if strings.Contains(k, "TOPIC") && v != "" {
			topics = append(topics, strings.Split(v, ",")...)
		}
	}
	sort.Strings(topics)
	return topics
}

// localEnvironment starts the servers f needs, creates the template's tables and queues (and
// the topics its variables name) on them, and returns the function's environment, evaluated
// with params (--parameter-overrides) and the local servers. stop stops the servers; it is
// never nil.
func localEnvironment(ctx context.Context, t *samspec.InvokeTemplate, f *samspec.FunctionSpec, params, overrides map[string]string) (env []string, stop func(), err error) {
	ls, err := StartServers(ctx, t, FunctionNeeds(t, f))
	if err != nil {
		return nil, ls.Stop, err
	}
	ls.Resolver.Params = params
	if err := ls.StartKafka(nil); err != nil {
		return nil, ls.Stop, err
	}
	vars, err := ls.Vars(f, overrides)
	if err != nil {
		return nil, ls.Stop, err
	}
	if err := ls.CreateTopics(ctx, 1, TopicsOf(vars)...); err != nil {
		return nil, ls.Stop, err
	}
	return FunctionEnv(f, vars, ls.Endpoints, overrides), ls.Stop, nil
}

// FunctionEnv returns the environment of the function's process: what sam local invoke sets,
// then the template's variables, then the local endpoints, then the --env-vars overrides.
// Nothing of klt's own environment reaches the function but PATH and HOME, so that a profile or
// credentials of the user's never do.
func FunctionEnv(f *samspec.FunctionSpec, vars, endpoints, overrides map[string]string) []string {
	m := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"HOME":                            os.Getenv("HOME"),
		"TZ":                              "UTC",
		"LANG":                            "en_US.UTF-8",
		"AWS_SAM_LOCAL":                   "true",
		"AWS_LAMBDA_FUNCTION_NAME":        f.LogicalID,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.Memory),
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(f.Timeout),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "aws/lambda/" + f.LogicalID,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_ACCOUNT_ID":                  samspec.LocalAccount,
		"AWS_REGION":                      samspec.LocalRegion,
		"AWS_DEFAULT_REGION":              samspec.LocalRegion,
		"AWS_ACCESS_KEY_ID":               "test",
		"AWS_SECRET_ACCESS_KEY":           "test",
		"AWS_EC2_METADATA_DISABLED":       "true",
	}
	for _, src := range []map[string]string{vars, endpoints} {
		for k, v := range src {
			m[k] = v
		}
	}
	for k, v := range overrides {
		if _, declared := vars[k]; declared { // as sam local invoke: declared names only
			m[k] = v
		}
	}
	env := make([]string, 0, len(m))
	for k, v := range m {
		env = append(env, k+"="+v)
	}
	sort.Strings(env)
	return env
}

// createTables creates the template's tables on a local DynamoDB.
func createTables(ctx context.Context, client *dynamodb.Client, tables []samspec.LocalTable) error {
	for _, tb := range tables {
		in := &dynamodb.CreateTableInput{TableName: aws.String(tb.Name)}
		for i, k := range tb.Keys {
			kt := ddbtypes.KeyTypeHash
			if i > 0 {
				kt = ddbtypes.KeyTypeRange
			}
			in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.Name), KeyType: kt})
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(k.Name), AttributeType: ddbtypes.ScalarAttributeType(k.Typ)})
		}
		if tb.StreamView != "" {
			in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(tb.StreamView)}
		}
		if err := standin.CreateTable(ctx, client, in); err != nil {
			return fmt.Errorf("table %s: %w", tb.LogicalID, err)
		}
	}
	return nil
}

// createQueues creates the template's queues on a local SQS, dead-letter queues first, and
// records their URLs in r. Attributes that are not SQS queue attributes (QueueName, Tags) are
// left out; the others are evaluated, RedrivePolicy as JSON.
func createQueues(ctx context.Context, s *standin.SQS, r *samspec.Resolver) error {
	client := s.Client()
	pending := make([]samspec.LocalQueue, 0, len(r.Queues))
	for _, q := range r.Queues {
		pending = append(pending, q)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].LogicalID < pending[j].LogicalID })
	for len(pending) > 0 {
		var later []samspec.LocalQueue
		for _, q := range pending {
			attrs, err := queueAttributes(q, r)
			if errors.Is(err, errNotYet) {
				later = append(later, q)
				continue
			}
			if err != nil {
				return err
			}
			u, err := standin.CreateQueue(ctx, client, q.Name, attrs)
			if err != nil {
				return fmt.Errorf("queue %s: %w", q.LogicalID, err)
			}
			r.QueueURLs[q.LogicalID] = u
		}
		if len(later) == len(pending) {
			return fmt.Errorf("queues %s refer to each other in RedrivePolicy", later[0].LogicalID)
		}
		pending = later
	}
	return nil
}

var errNotYet = errors.New("refers to a queue not created yet")

// queueAttributes returns the SQS attributes of q.
func queueAttributes(q samspec.LocalQueue, r *samspec.Resolver) (map[string]string, error) {
	attrs := map[string]string{}
	for k, n := range q.Attrs {
		switch k {
		case "QueueName", "Tags", "FifoQueue":
			continue
		case "RedrivePolicy", "RedriveAllowPolicy":
			v, err := r.Eval(n, q.LogicalID+"."+k)
			if err != nil {
				return nil, err
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s.%s: want a mapping", n.Pos, q.LogicalID, k)
			}
			// The dead-letter queue must exist first (its ARN is known before, but local-aws-sqs
			// checks it).
			if arn, _ := m["deadLetterTargetArn"].(string); arn != "" {
				for id, dlq := range r.Queues {
					if strings.HasSuffix(arn, ":"+dlq.Name) && r.QueueURLs[id] == "" {
						return nil, errNotYet
					}
				}
			}
			b, _ := json.Marshal(m)
			attrs[k] = string(b)
		default:
			v, err := r.Str(n, q.LogicalID+"."+k)
			if err != nil {
				return nil, err
			}
			attrs[k] = v
		}
	}
	if strings.HasSuffix(q.Name, ".fifo") {
		attrs["FifoQueue"] = "true"
	}
	return attrs, nil
}

// readEnvVarsFile reads a sam local invoke --env-vars file ("" for none) and returns the values
// for function fn: "Parameters" first, then fn's own.
func readEnvVarsFile(path, fn string) (map[string]string, error) {
	if path == "" {
		return nil, nil
	}
	data, err := input.ReadFileOrStdin(path, nil, input.EnvVarsLimit)
	if err != nil {
		return nil, err
	}
	if err := jsondup.CheckDuplicateMembers(path, data); err != nil {
		return nil, err
	}
	var top map[string]map[string]any
	if err := json.Unmarshal(data, &top); err != nil {
		return nil, fmt.Errorf("%s: want {\"Parameters\": {NAME: value}, \"FunctionId\": {NAME: value}}: %v", path, err)
	}
	out := map[string]string{}
	for _, sect := range []string{"Parameters", fn} {
		for k, v := range top[sect] {
			switch v := v.(type) {
			case string:
				if strings.ContainsRune(v, 0) || strings.ContainsRune(k, 0) {
					return nil, fmt.Errorf("%s: %s.%s: holds a NUL byte, which no process's environment can", path, sect, k)
				}
				out[k] = v
			case bool, float64:
				out[k] = fmt.Sprint(v)
			default:
				return nil, fmt.Errorf("%s: %s.%s: want a string, number or boolean", path, sect, k)
			}
		}
	}
	return out, nil
}

// runEmulator starts the emulator with bootstrap, posts event and returns the response. The
// function's output and the emulator's go to logs.
func runEmulator(ctx context.Context, rie, bootstrap string, f *samspec.FunctionSpec, env []string, event []byte, logs io.Writer) ([]byte, error) {
	apiPort, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	port, err := freeLoopbackPort()
	if err != nil {
		return nil, err
	}
	addr := "127.0.0.1:" + strconv.Itoa(port)
	cmd := exec.Command(rie, "--log-level", "error", "--runtime-interface-emulator-address", addr,
		"--runtime-api-address", "127.0.0.1:"+strconv.Itoa(apiPort), bootstrap)
	cmd.Dir = filepath.Dir(bootstrap)
	cmd.Env = env
	var early bytes.Buffer // the first output, for an emulator that does not start
	out := &logWriter{w: io.MultiWriter(logs, &limitWriter{b: &early, n: 16 << 10}), report: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = out, out
	cmd.WaitDelay = 2 * time.Second
	setProcessGroup(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("the emulator did not start: %w", err)
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	defer func() {
		// The emulator prints REPORT after the response; then nothing the function prints
		// as it is killed (a failed poll of the Runtime API) belongs to the invocation.
		select {
		case <-out.report:
		case <-exited:
		case <-time.After(time.Second):
		}
		out.mute()
		killProcessGroup(cmd)
		select {
		case <-exited:
		case <-time.After(5 * time.Second):
		}
	}()

	// Wait until it listens.
	deadline := time.Now().Add(emulatorStartup)
	for {
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			conn.Close()
			break
		}
		select {
		case werr := <-exited:
			exited <- werr
			return nil, fmt.Errorf("the emulator exited before it listened (%v): %s", werr, strings.TrimSpace(early.String()))
		case <-ctx.Done():
			return nil, ctx.Err()
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			return nil, fmt.Errorf("the emulator did not listen on %s within %v", addr, emulatorStartup)
		}
	}

	limit := time.Duration(f.Timeout)*time.Second + invokeMargin
	ictx, cancel := context.WithTimeout(ctx, limit)
	defer cancel()
	req, err := http.NewRequestWithContext(ictx, http.MethodPost, "http://"+addr+"/2015-03-31/functions/function/invocations", bytes.NewReader(event))
	if err != nil {
		return nil, err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		if ictx.Err() != nil && ctx.Err() == nil {
			return nil, fmt.Errorf("no response within %v (Timeout %d s and %v for the emulator)", limit, f.Timeout, invokeMargin)
		}
		return nil, fmt.Errorf("invoking through the emulator: %w", err)
	}
	defer resp.Body.Close()
	body, err := input.ReadCapped("the response", resp.Body, input.ResponseLimit)
	if err != nil {
		return nil, fmt.Errorf("reading the function's response: %w", err)
	}
	if resp.StatusCode != http.StatusOK {
		return body, fmt.Errorf("the emulator answered %s", resp.Status)
	}
	if fe := resp.Header.Get("X-Amz-Function-Error"); fe != "" {
		return body, fmt.Errorf("function error (%s): %s", fe, errorSummary(body))
	}
	if bytes.HasPrefix(body, []byte("Task timed out after")) {
		return body, fmt.Errorf("timed out (Timeout %d s)", f.Timeout)
	}
	if s, ok := functionError(body); ok {
		return body, fmt.Errorf("function error: %s", s)
	}
	return body, nil
}

// functionError reports whether body is an error payload of the Runtime API,
// {"errorMessage": ..., "errorType": ...} with perhaps "stackTrace", and summarises it.
func functionError(body []byte) (string, bool) {
	var m map[string]json.RawMessage
	if json.Unmarshal(body, &m) != nil {
		return "", false
	}
	_, hasMsg := m["errorMessage"]
	_, hasType := m["errorType"]
	if !hasMsg || !hasType {
		return "", false
	}
	for k := range m {
		if k != "errorMessage" && k != "errorType" && k != "stackTrace" && k != "requestId" {
			return "", false
		}
	}
	return errorSummary(body), true
}

// errorSummary returns "errorType: errorMessage" of an error payload, or the payload itself.
func errorSummary(body []byte) string {
	var e struct{ ErrorMessage, ErrorType string }
	if json.Unmarshal(body, &e) != nil || e.ErrorMessage == "" && e.ErrorType == "" {
		return string(body)
	}
	return e.ErrorType + ": " + e.ErrorMessage
}

// freeLoopbackPort asks the kernel for a free loopback TCP port.
func freeLoopbackPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// limitWriter keeps the first n bytes written to it.
type limitWriter struct {
	b *bytes.Buffer
	n int
}

func (l *limitWriter) Write(p []byte) (int, error) {
	if room := l.n - l.b.Len(); room > 0 {
		l.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

// logWriter passes the emulator's output to w until muted, and closes report once a REPORT line
// has passed.
type logWriter struct {
	mu     sync.Mutex
	w      io.Writer
	muted  bool
	seen   bool
	report chan struct{}
}

func (l *logWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.muted {
		return len(p), nil
	}
	l.w.Write(p)
	if !l.seen && bytes.Contains(p, []byte("REPORT RequestId")) {
		l.seen = true
		close(l.report)
	}
	return len(p), nil
}

func (l *logWriter) mute() {
	l.mu.Lock()
	l.muted = true
	l.mu.Unlock()
}
