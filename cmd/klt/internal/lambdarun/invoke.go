package lambdarun

import (
	"bytes"
	"context"
	"debug/elf"
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
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/internal/localserver"
	"github.com/kafkalambda/toolkit/internal/samstack"
	"github.com/kafkalambda/toolkit/internal/template"
	"github.com/twmb/franz-go/pkg/kfake"
)

// rieModule is the package of the Runtime Interface Emulator, pinned in tools/go.mod.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// Bounds on the steps of klt invoke that do not depend on the function.
const (
	buildTimeout    = 5 * time.Minute  // building bootstrap or the emulator (a cold cache)
	emulatorStartup = 15 * time.Second // the emulator listening
	invokeMargin    = 10 * time.Second // over the function's Timeout, for init and the emulator's own reply
)

// Config holds the flags of "klt invoke".
type Config struct {
	Template string
	Emulator string
	EnvVars  string
}

// Invoke does the work of klt invoke: it returns the function's response (also when the
// function failed: then with a non-nil error).
func Invoke(ctx context.Context, c Config, fn string, event []byte, logs io.Writer) ([]byte, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("klt invoke runs the function under the Lambda Runtime Interface Emulator, which runs on Linux only (this is %s)", runtime.GOOS)
	}
	t, err := samstack.ReadInvokeTemplate(c.Template)
	if err != nil {
		return nil, err
	}
	spec, err := t.Function(fn)
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
	rieDone := make(chan built, 1)
	go func() {
		if c.Emulator != "" {
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

	env, stop, err := localEnvironment(ctx, t, spec, overrides)
	defer stop()
	if err != nil {
		return nil, err
	}
	return runEmulator(ctx, rie.path, bootstrap, spec, env, event, logs)
}

// BuildEmulator builds aws-lambda-rie, as pinned in the tools/go.mod of the module around the
// working directory, into dir.
func BuildEmulator(ctx context.Context, dir string) (string, error) {
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	modfile := filepath.Join(root, "tools", "go.mod")
	if _, err := os.Stat(modfile); err != nil {
		return "", fmt.Errorf("the emulator is pinned in tools/go.mod of the toolkit's repository, and %s has none: run klt invoke from a clone of the toolkit, or give --emulator", root)
	}
	out := filepath.Join(dir, "aws-lambda-rie")
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, GoCommand(), "build", "-modfile="+modfile, "-o", out, rieModule)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Runtime Interface Emulator (go build -modfile=tools/go.mod %s): %v\n%s", rieModule, err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// BuildBootstrap builds the function's bootstrap for this machine into dir and returns its
// path. A CodeUri that is a Go main package is built as the function's make target builds it
// (CGO_ENABLED=0, -tags lambda.norpc, -trimpath, stripped), for the host's GOOS and GOARCH;
// otherwise, with BuildMethod makefile, its make target runs with ARTIFACTS_DIR=dir and
// GOOS/GOARCH of the host on the command line, and must leave dir/bootstrap for this machine.
func BuildBootstrap(ctx context.Context, f *samstack.FunctionSpec, dir string, logs io.Writer) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "bootstrap")
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if _, err := os.Stat(f.CodeURI); err != nil {
		return "", fmt.Errorf("CodeUri: %v", err)
	}
	hostEnv := append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	isMain, err := invokeMainDir(f.CodeURI)
	if err != nil {
		return "", fmt.Errorf("CodeUri: %w", err)
	}
	var cmd *exec.Cmd
	var what string
	switch {
	case isMain:
		cmd = exec.CommandContext(ctx, GoCommand(), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = f.CodeURI
		what = "go build of " + f.CodeURI
	case f.BuildMethod == "makefile":
		mk := filepath.Join(f.CodeURI, "Makefile")
		if _, err := os.Stat(mk); err != nil {
			return "", fmt.Errorf("BuildMethod makefile, but %v", err)
		}
		target := "build-" + f.LogicalID
		cmd = exec.CommandContext(ctx, "make", "--no-print-directory", "--makefile", mk, target,
			"ARTIFACTS_DIR="+dir, "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "LAMBDA_ARCH="+runtime.GOARCH)
		cmd.Dir = f.CodeURI
		what = "make " + target
	default:
		return "", fmt.Errorf("CodeUri %s is not a Go main package, and Metadata BuildMethod is %q, not makefile: klt invoke cannot build it", f.CodeURI, f.BuildMethod)
	}
	cmd.Env = append(hostEnv, "ARTIFACTS_DIR="+dir)
	var msg bytes.Buffer
	cmd.Stdout, cmd.Stderr = &msg, &msg
	if err := cmd.Run(); err != nil {
		if ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", err, ctx.Err())
		}
		return "", fmt.Errorf("build failed: %s: %v\n%s", what, err, strings.TrimSpace(msg.String()))
	}
	if err := checkHostBinary(out); err != nil {
		return "", fmt.Errorf("%s: %v", what, err)
	}
	return out, nil
}

