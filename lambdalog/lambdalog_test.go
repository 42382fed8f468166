package lambdalog

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"testing/slogtest"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// lineBuf collects the lines of a handler; safe for concurrent writers.
type lineBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lineBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lineBuf) lines(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(l.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("line %q is not JSON: %v", line, err)
		}
		out = append(out, m)
	}
	return out
}

func newTestLogger(w *lineBuf, opts ...Option) *slog.Logger {
	next := slog.NewJSONHandler(w, &slog.HandlerOptions{Level: LevelTrace, ReplaceAttr: ReplaceAttr})
	return slog.New(NewHandler(next, opts...))
}

// lambdaCtx is the context aws-lambda-go gives a handler for one invocation.
func lambdaCtx(requestID, arn, traceHeader string) context.Context {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: requestID, InvokedFunctionArn: arn})
	if traceHeader != "" {
		//lint:ignore SA1029 the string key is aws-lambda-go's
		ctx = context.WithValue(ctx, "x-amzn-trace-id", traceHeader)
	}
	return ctx
}

// invoke runs fn as one invocation through Wrap.
func invoke(ctx context.Context, fn func(ctx context.Context)) {
	_, _ = Wrap(func(ctx context.Context, _ struct{}) (struct{}, error) {
		fn(ctx)
		return struct{}{}, nil
	})(ctx, struct{}{})
}

func jsonType(v any) string {
	switch v.(type) {
	case string:
		return "string"
	case bool:
		return "boolean"
	case float64:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	case nil:
		return "null"
	}
	return fmt.Sprintf("%T", v)
}

func readFixture(t *testing.T, name string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile("testdata/powertools/" + name)
	if err != nil {
		t.Fatal(err)
	}
	var many []map[string]any
	if json.Unmarshal(b, &many) == nil {
		return many
	}
	var one map[string]any
	if err := json.Unmarshal(b, &one); err != nil {
		t.Fatal(err)
	}
	return []map[string]any{one}
}

// TestPowertoolsFixtures: for the input of each Powertools documentation line (testdata/
// powertools/README.md cites them), our line has the same keys with the same JSON types.
// TypeScript writes no location; that is the one key we add to its set.
func TestPowertoolsFixtures(t *testing.T) {
	cases := []struct {
		fixture string
		extra   []string // keys ours has that this edition does not write
		log     func(ctx context.Context, log *slog.Logger)
		opts    []Option
		trace   string
		corr    string
	}{
		{fixture: "python_set_correlation_id_output.json", corr: "correlation_id_value",
			opts: []Option{WithService("payment")},
			log:  func(ctx context.Context, l *slog.Logger) { l.InfoContext(ctx, "Collecting payment") }},
		{fixture: "python_sampling_debug_logs_output.json",
			opts: []Option{WithService("payment"), WithSampleRate(0.1), WithLevel(slog.LevelDebug)},
			log: func(ctx context.Context, l *slog.Logger) {
				l.DebugContext(ctx, "Verifying whether order_id is present")
				l.InfoContext(ctx, "Collecting payment")
			}},
		{fixture: "typescript_inject_lambda_context_output.json", extra: []string{"location"},
			trace: "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
			opts:  []Option{WithService("serverlessAirline")},
			log:   func(ctx context.Context, l *slog.Logger) { l.InfoContext(ctx, "This is an INFO log with some context") }},
	}
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "test")
	t.Setenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "128")
	for _, c := range cases {
		t.Run(c.fixture, func(t *testing.T) {
			want := readFixture(t, c.fixture)
			var w lineBuf
			log := newTestLogger(&w, c.opts...)
			ctx := lambdaCtx("52fdfc07-2182-154f-163f-5f0f9a621d72", "arn:aws:lambda:eu-west-1:12345678910:function:test", c.trace)
			if c.corr != "" {
				ctx = WithCorrelationID(ctx, c.corr)
			}
			invoke(ctx, func(ctx context.Context) { c.log(ctx, log) })
			got := w.lines(t)
			if len(got) != len(want) {
				t.Fatalf("%d lines, Powertools wrote %d: %v", len(got), len(want), got)
			}
			for i := range want {
				for k, v := range want[i] {
					g, ok := got[i][k]
					if !ok {
						t.Errorf("line %d: no %q (Powertools: %v)", i, k, v)
					} else if jsonType(g) != jsonType(v) {
						t.Errorf("line %d: %q is a %s (%v), Powertools writes a %s (%v)", i, k, jsonType(g), g, jsonType(v), v)
					}
				}
				for k := range got[i] {
					if _, ok := want[i][k]; !ok && !slices.Contains(c.extra, k) {
						t.Errorf("line %d: key %q that Powertools does not write", i, k)
					}
				}
				if got[i]["level"] != want[i]["level"] || got[i]["message"] != want[i]["message"] || got[i]["service"] != want[i]["service"] {
					t.Errorf("line %d: %v, Powertools: %v", i, got[i], want[i])
				}
			}
			if c.trace != "" && got[0]["xray_trace_id"] != "1-5759e988-bd862e3fe1be46a994272793" {
				t.Errorf("xray_trace_id %v, want the Root of the trace header", got[0]["xray_trace_id"])
			}
			if loc, _ := got[0]["location"].(string); c.fixture != "typescript_inject_lambda_context_output.json" && !strings.HasPrefix(loc, "lambdalog.TestPowertoolsFixtures.func") {
				t.Errorf("location %q, want pkg.Func:line", loc)
			}
		})
	}
}

