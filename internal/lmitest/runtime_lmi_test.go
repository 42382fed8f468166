package lmitest_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// childEnv names the function the test binary runs as, when it is started as one.
const childEnv = "LMITEST_FUNCTION"

// TestMain runs the test binary as a Lambda function under aws-lambda-go's own runtime loop
// when a test starts it so (see runtimeFunction); otherwise it runs the tests.
func TestMain(m *testing.M) {
	if os.Getenv(childEnv) == "kafka" {
		kafkaFunction()
		os.Exit(1) // lambda.Start returns only by exiting
	}
	os.Exit(m.Run())
}

// kafkaFunction is the function TestLMIRuntimeAPI runs: batch.KafkaHandler with idempotency on
// the dynalite at LMITEST_DDB, logging through lambdalog.New on standard output, one "applied"
// line per record applied.
func kafkaFunction() {
	ddb := awsdynamodb.NewFromConfig(standin.ClientConfig(standin.Region), func(o *awsdynamodb.Options) {
		o.BaseEndpoint = aws.String(os.Getenv("LMITEST_DDB"))
	})
	store, err := dynamodb.NewStore(ddb, "lmi-runtime")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	logger := lambdalog.New()
	process := func(ctx context.Context, r *kafkaevent.Record) error {
		lc, _ := lambdacontext.FromContext(ctx)
		logger.InfoContext(ctx, "applied", "ctx_request", lc.AwsRequestID, "partition", r.Partition, "offset", r.Offset, "key", string(r.Key))
		return nil
	}
	lambda.Start(lambdalog.WrapHandler(batch.KafkaHandler(process, batch.WithIdempotency(store), batch.WithLogger(logger))))
}

// runtimeAPI is Lambda's Runtime API (2018-06-01) for one execution environment: the function's
// runtime loops take invocations with GET .../invocation/next and answer with POST
// .../invocation/ID/response or /error. Invoke (an lmitest.Handler) queues one and waits for
// its answer; it counts how many were handed out and not yet answered at once.
type runtimeAPI struct {
	mu          sync.Mutex
	queue       chan *pendingInvoke
	answers     map[string]*pendingInvoke
	inFlight    int
	maxInFlight int
}

type pendingInvoke struct {
	id, trace string
	deadline  time.Time
	payload   []byte
	resp      []byte
	err       error
	done      chan struct{}
}

func (a *runtimeAPI) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	lc, _ := lambdacontext.FromContext(ctx)
	d, _ := ctx.Deadline()
	trace, _ := ctx.Value("x-amzn-trace-id").(string)
	p := &pendingInvoke{id: lc.AwsRequestID, trace: trace, deadline: d, payload: payload, done: make(chan struct{})}
	a.mu.Lock()
	a.answers[p.id] = p
	a.mu.Unlock()
	a.queue <- p
	select {
	case <-p.done:
		return p.resp, p.err
	case <-ctx.Done():
		return nil, fmt.Errorf("invocation %s: no answer from the function: %w", p.id, ctx.Err())
	}
}

func (a *runtimeAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	const base = "/2018-06-01/runtime/invocation/"
	rest, ok := strings.CutPrefix(r.URL.Path, base)
	switch {
	case ok && rest == "next" && r.Method == http.MethodGet:
		select {
		case p := <-a.queue:
			a.mu.Lock()
			a.inFlight++
			a.maxInFlight = max(a.maxInFlight, a.inFlight)
			a.mu.Unlock()
			h := w.Header()
			h.Set("Lambda-Runtime-Aws-Request-Id", p.id)
			h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(p.deadline.UnixMilli(), 10))
			h.Set("Lambda-Runtime-Invoked-Function-Arn", lmitest.FunctionARN)
			h.Set("Lambda-Runtime-Trace-Id", p.trace)
			_, _ = w.Write(p.payload)
		case <-r.Context().Done():
		}
	case ok && r.Method == http.MethodPost && (strings.HasSuffix(rest, "/response") || strings.HasSuffix(rest, "/error")):
		id, kind, _ := strings.Cut(rest, "/")
		body, _ := io.ReadAll(r.Body)
		a.mu.Lock()
		p := a.answers[id]
		delete(a.answers, id)
		a.inFlight--
		a.mu.Unlock()
		if p == nil {
			http.Error(w, "unknown request ID "+id, http.StatusBadRequest)
			return
		}
		if kind == "error" {
			p.err = fmt.Errorf("the function failed: %s", body)
		}
		p.resp = body
		close(p.done)
		w.WriteHeader(http.StatusAccepted)
	default:
		http.Error(w, "not served here: "+r.Method+" "+r.URL.Path, http.StatusNotFound)
	}
}