// invokeMainDir reports whether dir holds Go files of package main. A Go file it cannot read
// (or one over sourceLimit) is an error, not a "no": the build would then take another way.
func invokeMainDir(dir string) (bool, error) {
	files, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return false, err
	}
	for _, f := range files {
		if strings.HasSuffix(f, "_test.go") {
			continue
		}
		data, err := base.ReadFileCapped(f, base.SourceLimit)
		if err != nil {
			return false, err
		}
		if bytes.Contains(data, []byte("\npackage main\n")) || bytes.HasPrefix(data, []byte("package main\n")) {
			return true, nil
		}
	}
	return false, nil
}

// checkHostBinary checks that path is an executable this machine runs: an ELF file of its
// architecture.
func checkHostBinary(path string) error {
	f, err := elf.Open(path)
	if err != nil {
		return fmt.Errorf("no bootstrap for this machine at %s: %v", path, err)
	}
	defer f.Close()
	want := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64, "386": elf.EM_386, "riscv64": elf.EM_RISCV}[runtime.GOARCH]
	if want != 0 && f.Machine != want {
		return fmt.Errorf("bootstrap is built for %v, not for this machine's %s: let the make target take GOARCH from the make command line (GOARCH ?= arm64)", f.Machine, runtime.GOARCH)
	}
	return nil
}

// GoCommand returns the go command to build with: "go" from PATH (go run and go test put
// their toolchain's first).
func GoCommand() string { return "go" }

// moduleRoot returns the directory of the nearest go.mod above the working directory.
func moduleRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or any parent directory: run klt invoke from a clone of the toolkit, or give --emulator", wd)
		}
		dir = parent
	}
}

// Needs says which local servers a function uses: those its environment names.
type Needs struct{ DDB, SQS, Kafka bool }

// FunctionNeeds returns the servers function f uses: DynamoDB when its Environment refers to a
// table, SQS when it refers to a queue, Kafka when it has KAFKA_BOOTSTRAP_SERVERS. (Policies
// are not looked at: a stream or queue the function only reads through an event source mapping
// is in its policies too, and a function finds its resources through its environment.)
func FunctionNeeds(t *samstack.InvokeTemplate, f *samstack.FunctionSpec) Needs {
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
	_, n.Kafka = f.Env["KAFKA_BOOTSTRAP_SERVERS"]
	return n
}

// Servers is the local servers of a run, the template's tables and queues on them, and the
// resolver of intrinsics to them.
type Servers struct {
	Resolver  *samstack.Resolver
	Endpoints map[string]string // AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, KAFKA_*
	Kafka     bool              // a Kafka is needed: startKafka starts it
	SQS       *localserver.SQS  // nil when no queue is needed
	Stops     []func()
}

// Stop stops the servers, last started first.
func (ls *Servers) Stop() {
	for i := len(ls.Stops) - 1; i >= 0; i-- {
		ls.Stops[i]()
	}
	ls.Stops = nil
}