// TestLineFormat pins the forms: timestamp in UTC with milliseconds, TRACE and CRITICAL level
// names, memory as a number, no Lambda keys outside an invocation.
func TestLineFormat(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w, WithService("s"), WithLevel(LevelTrace))
	log.Log(context.Background(), LevelTrace, "t")
	log.Log(context.Background(), LevelCritical, "c")
	got := w.lines(t)
	if got[0]["level"] != "TRACE" || got[1]["level"] != "CRITICAL" {
		t.Errorf("levels %v %v", got[0]["level"], got[1]["level"])
	}
	ts, _ := got[0]["timestamp"].(string)
	if len(ts) != len("2021-12-12T21:21:08.921Z") || !strings.HasSuffix(ts, "Z") || ts[19] != '.' {
		t.Errorf("timestamp %q, want 2006-01-02T15:04:05.000Z", ts)
	}
	for _, k := range []string{"cold_start", "function_request_id", "function_name", "sampling_rate"} {
		if _, ok := got[0][k]; ok {
			t.Errorf("%q outside an invocation: %v", k, got[0])
		}
	}
}

// TestConcurrentInvocations runs in a process of its own: the cold start is the first
// invocation of a process, and other tests of this package have had theirs.
func TestConcurrentInvocations(t *testing.T) {
	if os.Getenv("LAMBDALOG_CONCURRENT_CHILD") == "1" {
		concurrentInvocations(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentInvocations$", "-test.count=1", "-test.v")
	cmd.Env = append(os.Environ(), "LAMBDALOG_CONCURRENT_CHILD=1")
	out, err := cmd.CombinedOutput()
	if err != nil || !strings.Contains(string(out), "--- PASS: TestConcurrentInvocations") {
		t.Fatalf("child process: %v\n%s", err, out)
	}
}

// concurrentInvocations: 8 invocations run at once in one process, each logging several
// lines; every line carries its own request ID, trace and correlation ID, and exactly one
// invocation's lines say cold_start true.
func concurrentInvocations(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w, WithService("s"))
	const n, perInvocation = 8, 5
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			ctx := lambdaCtx(fmt.Sprintf("req-%d", i), "arn", fmt.Sprintf("Root=1-00000000-%024d;Sampled=1", i))
			<-start
			invoke(ctx, func(ctx context.Context) {
				ctx = WithCorrelationID(ctx, fmt.Sprintf("corr-%d", i))
				for j := range perInvocation {
					log.InfoContext(ctx, "line", "i", i, "j", j)
				}
			})
		})
	}
	close(start)
	wg.Wait()
	lines := w.lines(t)
	if len(lines) != n*perInvocation {
		t.Fatalf("%d lines, want %d", len(lines), n*perInvocation)
	}
	cold := map[string]bool{}
	for _, l := range lines {
		i := int(l["i"].(float64))
		if l["function_request_id"] != fmt.Sprintf("req-%d", i) || l["correlation_id"] != fmt.Sprintf("corr-%d", i) ||
			l["xray_trace_id"] != fmt.Sprintf("1-00000000-%024d", i) {
			t.Errorf("invocation %d wrote %v", i, l)
		}
		c := l["cold_start"].(bool)
		if prev, seen := cold[l["function_request_id"].(string)]; seen && prev != c {
			t.Errorf("invocation %d changed its cold_start", i)
		}
		cold[l["function_request_id"].(string)] = c
	}
	count := 0
	for _, c := range cold {
		if c {
			count++
		}
	}
	if count != 1 {
		t.Errorf("%d invocations with cold_start true, want exactly 1: %v", count, cold)
	}
}