// runtimeFunction starts the test binary as the function named fn, under aws-lambda-go's
// runtime loop with AWS_LAMBDA_MAX_CONCURRENCY=concurrency against api, and
// _X_AMZN_TRACE_ID set to a trace no invocation has. It returns the function's standard
// output and error; the function is stopped when the test ends, and a data race in it fails
// the test.
func runtimeFunction(t *testing.T, fn string, concurrency int, api *runtimeAPI, env ...string) (stdout *lmitest.Output, stderr *bytes.Buffer) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: api}
	go func() { _ = srv.Serve(ln) }()
	stdout, stderr = &lmitest.Output{}, &bytes.Buffer{}
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+fn, "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(),
		"AWS_LAMBDA_MAX_CONCURRENCY="+strconv.Itoa(concurrency), "AWS_LAMBDA_FUNCTION_NAME=lmi", "AWS_LAMBDA_FUNCTION_VERSION=1",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=2048", invocation.TraceEnv+"="+lmitest.TraceHeader(9999), "GORACE=halt_on_error=1")
	cmd.Env = append(cmd.Env, env...)
	cmd.Stdout, cmd.Stderr = stdout, stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		err := cmd.Wait()
		_ = srv.Close()
		var ee *exec.ExitError
		if err != nil && !errors.As(err, &ee) {
			t.Errorf("the function: %v", err)
		}
		if strings.Contains(stderr.String(), "DATA RACE") {
			t.Errorf("a data race in the function:\n%s", stderr)
		}
	})
	return stdout, stderr
}

// The Kafka function of TestLMIKafkaIdempotencySink, run as Lambda runs it: the test binary
// started as a function, aws-lambda-go's runtime loop with AWS_LAMBDA_MAX_CONCURRENCY=8 taking
// its invocations from a Runtime API served here, -race in the function, _X_AMZN_TRACE_ID set
// to a trace that is no invocation's. Each batch is delivered twice at once; every record is
// applied once, in order per partition and per key, and each line names its invocation and
// that invocation's trace.
func TestLMIRuntimeAPI(t *testing.T) {
	const partitions, records, batchSize, concurrency = 4, 24, 8, 8
	t.Run(fmt.Sprintf("partitions=%d_records=%d_batch=%d_each_batch_twice_at_once_AWS_LAMBDA_MAX_CONCURRENCY=%d",
		partitions, partitions*records, batchSize, concurrency), func(t *testing.T) {
		db := standintest.StartDynamoDB(t)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := standin.CreateTable(ctx, db.Client(), dynamodb.TableInput("lmi-runtime")); err != nil {
			t.Fatal(err)
		}
		api := &runtimeAPI{queue: make(chan *pendingInvoke, 64), answers: map[string]*pendingInvoke{}}
		stdout, _ := runtimeFunction(t, "kafka", concurrency, api, "LMITEST_DDB="+db.Endpoint())
		meet := &meeting{t: t}
		mapping := &kafkaMapping{partitions: partitions, records: records, batchSize: batchSize, dup: 2,
			key:   func(p, off int) string { return fmt.Sprintf("p%d-k%d", p, off%3) },
			value: func(p, off int) string { return "v" }}
		st := mapping.run(t, meetFirst{api, meet}, meet)
		api.mu.Lock()
		most := api.maxInFlight
		api.mu.Unlock()
		t.Logf("%d invocations in %d rounds; at most %d in flight at once (the Runtime API's count)", st.invocations, st.rounds, most)
		if most < concurrency {
			t.Errorf("at most %d invocations in flight at once, want %d", most, concurrency)
		}
		l := ledgerFromLines(t, stdout)
		want := map[string]bool{}
		for p := range partitions {
			for off := range records {
				want[fmt.Sprintf("%d/%d", p, off)] = true
			}
		}
		l.check(t, want)
		checkLogLines(t, stdout, st.invocations)
		checkColdStart(t, stdout)
	})
}

// checkColdStart: the lines of exactly one invocation say cold_start true, the function's first,
// however many ran at once: the cold start is the execution environment's.
func checkColdStart(t *testing.T, out *lmitest.Output) {
	t.Helper()
	lines, err := out.Lines()
	if err != nil {
		t.Fatal(err)
	}
	cold := map[any]bool{}
	for _, line := range lines {
		if line["cold_start"] == true {
			cold[line["function_request_id"]] = true
		}
	}
	if len(cold) != 1 {
		t.Errorf("invocations whose lines say cold_start true: %v, want one", cold)
	}
}

// ledgerFromLines rebuilds the ledger from the function's "applied" lines.
func ledgerFromLines(t *testing.T, out *lmitest.Output) *ledger {
	t.Helper()
	lines, err := out.Lines()
	if err != nil {
		t.Fatal(err)
	}
	l := newLedger()
	for _, line := range lines {
		if line["message"] != "applied" {
			continue
		}
		p, _ := line["partition"].(float64)
		off, _ := line["offset"].(float64)
		key, _ := line["key"].(string)
		req, _ := line["ctx_request"].(string)
		l.apply(req, &kafkaevent.Record{Partition: int32(p), Offset: int64(off), Key: []byte(key)})
	}
	return l
}
