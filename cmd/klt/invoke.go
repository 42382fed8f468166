package main

import (
	"bytes"
	"context"
	"debug/elf"
	"encoding/json"
	"errors"
	"flag"
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
	"github.com/kafkalambda/toolkit/internal/localddb"
	"github.com/kafkalambda/toolkit/internal/localsqs"
	"github.com/twmb/franz-go/pkg/kfake"
	"go.yaml.in/yaml/v3"
)

// rieModule is the package of the Runtime Interface Emulator, pinned in tools/go.mod.
const rieModule = "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie"

// Bounds on the steps of klt invoke that do not depend on the function.
const (
	buildTimeout    = 5 * time.Minute  // building bootstrap or the emulator (a cold cache)
	emulatorStartup = 15 * time.Second // the emulator listening
	invokeMargin    = 10 * time.Second // over the function's Timeout, for init and the emulator's own reply
)

// invokeConfig holds the flags of "klt invoke".
type invokeConfig struct {
	template string
	emulator string
	envVars  string
}

func newInvokeFlags(c *invokeConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.StringVar(&c.template, "template", "template.yaml", "the SAM `FILE` that defines the function")
	fs.StringVar(&c.emulator, "emulator", "", "run this aws-lambda-rie `binary` instead of building the one pinned in tools/go.mod")
	fs.StringVar(&c.envVars, "env-vars", "", "a sam local invoke --env-vars JSON `FILE` whose values override the function's environment")
	return fs
}

// runInvoke runs "klt invoke [flags] FUNCTION EVENT".
func runInvoke(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c invokeConfig
	fs := newInvokeFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	if len(args) != 2 {
		return base.UsageError(stderr, "invoke", fmt.Errorf("want FUNCTION and EVENT, got %d arguments", len(args)))
	}
	fn, eventFile := args[0], args[1]
	event, err := base.ReadInputFile(eventFile, stdin, base.EventLimit)
	if err != nil {
		base.Errorf(stderr, "invoke: %v", err)
		return base.ExitFail
	}
	if !json.Valid(event) {
		var v any
		err := json.Unmarshal(event, &v)
		base.Errorf(stderr, "invoke: %s is not JSON (%v); an event is one JSON document, as sam local invoke -e takes", base.InputName(args[1:]), err)
		return base.ExitFail
	}
	if err := checkDuplicateMembers(base.InputName(args[1:]), event); err != nil {
		base.Errorf(stderr, "invoke: %v", err)
		return base.ExitFail
	}
	resp, err := invoke(ctx, c, fn, event, stderr)
	if resp != nil {
		stdout.Write(resp)
		if !bytes.HasSuffix(resp, []byte("\n")) {
			io.WriteString(stdout, "\n")
		}
	}
	if err != nil {
		base.Errorf(stderr, "invoke %s: %v", fn, err)
		return base.ExitFail
	}
	return base.ExitOK
}

// invoke does the work of klt invoke: it returns the function's response (also when the
// function failed: then with a non-nil error).
func invoke(ctx context.Context, c invokeConfig, fn string, event []byte, logs io.Writer) ([]byte, error) {
	if runtime.GOOS != "linux" {
		return nil, fmt.Errorf("klt invoke runs the function under the Lambda Runtime Interface Emulator, which runs on Linux only (this is %s)", runtime.GOOS)
	}
	t, err := readInvokeTemplate(c.template)
	if err != nil {
		return nil, err
	}
	spec, err := t.function(fn)
	if err != nil {
		return nil, err
	}
	overrides, err := readEnvVarsFile(c.envVars, fn)
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
		if c.emulator != "" {
			rieDone <- built{c.emulator, nil}
			return
		}
		p, err := buildEmulator(ctx, work)
		rieDone <- built{p, err}
	}()
	bootstrap, buildErr := buildBootstrap(ctx, spec, filepath.Join(work, "task"), logs)
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