func TestSlogtest(t *testing.T) {
	var w lineBuf
	h := NewHandler(slog.NewJSONHandler(&w, &slog.HandlerOptions{Level: LevelTrace, ReplaceAttr: ReplaceAttr}))
	results := func() []map[string]any {
		ms := w.lines(t)
		for _, m := range ms {
			// slogtest knows slog's names; ours are Powertools'. Name them back, drop our keys.
			if v, ok := m["timestamp"]; ok {
				m[slog.TimeKey] = v
				delete(m, "timestamp")
			}
			m[slog.MessageKey] = m["message"]
			delete(m, "message")
			delete(m, keyLocation)
			delete(m, keyService)
		}
		return ms
	}
	if err := slogtest.TestHandler(h, results); err != nil {
		t.Error(err)
	}
}

// TestGroupsKeepPowertoolsKeysOnTop: after WithGroup, the record's attributes nest and the
// Powertools keys stay at the top level, where queries look for them.
func TestGroupsKeepPowertoolsKeysOnTop(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w).With("a", 1).WithGroup("g").With("b", 2)
	invoke(lambdaCtx("r1", "arn", ""), func(ctx context.Context) { log.InfoContext(ctx, "m", "c", 3) })
	l := w.lines(t)[0]
	want := map[string]any{"b": 2.0, "c": 3.0}
	if l["function_request_id"] != "r1" || l["a"] != 1.0 || !reflect.DeepEqual(l["g"], want) {
		t.Errorf("line %v", l)
	}
}

func TestLevelPrecedence(t *testing.T) {
	cases := []struct {
		name                string
		alc, pt             string
		opt                 *slog.Level
		writesDebug, writes bool // DEBUG and INFO written
	}{
		{name: "default INFO", writes: true},
		{name: "POWERTOOLS_LOG_LEVEL", pt: "DEBUG", writesDebug: true, writes: true},
		{name: "code over POWERTOOLS_LOG_LEVEL", pt: "DEBUG", opt: new(slog.LevelWarn)},
		{name: "AWS_LAMBDA_LOG_LEVEL over code", alc: "DEBUG", opt: new(slog.LevelWarn), writesDebug: true, writes: true},
		{name: "AWS_LAMBDA_LOG_LEVEL over POWERTOOLS_LOG_LEVEL", alc: "WARN", pt: "DEBUG"},
		{name: "lower case", pt: "debug", writesDebug: true, writes: true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_LOG_LEVEL", c.alc)
			t.Setenv("POWERTOOLS_LOG_LEVEL", c.pt)
			var opts []Option
			if c.opt != nil {
				opts = append(opts, WithLevel(*c.opt))
			}
			var w lineBuf
			log := newTestLogger(&w, opts...)
			log.Debug("d")
			log.Info("i")
			var got []string
			for _, l := range w.lines(t) {
				got = append(got, l["message"].(string))
			}
			var want []string
			if c.writesDebug {
				want = append(want, "d")
			}
			if c.writes {
				want = append(want, "i")
			}
			if !slices.Equal(got, want) {
				t.Errorf("wrote %v, want %v", got, want)
			}
		})
	}
}