// StartServers starts the DynamoDB and SQS servers need names and creates every table and queue of
// the template on them; Kafka waits for startKafka, once the topics are known. The caller must
// call stop, also after an error.
func StartServers(ctx context.Context, t *samstack.InvokeTemplate, need Needs) (*Servers, error) {
	ls := &Servers{Endpoints: map[string]string{}}
	tables, err := t.Tables()
	if err != nil {
		return ls, err
	}
	r := &samstack.Resolver{T: t, Tables: map[string]samstack.LocalTable{}, Queues: map[string]samstack.LocalQueue{}, QueueURLs: map[string]string{}}
	ls.Resolver = r
	for _, tb := range tables {
		r.Tables[tb.LogicalID] = tb
	}
	for _, q := range t.Queues() {
		r.Queues[q.LogicalID] = q
	}
	if need.DDB {
		s, err := localserver.StartDynamoDB(context.Background())
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
		s, err := localserver.StartSQS(context.Background())
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

// StartKafka starts an in-process Kafka (kfake) when the stack needs one, with topics created.
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
	ls.Stops = append(ls.Stops, kc.Close)
	ls.Endpoints["KAFKA_BOOTSTRAP_SERVERS"] = strings.Join(kc.ListenAddrs(), ",")
	ls.Endpoints["KAFKA_AUTH"] = "plaintext"
	return nil
}

// Vars returns the function's Environment.Variables, evaluated against the local resources.
// Those the local servers set (KAFKA_BOOTSTRAP_SERVERS...) and those in skip are not evaluated:
// their local values replace the template's.
func (ls *Servers) Vars(f *samstack.FunctionSpec, skip map[string]string) (map[string]string, error) {
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

// localEnvironment starts the servers f needs, creates the template's tables and queues on
// them, and returns the function's environment. stop stops the servers; it is never nil.
func localEnvironment(ctx context.Context, t *samstack.InvokeTemplate, f *samstack.FunctionSpec, overrides map[string]string) (env []string, stop func(), err error) {
	ls, err := StartServers(ctx, t, FunctionNeeds(t, f))
	if err != nil {
		return nil, ls.Stop, err
	}
	vars, err := ls.Vars(f, overrides)
	if err != nil {
		return nil, ls.Stop, err
	}
	if err := ls.StartKafka(TopicsOf(vars)); err != nil {
		return nil, ls.Stop, err
	}
	return FunctionEnv(f, vars, ls.Endpoints, overrides), ls.Stop, nil
}

// FunctionEnv returns the environment of the function's process: what sam local invoke sets,
// then the template's variables, then the local endpoints, then the --env-vars overrides.
// Nothing of klt's own environment reaches the function but PATH and HOME, so that a profile or
// credentials of the user's never do.
func FunctionEnv(f *samstack.FunctionSpec, vars, endpoints, overrides map[string]string) []string {
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
		"AWS_ACCOUNT_ID":                  samstack.LocalAccount,
		"AWS_REGION":                      samstack.LocalRegion,
		"AWS_DEFAULT_REGION":              samstack.LocalRegion,
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
func createTables(ctx context.Context, client *dynamodb.Client, tables []samstack.LocalTable) error {
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
		if err := localserver.CreateTable(ctx, client, in); err != nil {
			return fmt.Errorf("table %s: %w", tb.LogicalID, err)
		}
	}
	return nil
}

// createQueues creates the template's queues on a local SQS, dead-letter queues first, and
// records their URLs in r. Attributes that are not SQS queue attributes (QueueName, Tags) are
// left out; the others are evaluated, RedrivePolicy as JSON.
func createQueues(ctx context.Context, s *localserver.SQS, r *samstack.Resolver) error {
	client := s.Client()
	pending := make([]samstack.LocalQueue, 0, len(r.Queues))
	for _, q := range r.Queues {
		pending = append(pending, q)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].LogicalID < pending[j].LogicalID })
	for len(pending) > 0 {
		var later []samstack.LocalQueue
		for _, q := range pending {
			attrs, err := queueAttributes(q, r)
			if errors.Is(err, errNotYet) {
				later = append(later, q)
				continue
			}
			if err != nil {
				return err
			}
			u, err := localserver.CreateQueue(ctx, client, q.Name, attrs)
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
func queueAttributes(q samstack.LocalQueue, r *samstack.Resolver) (map[string]string, error) {
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
	data, err := base.ReadInputFile(path, nil, base.EnvVarsLimit)
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
func runEmulator(ctx context.Context, rie, bootstrap string, f *samstack.FunctionSpec, env []string, event []byte, logs io.Writer) ([]byte, error) {
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
	body, err := base.ReadCapped("the response", resp.Body, base.ResponseLimit)
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