// buildEmulator builds aws-lambda-rie, as pinned in the tools/go.mod of the module around the
// working directory, into dir.
func buildEmulator(ctx context.Context, dir string) (string, error) {
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
	cmd := exec.CommandContext(ctx, goCommand(), "build", "-modfile="+modfile, "-o", out, rieModule)
	cmd.Dir = root
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	if msg, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the Runtime Interface Emulator (go build -modfile=tools/go.mod %s): %v\n%s", rieModule, err, strings.TrimSpace(string(msg)))
	}
	return out, nil
}

// buildBootstrap builds the function's bootstrap for this machine into dir and returns its
// path. A CodeUri that is a Go main package is built as the function's make target builds it
// (CGO_ENABLED=0, -tags lambda.norpc, -trimpath, stripped), for the host's GOOS and GOARCH;
// otherwise, with BuildMethod makefile, its make target runs with ARTIFACTS_DIR=dir and
// GOOS/GOARCH of the host on the command line, and must leave dir/bootstrap for this machine.
func buildBootstrap(ctx context.Context, f *functionSpec, dir string, logs io.Writer) (string, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	out := filepath.Join(dir, "bootstrap")
	ctx, cancel := context.WithTimeout(ctx, buildTimeout)
	defer cancel()
	if _, err := os.Stat(f.codeURI); err != nil {
		return "", fmt.Errorf("CodeUri: %v", err)
	}
	hostEnv := append(os.Environ(), "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "CGO_ENABLED=0")
	isMain, err := invokeMainDir(f.codeURI)
	if err != nil {
		return "", fmt.Errorf("CodeUri: %w", err)
	}
	var cmd *exec.Cmd
	var what string
	switch {
	case isMain:
		cmd = exec.CommandContext(ctx, goCommand(), "build", "-tags", "lambda.norpc", "-trimpath", "-ldflags=-s -w", "-o", out, ".")
		cmd.Dir = f.codeURI
		what = "go build of " + f.codeURI
	case f.buildMethod == "makefile":
		mk := filepath.Join(f.codeURI, "Makefile")
		if _, err := os.Stat(mk); err != nil {
			return "", fmt.Errorf("BuildMethod makefile, but %v", err)
		}
		target := "build-" + f.logicalID
		cmd = exec.CommandContext(ctx, "make", "--no-print-directory", "--makefile", mk, target,
			"ARTIFACTS_DIR="+dir, "GOOS="+runtime.GOOS, "GOARCH="+runtime.GOARCH, "LAMBDA_ARCH="+runtime.GOARCH)
		cmd.Dir = f.codeURI
		what = "make " + target
	default:
		return "", fmt.Errorf("CodeUri %s is not a Go main package, and Metadata BuildMethod is %q, not makefile: klt invoke cannot build it", f.codeURI, f.buildMethod)
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

// goCommand returns the go command to build with: "go" from PATH (go run and go test put
// their toolchain's first).
func goCommand() string { return "go" }

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

// needs says which local servers a function uses: those its environment names.
type needs struct{ ddb, sqs, kafka bool }

// functionNeeds returns the servers function f uses: DynamoDB when its Environment refers to a
// table, SQS when it refers to a queue, Kafka when it has KAFKA_BOOTSTRAP_SERVERS. (Policies
// are not looked at: a stream or queue the function only reads through an event source mapping
// is in its policies too, and a function finds its resources through its environment.)
func functionNeeds(t *invokeTemplate, f *functionSpec) needs {
	var n needs
	_, res := mapGet(t.resources, f.logicalID)
	_, props := mapGet(res, "Properties")
	var walk func(*yaml.Node)
	walk = func(x *yaml.Node) {
		x = resolve(x)
		if x == nil {
			return
		}
		if x.Kind == yaml.ScalarNode {
			name, _, _ := strings.Cut(x.Value, ".")
			switch t.resourceType(name) {
			case ddbTableType, samTableType:
				n.ddb = true
			case sqsQueueType:
				n.sqs = true
			}
			if strings.Contains(x.Value, "${") { // a !Sub string
				for _, part := range strings.Split(x.Value, "${")[1:] {
					ref, _, _ := strings.Cut(part, "}")
					walk(&yaml.Node{Kind: yaml.ScalarNode, Value: ref})
				}
			}
		}
		for _, c := range x.Content {
			walk(c)
		}
	}
	for _, src := range []*yaml.Node{t.globals, props} {
		_, env := mapGet(src, "Environment")
		walk(env)
	}
	_, n.kafka = f.env["KAFKA_BOOTSTRAP_SERVERS"]
	return n
}

// localStack is the local servers of a run, the template's tables and queues on them, and the
// resolver of intrinsics to them.
type localStack struct {
	r         *resolver
	endpoints map[string]string // AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS, KAFKA_*
	kafka     bool              // a Kafka is needed: startKafka starts it
	sqs       *localsqs.Server  // nil when no queue is needed
	stops     []func()
}

// stop stops the servers, last started first.
func (ls *localStack) stop() {
	for i := len(ls.stops) - 1; i >= 0; i-- {
		ls.stops[i]()
	}
	ls.stops = nil
}

// startLocal starts the DynamoDB and SQS servers need names and creates every table and queue of
// the template on them; Kafka waits for startKafka, once the topics are known. The caller must
// call stop, also after an error.
func startLocal(ctx context.Context, t *invokeTemplate, need needs) (*localStack, error) {
	ls := &localStack{endpoints: map[string]string{}}
	tables, err := t.tables()
	if err != nil {
		return ls, err
	}
	r := &resolver{t: t, tables: map[string]localTable{}, queues: map[string]localQueue{}, queueURLs: map[string]string{}}
	ls.r = r
	for _, tb := range tables {
		r.tables[tb.logicalID] = tb
	}
	for _, q := range t.queues() {
		r.queues[q.logicalID] = q
	}
	if need.ddb {
		s, err := localddb.StartServer()
		if err != nil {
			return ls, fmt.Errorf("starting dynalite for the function's tables: %w", err)
		}
		ls.stops = append(ls.stops, s.Stop)
		ls.endpoints["AWS_ENDPOINT_URL_DYNAMODB"] = s.Endpoint()
		if err := createTables(ctx, s.Client(), tables); err != nil {
			return ls, err
		}
	}
	if need.sqs {
		s, err := localsqs.StartServer()
		if err != nil {
			return ls, fmt.Errorf("starting local-aws-sqs for the function's queues: %w", err)
		}
		ls.stops = append(ls.stops, s.Stop)
		ls.sqs = s
		ls.endpoints["AWS_ENDPOINT_URL_SQS"] = s.Endpoint()
		if err := createQueues(ctx, s, r); err != nil {
			return ls, err
		}
	}
	ls.kafka = need.kafka
	return ls, nil
}

// startKafka starts an in-process Kafka (kfake) when the stack needs one, with topics created.
func (ls *localStack) startKafka(topics []string) error {
	if !ls.kafka {
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
	ls.stops = append(ls.stops, kc.Close)
	ls.endpoints["KAFKA_BOOTSTRAP_SERVERS"] = strings.Join(kc.ListenAddrs(), ",")
	ls.endpoints["KAFKA_AUTH"] = "plaintext"
	return nil
}

// vars returns the function's Environment.Variables, evaluated against the local resources.
// Those the local servers set (KAFKA_BOOTSTRAP_SERVERS...) and those in skip are not evaluated:
// their local values replace the template's.
func (ls *localStack) vars(f *functionSpec, skip map[string]string) (map[string]string, error) {
	vars := map[string]string{}
	for _, k := range f.envOrder {
		_, local := ls.endpoints[k]
		local = local || ls.kafka && (k == "KAFKA_BOOTSTRAP_SERVERS" || k == "KAFKA_AUTH")
		if _, over := skip[k]; over || local {
			vars[k] = ""
			continue
		}
		where := f.logicalID + ".Environment.Variables." + k
		v, err := ls.r.eval(f.env[k], where)
		if err != nil {
			return nil, err
		}
		switch v := v.(type) {
		case noValue: // !Ref AWS::NoValue: no such variable
		case string:
			vars[k] = v
		default:
			return nil, fmt.Errorf("%s:%d: %s: want a string, got %s", ls.r.t.file, f.env[k].Line, where, describeValue(v))
		}
	}
	return vars, nil
}

// topicsOf returns the topics named by the evaluated variables whose name has TOPIC in it.
func topicsOf(vars map[string]string) []string {
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
func localEnvironment(ctx context.Context, t *invokeTemplate, f *functionSpec, overrides map[string]string) (env []string, stop func(), err error) {
	ls, err := startLocal(ctx, t, functionNeeds(t, f))
	if err != nil {
		return nil, ls.stop, err
	}
	vars, err := ls.vars(f, overrides)
	if err != nil {
		return nil, ls.stop, err
	}
	if err := ls.startKafka(topicsOf(vars)); err != nil {
		return nil, ls.stop, err
	}
	return functionEnv(f, vars, ls.endpoints, overrides), ls.stop, nil
}

// functionEnv returns the environment of the function's process: what sam local invoke sets,
// then the template's variables, then the local endpoints, then the --env-vars overrides.
// Nothing of klt's own environment reaches the function but PATH and HOME, so that a profile or
// credentials of the user's never do.
func functionEnv(f *functionSpec, vars, endpoints, overrides map[string]string) []string {
	m := map[string]string{
		"PATH":                            os.Getenv("PATH"),
		"HOME":                            os.Getenv("HOME"),
		"TZ":                              "UTC",
		"LANG":                            "en_US.UTF-8",
		"AWS_SAM_LOCAL":                   "true",
		"AWS_LAMBDA_FUNCTION_NAME":        f.logicalID,
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE": strconv.Itoa(f.memory),
		"AWS_LAMBDA_FUNCTION_TIMEOUT":     strconv.Itoa(f.timeout),
		"AWS_LAMBDA_FUNCTION_VERSION":     "$LATEST",
		"AWS_LAMBDA_LOG_GROUP_NAME":       "aws/lambda/" + f.logicalID,
		"AWS_LAMBDA_LOG_STREAM_NAME":      "$LATEST",
		"AWS_LAMBDA_INITIALIZATION_TYPE":  "on-demand",
		"AWS_ACCOUNT_ID":                  localAccount,
		"AWS_REGION":                      localRegion,
		"AWS_DEFAULT_REGION":              localRegion,
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
func createTables(ctx context.Context, client *dynamodb.Client, tables []localTable) error {
	for _, tb := range tables {
		in := &dynamodb.CreateTableInput{TableName: aws.String(tb.name)}
		for i, k := range tb.keys {
			kt := ddbtypes.KeyTypeHash
			if i > 0 {
				kt = ddbtypes.KeyTypeRange
			}
			in.KeySchema = append(in.KeySchema, ddbtypes.KeySchemaElement{AttributeName: aws.String(k.name), KeyType: kt})
			in.AttributeDefinitions = append(in.AttributeDefinitions, ddbtypes.AttributeDefinition{AttributeName: aws.String(k.name), AttributeType: ddbtypes.ScalarAttributeType(k.typ)})
		}
		if tb.streamView != "" {
			in.StreamSpecification = &ddbtypes.StreamSpecification{StreamEnabled: aws.Bool(true), StreamViewType: ddbtypes.StreamViewType(tb.streamView)}
		}
		if err := localddb.CreateTable(ctx, client, in); err != nil {
			return fmt.Errorf("table %s: %w", tb.logicalID, err)
		}
	}
	return nil
}

// createQueues creates the template's queues on a local SQS, dead-letter queues first, and
// records their URLs in r. Attributes that are not SQS queue attributes (QueueName, Tags) are
// left out; the others are evaluated, RedrivePolicy as JSON.
func createQueues(ctx context.Context, s *localsqs.Server, r *resolver) error {
	client := s.Client()
	pending := make([]localQueue, 0, len(r.queues))
	for _, q := range r.queues {
		pending = append(pending, q)
	}
	sort.Slice(pending, func(i, j int) bool { return pending[i].logicalID < pending[j].logicalID })
	for len(pending) > 0 {
		var later []localQueue
		for _, q := range pending {
			attrs, err := queueAttributes(q, r)
			if errors.Is(err, errNotYet) {
				later = append(later, q)
				continue
			}
			if err != nil {
				return err
			}
			u, err := localsqs.CreateQueue(ctx, client, q.name, attrs)
			if err != nil {
				return fmt.Errorf("queue %s: %w", q.logicalID, err)
			}
			r.queueURLs[q.logicalID] = u
		}
		if len(later) == len(pending) {
			return fmt.Errorf("queues %s refer to each other in RedrivePolicy", later[0].logicalID)
		}
		pending = later
	}
	return nil
}

var errNotYet = errors.New("refers to a queue not created yet")

// queueAttributes returns the SQS attributes of q.
func queueAttributes(q localQueue, r *resolver) (map[string]string, error) {
	attrs := map[string]string{}
	for k, n := range q.attrs {
		switch k {
		case "QueueName", "Tags", "FifoQueue":
			continue
		case "RedrivePolicy", "RedriveAllowPolicy":
			v, err := r.eval(n, q.logicalID+"."+k)
			if err != nil {
				return nil, err
			}
			m, ok := v.(map[string]any)
			if !ok {
				return nil, fmt.Errorf("%s: %s.%s: want a mapping", r.t.file, q.logicalID, k)
			}
			// The dead-letter queue must exist first (its ARN is known before, but local-aws-sqs
			// checks it).
			if arn, _ := m["deadLetterTargetArn"].(string); arn != "" {
				for id, dlq := range r.queues {
					if strings.HasSuffix(arn, ":"+dlq.name) && r.queueURLs[id] == "" {
						return nil, errNotYet
					}
				}
			}
			b, _ := json.Marshal(m)
			attrs[k] = string(b)
		default:
			v, err := r.str(n, q.logicalID+"."+k)
			if err != nil {
				return nil, err
			}
			attrs[k] = v
		}
	}
	if strings.HasSuffix(q.name, ".fifo") {
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
	if err := checkDuplicateMembers(path, data); err != nil {
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
func runEmulator(ctx context.Context, rie, bootstrap string, f *functionSpec, env []string, event []byte, logs io.Writer) ([]byte, error) {
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

	limit := time.Duration(f.timeout)*time.Second + invokeMargin
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
			return nil, fmt.Errorf("no response within %v (Timeout %d s and %v for the emulator)", limit, f.timeout, invokeMargin)
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
		return body, fmt.Errorf("timed out (Timeout %d s)", f.timeout)
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

// usageInvoke is the help of "klt invoke".
const usageInvoke = `Usage: klt invoke [flags] FUNCTION EVENT

Invoke one function of a SAM template with an event, as sam local invoke -e does, without
Docker: klt builds the function's bootstrap for this machine, runs it under the AWS Lambda
Runtime Interface Emulator (pinned in tools/go.mod), posts EVENT ("-" for stdin) and prints the
response on stdout; the function's logs go to stderr.

The function gets the environment sam local invoke gives it (AWS_LAMBDA_FUNCTION_NAME is the
logical ID, AWS_REGION us-east-1, credentials test/test) and its Environment.Variables from the
template, with intrinsics resolved to local resources: a Ref or GetAtt of a DynamoDB table or an
SQS queue names the local one, a Ref of a parameter gives its Default. When the function refers
to a table, klt starts dynalite and sets AWS_ENDPOINT_URL_DYNAMODB; to a queue, local-aws-sqs and
AWS_ENDPOINT_URL_SQS; when it has KAFKA_BOOTSTRAP_SERVERS, an in-process Kafka (kfake) with
KAFKA_AUTH=plaintext. Every table and queue of the template is created there. All of it stops
when the invocation ends.

The exit status is 1 when the function returns an error or times out, the template has no such
function, EVENT is not JSON, the build fails or the emulator does not start.
`

// usageInvokeExamples ends the help of "klt invoke".
const usageInvokeExamples = `
Examples:

  klt invoke ConsumerFunction testdata/events/consumer/orders.json
  make invoke FN=ConsumerFunction EVENT=testdata/events/consumer/orders.json
`

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

// invokeFlags returns the flags of "klt invoke", for its help.
func invokeFlags() *flag.FlagSet { return newInvokeFlags(new(invokeConfig)) }