// TestBadSettingsAreLoud: a setting that cannot be read is said once, by name, and the
// default applies.
func TestBadSettingsAreLoud(t *testing.T) {
	t.Setenv("POWERTOOLS_LOG_LEVEL", "VERBOSE")
	t.Setenv("POWERTOOLS_LOGGER_SAMPLE_RATE", "1.5")
	var w lineBuf
	log := newTestLogger(&w)
	log.Debug("d")
	lines := w.lines(t)
	if len(lines) != 2 || !strings.Contains(lines[0]["message"].(string), "POWERTOOLS_LOG_LEVEL") ||
		!strings.Contains(lines[1]["message"].(string), "POWERTOOLS_LOGGER_SAMPLE_RATE") || lines[0]["level"] != "WARN" {
		t.Errorf("lines %v", lines)
	}
}

// TestSampling: rate 1 makes every invocation log DEBUG, rate 0 none; the decision is one per
// invocation (all of its lines, or none), and sampling_rate is on every line.
func TestSampling(t *testing.T) {
	t.Setenv("POWERTOOLS_LOGGER_SAMPLE_RATE", "1")
	var w lineBuf
	log := newTestLogger(&w)
	invoke(lambdaCtx("r", "arn", ""), func(ctx context.Context) { log.DebugContext(ctx, "d") })
	log.Debug("outside an invocation: not sampled")
	lines := w.lines(t)
	if len(lines) != 1 || lines[0]["sampling_rate"] != 1.0 {
		t.Fatalf("lines %v", lines)
	}

	// Rate 0.5: each invocation writes all three DEBUG lines or none.
	var w2 lineBuf
	log2 := newTestLogger(&w2, WithSampleRate(0.5))
	const n = 200
	for i := range n {
		invoke(lambdaCtx(fmt.Sprint(i), "arn", ""), func(ctx context.Context) {
			for range 3 {
				log2.DebugContext(ctx, "d")
			}
		})
	}
	per := map[string]int{}
	for _, l := range w2.lines(t) {
		per[l["function_request_id"].(string)]++
	}
	for id, c := range per {
		if c != 3 {
			t.Errorf("invocation %s wrote %d of its 3 DEBUG lines", id, c)
		}
	}
	if len(per) < n/4 || len(per) > 3*n/4 { // binomial(200, 0.5): outside [50, 150] has p < 1e-12
		t.Errorf("%d of %d invocations sampled at rate 0.5", len(per), n)
	}
}

func TestBuffering(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w, WithBuffer(slog.LevelDebug, slog.LevelError, 3))
	msgs := func() []string {
		var m []string
		for _, l := range w.lines(t) {
			m = append(m, l["message"].(string))
		}
		w.b.Reset()
		return m
	}
	// Nothing goes wrong: the DEBUG lines are discarded when the invocation ends.
	invoke(lambdaCtx("r1", "arn", ""), func(ctx context.Context) {
		log.DebugContext(ctx, "d1")
		log.InfoContext(ctx, "i1")
	})
	if got := msgs(); !slices.Equal(got, []string{"i1"}) {
		t.Errorf("no error: wrote %v", got)
	}
	// An ERROR line writes the buffer first, oldest first, after saying how many were dropped.
	invoke(lambdaCtx("r2", "arn", ""), func(ctx context.Context) {
		for i := range 5 {
			log.DebugContext(ctx, fmt.Sprint("d", i))
		}
		log.ErrorContext(ctx, "e")
		log.DebugContext(ctx, "after")
	})
	got := msgs()
	if len(got) != 5 || !strings.Contains(got[0], "2 buffered lines were dropped") || !slices.Equal(got[1:], []string{"d2", "d3", "d4", "e"}) {
		t.Errorf("error: wrote %v", got)
	}
	// Flush writes the buffer on demand (a record failed without an ERROR line), with the
	// request ID and correlation ID the lines were logged with.
	invoke(lambdaCtx("r3", "arn", ""), func(ctx context.Context) {
		log.DebugContext(WithCorrelationID(ctx, "c3"), "d")
		if err := Flush(ctx); err != nil {
			t.Error(err)
		}
	})
	lines := w.lines(t)
	if len(lines) != 1 || lines[0]["function_request_id"] != "r3" || lines[0]["correlation_id"] != "c3" || lines[0]["level"] != "DEBUG" {
		t.Errorf("flush: %v", lines)
	}
	// Outside an invocation there is no buffer: DEBUG is below INFO and is not written.
	w.b.Reset()
	log.Debug("d")
	if err := Flush(context.Background()); err != nil || len(w.lines(t)) != 0 {
		t.Errorf("outside an invocation: %v %v", err, w.lines(t))
	}
}

// TestBufferingUnderALC: Lambda drops JSON lines below AWS_LAMBDA_LOG_LEVEL, so they are not
// even buffered.
func TestBufferingUnderALC(t *testing.T) {
	t.Setenv("AWS_LAMBDA_LOG_LEVEL", "INFO")
	var w lineBuf
	log := newTestLogger(&w, WithBuffer(slog.LevelDebug, slog.LevelError, 0))
	invoke(lambdaCtx("r", "arn", ""), func(ctx context.Context) {
		log.DebugContext(ctx, "d")
		log.ErrorContext(ctx, "e")
	})
	if l := w.lines(t); len(l) != 1 || l[0]["message"] != "e" {
		t.Errorf("lines %v", l)
	}
}

func TestCorrelationID(t *testing.T) {
	if _, ok := CorrelationID(context.Background()); ok {
		t.Error("a correlation ID in an empty context")
	}
	ctx := WithCorrelationID(context.Background(), "abc")
	if id, ok := CorrelationID(ctx); !ok || id != "abc" {
		t.Errorf("%q %v", id, ok)
	}
	long := strings.Repeat("é", MaxCorrelationIDBytes) // 2 bytes each
	id, _ := CorrelationID(WithCorrelationID(context.Background(), long))
	if len(id) > MaxCorrelationIDBytes || !strings.HasPrefix(long, id) || len(id) < MaxCorrelationIDBytes-1 {
		t.Errorf("cut to %d bytes", len(id))
	}
}

func TestWrapHandlerNested(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w, WithBuffer(slog.LevelDebug, slog.LevelError, 0))
	inner := WrapHandler(handlerFunc(func(ctx context.Context, _ []byte) ([]byte, error) {
		log.DebugContext(ctx, "held")
		return nil, nil
	}))
	outer := WrapHandler(handlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
		_, err := inner.Invoke(ctx, p) // the inner wrapper must not end the outer invocation
		log.ErrorContext(ctx, "e")
		return nil, err
	}))
	if _, err := outer.Invoke(lambdaCtx("r", "arn", ""), nil); err != nil {
		t.Fatal(err)
	}
	if l := w.lines(t); len(l) != 2 || l[0]["message"] != "held" {
		t.Errorf("lines %v", l)
	}
}

type handlerFunc func(context.Context, []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, p []byte) ([]byte, error) { return f(ctx, p) }

func FuzzTraceRoot(f *testing.F) {
	f.Add("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	f.Add("Parent=1;Root=")
	f.Fuzz(func(t *testing.T, h string) {
		r := traceRoot(h)
		if len(r) > 64 || (r != "" && !strings.Contains(h, "Root="+r)) {
			t.Errorf("traceRoot(%q) = %q", h, r)
		}
	})
}

// TestNewFormat: New writes JSON by default and slog's text format when
// AWS_LAMBDA_LOG_FORMAT says Text, with Powertools' key names either way.
func TestNewFormat(t *testing.T) {
	for _, c := range []struct{ format, prefix string }{{"", `{"timestamp":"`}, {"JSON", `{"timestamp":"`}, {"Text", "timestamp="}} {
		t.Run(c.format, func(t *testing.T) {
			t.Setenv("AWS_LAMBDA_LOG_FORMAT", c.format)
			r, w, err := os.Pipe()
			if err != nil {
				t.Fatal(err)
			}
			stdout := os.Stdout
			os.Stdout = w
			log := New(WithService("svc"))
			os.Stdout = stdout
			log.Info("hello")
			w.Close()
			out, _ := io.ReadAll(r)
			if !strings.HasPrefix(string(out), c.prefix) || !strings.Contains(string(out), "service") || !strings.Contains(string(out), "message") {
				t.Errorf("AWS_LAMBDA_LOG_FORMAT=%q wrote %q", c.format, out)
			}
		})
	}
}
