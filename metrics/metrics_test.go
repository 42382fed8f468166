package metrics

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/internal/invocation"
)

// newTest returns a Metrics writing to a buffer, with no cold start document (the process's
// cold start belongs to whichever test starts first; TestConcurrentInvocations checks it in a
// process of its own).
func newTest(t testing.TB, opts ...Option) (*Metrics, *bytes.Buffer) {
	t.Helper()
	var buf bytes.Buffer
	m, err := New(append([]Option{WithOutput(&buf), WithColdStartMetric(false)}, opts...)...)
	if err != nil {
		t.Fatal(err)
	}
	return m, &buf
}

// docs splits the buffer into its lines, each checked against the EMF schema and
// specification.
func docs(t testing.TB, buf *bytes.Buffer) []map[string]any {
	t.Helper()
	var out []map[string]any
	for line := range bytes.Lines(buf.Bytes()) {
		out = append(out, checkEMF(t, line))
	}
	return out
}

func directive(doc map[string]any) map[string]any {
	return doc["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
}

func metricNames(doc map[string]any) []string {
	var names []string
	for _, m := range directive(doc)["Metrics"].([]any) {
		names = append(names, m.(map[string]any)["Name"].(string))
	}
	return names
}

func must(t testing.TB, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

// normalize makes a document comparable with Powertools' fixture: the timestamp zeroed, each
// dimension set sorted (a set: CloudWatch reads it in any order).
func normalize(doc map[string]any) map[string]any {
	aws := doc["_aws"].(map[string]any)
	aws["Timestamp"] = float64(0)
	for _, d := range aws["CloudWatchMetrics"].([]any) {
		for _, set := range d.(map[string]any)["Dimensions"].([]any) {
			slices.SortFunc(set.([]any), func(a, b any) int { return strings.Compare(a.(string), b.(string)) })
		}
	}
	return doc
}

// The same inputs as Powertools for Python's documented examples give the same documents
// (testdata/powertools/README.md): keys, types and values, the timestamp aside.
func TestPowertoolsFixtures(t *testing.T) {
	cases := []struct {
		file string
		opts []Option
		add  func(ctx context.Context) error
		cold bool
	}{
		{"log_metrics_output.json", []Option{WithService("booking")}, func(ctx context.Context) error {
			return Add(ctx, "SuccessfulBooking", Count, 1)
		}, false},
		{"add_metadata_output.json", []Option{WithService("booking")}, func(ctx context.Context) error {
			return errors.Join(Add(ctx, "SuccessfulBooking", Count, 1),
				AddMetadata(ctx, "booking_id", "00347014-341d-4b8e-8421-a89d3d588ab3"))
		}, false},
		{"add_multi_value_metrics_output.json", []Option{WithService("booking")}, func(ctx context.Context) error {
			return errors.Join(AddDimension(ctx, "environment", "dev"),
				Add(ctx, "TurbineReads", Count, 1), Add(ctx, "TurbineReads", Count, 8))
		}, false},
		{"add_dimensions_output.json", nil, func(ctx context.Context) error {
			return errors.Join(AddDimension(ctx, "service", "booking"),
				AddDimensionSet(ctx, map[string]string{"environment": "prod", "region": "us-east-1"}),
				AddDimensionSet(ctx, map[string]string{"environment": "prod"}),
				Add(ctx, "SuccessfulBooking", Count, 1))
		}, false},
		{"capture_cold_start_metric_output.json", []Option{WithService("booking")}, func(ctx context.Context) error {
			return nil
		}, true},
	}
	for _, c := range cases {
		t.Run(c.file, func(t *testing.T) {
			m, buf := newTest(t, append([]Option{WithNamespace("ServerlessAirline")}, c.opts...)...)
			// A recorder made as Start makes it, with the Info a cold start in function "test"
			// would carry (Start itself is checked in TestConcurrentInvocations).
			r := &recorder{m: m, info: invocation.Info{FunctionName: "test", ColdStart: c.cold}, coldPending: c.cold}
			ctx := context.WithValue(context.Background(), recorderKey{}, r)
			must(t, c.add(ctx))
			must(t, Flush(ctx))
			got := docs(t, buf)
			if len(got) != 1 {
				t.Fatalf("%d documents, want 1:\n%s", len(got), buf)
			}
			b, err := os.ReadFile("testdata/powertools/" + c.file)
			must(t, err)
			var want map[string]any
			must(t, json.Unmarshal(b, &want))
			checkEMF(t, append(mustMarshal(t, want), '\n'))
			if g, w := normalize(got[0]), normalize(want); !reflect.DeepEqual(g, w) {
				t.Errorf("got  %s\nwant %s", mustMarshal(t, g), mustMarshal(t, w))
			}
		})
	}
}

func mustMarshal(t testing.TB, v any) []byte {
	t.Helper()
	b, err := json.Marshal(v)
	must(t, err)
	return b
}

// TestConcurrentInvocations runs 8 invocations at once in a fresh process (so that its first
// invocation is the execution environment's cold start) through Handle, writing to standard
// output: each document carries its own request ID and values, and exactly one ColdStart
// document is written, with function_name and service, for one of them.
func TestConcurrentInvocations(t *testing.T) {
	if os.Getenv("METRICS_TEST_CHILD") == "1" {
		concurrentChild()
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentInvocations$", "-test.count=1")
	cmd.Env = append(os.Environ(), "METRICS_TEST_CHILD=1", "AWS_LAMBDA_FUNCTION_NAME=orders-fn",
		EnvNamespace+"=Orders", EnvService+"=checkout")
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	seen := map[string]int{}
	cold := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if !bytes.HasPrefix(line, []byte(`{`)) {
			continue // the test framework's own lines
		}
		doc := checkEMF(t, append(slices.Clone(line), '\n'))
		id, _ := doc[RequestIDKey].(string)
		if !strings.HasPrefix(id, "req-") {
			t.Errorf("document without its request ID: %s", line)
			continue
		}
		if slices.Contains(metricNames(doc), "ColdStart") {
			cold++
			if doc["function_name"] != "orders-fn" || doc["service"] != "checkout" || len(metricNames(doc)) != 1 {
				t.Errorf("ColdStart document: %s", line)
			}
			continue
		}
		seen[id]++
		i, _ := strconv.Atoi(strings.TrimPrefix(id, "req-"))
		if v := doc["Processed"].([]any); len(v) != 1 || v[0] != float64(i) {
			t.Errorf("%s carries Processed %v, want [%d]: another invocation's value", id, v, i)
		}
		if doc["worker"] != "w"+strconv.Itoa(i) || doc["service"] != "checkout" {
			t.Errorf("%s carries another invocation's dimensions: %s", id, line)
		}
	}
	if cold != 1 {
		t.Errorf("%d ColdStart documents from 8 concurrent first invocations, want 1", cold)
	}
	for i := range 8 {
		if n := seen["req-"+strconv.Itoa(i)]; n != 1 {
			t.Errorf("req-%d: %d documents, want 1", i, n)
		}
	}
}

func concurrentChild() {
	m, err := New() // namespace and service from the environment
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(2)
	}
	var started sync.WaitGroup
	started.Add(8)
	h := Handle(m, func(ctx context.Context, i int) (string, error) {
		started.Done()
		started.Wait() // all 8 hold their recorders at once
		if err := AddDimension(ctx, "worker", "w"+strconv.Itoa(i)); err != nil {
			return "", err
		}
		return "", Add(ctx, "Processed", Count, float64(i))
	})
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range 8 {
		wg.Go(func() {
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-" + strconv.Itoa(i)})
			_, errs[i] = h(ctx, i)
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(3)
	}
}

// A flush of more than 100 metrics is split into documents of at most 100 (EMF's MetricDirective
// limit), each with the dimensions and metadata, each metric once.
func TestSplit100Metrics(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"), WithService("s"))
	ctx := m.Start(context.Background())
	must(t, AddMetadata(ctx, "batch", "b1"))
	for i := range 250 {
		must(t, Add(ctx, "m"+strconv.Itoa(i), Count, float64(i)))
	}
	must(t, Flush(ctx))
	ds := docs(t, buf)
	if len(ds) != 3 {
		t.Fatalf("%d documents, want 3", len(ds))
	}
	var all []string
	for i, d := range ds {
		names := metricNames(d)
		if want := []int{100, 100, 50}[i]; len(names) != want {
			t.Errorf("document %d: %d metrics, want %d", i, len(names), want)
		}
		if d["service"] != "s" || d["batch"] != "b1" {
			t.Errorf("document %d lacks the dimension or metadata: %v", i, d)
		}
		all = append(all, names...)
	}
	for i, n := range all {
		if n != "m"+strconv.Itoa(i) {
			t.Fatalf("metric %d is %s: order or count lost", i, n)
		}
	}
}

// A metric of more than 100 values goes on in the next documents (EMF: "Numeric array metric
// targets MUST NOT have more than 100 members"), its values in the order added.
func TestSplit100Values(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"))
	ctx := m.Start(context.Background())
	for i := range 250 {
		must(t, Add(ctx, "Latency", Milliseconds, float64(i)))
	}
	must(t, Add(ctx, "Once", Count, 7))
	must(t, Flush(ctx))
	ds := docs(t, buf)
	if len(ds) != 3 {
		t.Fatalf("%d documents, want 3", len(ds))
	}
	var values []float64
	for i, d := range ds {
		v := d["Latency"].([]any)
		if want := []int{100, 100, 50}[i]; len(v) != want {
			t.Errorf("document %d: %d values, want %d", i, len(v), want)
		}
		for _, x := range v {
			values = append(values, x.(float64))
		}
		if _, ok := d["Once"]; ok != (i == 0) {
			t.Errorf("document %d: Once present %v", i, ok)
		}
	}
	for i, v := range values {
		if v != float64(i) {
			t.Fatalf("value %d is %v", i, v)
		}
	}
}

// 30 dimensions in a set are written; a 31st is refused at the call (a set cannot be split
// without changing the metrics it names).
func TestDimensions30(t *testing.T) {
	defaults := map[string]string{}
	for i := range 28 {
		defaults["d"+strconv.Itoa(i)] = "v"
	}
	m, buf := newTest(t, WithNamespace("N"), WithService("s"), WithDefaultDimensions(defaults))
	ctx := m.Start(context.Background())
	must(t, AddDimension(ctx, "thirtieth", "v"))
	err := AddDimension(ctx, "thirty-first", "v")
	var ie *InvalidError
	if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
		t.Fatalf("31st dimension: %v", err)
	}
	big := map[string]string{}
	for i := range 31 {
		big["x"+strconv.Itoa(i)] = "v"
	}
	if err := AddDimensionSet(ctx, big); !errors.Is(err, ErrInvalid) {
		t.Errorf("a set of 31 with the defaults: %v", err)
	}
	if err := AddDimensionSet(ctx, map[string]string{"x": "v", "y": "v"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("a set of 32 with the service and defaults: %v", err)
	}
	must(t, AddDimensionSet(ctx, map[string]string{"x": "v"})) // 29 + 1
	must(t, Add(ctx, "M", Count, 1))
	must(t, Flush(ctx))
	ds := docs(t, buf)
	sets := directive(ds[0])["Dimensions"].([]any)
	if len(sets) != 2 || len(sets[0].([]any)) != 30 || len(sets[1].([]any)) != 30 {
		t.Errorf("dimension sets %v", sets)
	}
	big2 := map[string]string{}
	for i := range 30 {
		big2["x"+strconv.Itoa(i)] = "v"
	}
	if _, err := New(WithNamespace("N"), WithService("s"), WithDefaultDimensions(big2)); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("30 default dimensions with the service: %v", err)
	}
}

// Whatever CloudWatch would refuse is an error at the call, and nothing is written.
func TestInvalidAdd(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"))
	ctx := m.Start(context.Background())
	must(t, AddDimension(ctx, "d", "v"))
	must(t, AddMetadata(ctx, "meta", 1))
	for name, err := range map[string]error{
		"unit":            Add(ctx, "M", Unit("Counts"), 1),
		"empty unit":      Add(ctx, "M", "", 1),
		"resolution 30":   AddWithResolution(ctx, "M", Count, 30, 1),
		"empty name":      Add(ctx, "", Count, 1),
		"space name":      Add(ctx, "  ", Count, 1),
		"control":         Add(ctx, "a\nb", Count, 1),
		"long name":       Add(ctx, strings.Repeat("n", 256), Count, 1),
		"bad utf8":        Add(ctx, "\xff", Count, 1),
		"NaN":             Add(ctx, "M", Count, math.NaN()),
		"Inf":             Add(ctx, "M", Count, math.Inf(-1)),
		"2^361":           Add(ctx, "M", Count, 0x1p361),
		"dimension name":  Add(ctx, "d", Count, 1),
		"metadata name":   Add(ctx, "meta", Count, 1),
		"_aws":            Add(ctx, "_aws", Count, 1),
		"dim empty":       AddDimension(ctx, "e", ""),
		"dim non-ascii":   AddDimension(ctx, "é", "v"),
		"dim colon":       AddDimension(ctx, ":x", "v"),
		"dim other value": AddDimension(ctx, "d", "w"),
		"dim long value":  AddDimension(ctx, "l", strings.Repeat("v", 1025)),
		"set conflict":    AddDimensionSet(ctx, map[string]string{"d": "w"}),
		"meta dup":        AddMetadata(ctx, "meta", 2),
		"meta dim":        AddMetadata(ctx, "d", 2),
		"meta func":       AddMetadata(ctx, "f", func() {}),
		"meta big":        AddMetadata(ctx, "big", strings.Repeat("x", 65<<10)),
	} {
		var ie *InvalidError
		if !errors.As(err, &ie) || !errors.Is(err, ErrInvalid) {
			t.Errorf("%s: %v, want an *InvalidError", name, err)
		}
	}
	must(t, Add(ctx, "M", Count, 1))
	if err := Add(ctx, "M", Milliseconds, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("another unit for M: %v", err)
	}
	if err := AddWithResolution(ctx, "M", Count, High, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("another resolution for M: %v", err)
	}
	if err := AddDimension(ctx, "M", "v"); !errors.Is(err, ErrInvalid) {
		t.Errorf("a dimension named as a metric: %v", err)
	}
	must(t, Flush(ctx))
	ds := docs(t, buf)
	if len(ds) != 1 || !reflect.DeepEqual(metricNames(ds[0]), []string{"M"}) || len(ds[0]["M"].([]any)) != 1 {
		t.Errorf("refused values were written: %s", buf)
	}
}

func TestNotStarted(t *testing.T) {
	ctx := context.Background()
	for _, err := range []error{Add(ctx, "M", Count, 1), AddDimension(ctx, "d", "v"),
		AddDimensionSet(ctx, nil), AddMetadata(ctx, "k", 1), Flush(ctx)} {
		if !errors.Is(err, ErrNotStarted) {
			t.Errorf("%v, want ErrNotStarted", err)
		}
	}
}

func TestHighResolution(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"))
	ctx := m.Start(context.Background())
	must(t, AddWithResolution(ctx, "Fast", Milliseconds, High, 1.5))
	must(t, AddWithResolution(ctx, "Slow", Milliseconds, Standard, 2))
	must(t, Flush(ctx))
	defs := directive(docs(t, buf)[0])["Metrics"].([]any)
	if r := defs[0].(map[string]any)["StorageResolution"]; r != float64(1) {
		t.Errorf("High: StorageResolution %v, want 1", r)
	}
	if _, ok := defs[1].(map[string]any)["StorageResolution"]; ok {
		t.Error("Standard: StorageResolution written; Powertools leaves 60, EMF's default, out")
	}
}

func TestOptions(t *testing.T) {
	for name, opts := range map[string][]Option{
		"no namespace": nil,
		"empty":        {WithNamespace("")},
		"AWS/":         {WithNamespace("AWS/Lambda")},
		"long":         {WithNamespace(strings.Repeat("n", 256))},
		"nil writer":   {WithNamespace("N"), WithOutput(nil)},
		"service":      {WithNamespace("N"), WithService(" ")},
		"default dim":  {WithNamespace("N"), WithDefaultDimensions(map[string]string{"k": ""})},
		"service dim":  {WithNamespace("N"), WithService("s"), WithDefaultDimensions(map[string]string{"service": "t"})},
	} {
		t.Run(name, func(t *testing.T) {
			t.Setenv(EnvNamespace, "")
			_, err := New(opts...)
			var oe *toolkit.OptionError
			if !errors.As(err, &oe) || !errors.Is(err, toolkit.ErrInvalidOption) || oe.Package != "metrics" {
				t.Errorf("%v, want a metrics *toolkit.OptionError", err)
			}
		})
	}
	t.Run("bad env", func(t *testing.T) {
		t.Setenv(EnvNamespace, "AWS/x")
		var oe *toolkit.OptionError
		if _, err := New(); !errors.As(err, &oe) || oe.Option != EnvNamespace {
			t.Errorf("%v, want an OptionError naming %s", err, EnvNamespace)
		}
		t.Setenv(EnvNamespace, "N")
		t.Setenv(EnvDisabled, "maybe")
		if _, err := New(); !errors.As(err, &oe) || oe.Option != EnvDisabled {
			t.Errorf("%v, want an OptionError naming %s", err, EnvDisabled)
		}
	})
}

// Options win over the environment; the environment fills what options leave (Powertools'
// precedence: https://docs.powertools.aws.dev/lambda/python/latest/core/metrics/#getting-started).
func TestEnvironmentPrecedence(t *testing.T) {
	t.Setenv(EnvNamespace, "EnvNS")
	t.Setenv(EnvService, "env-service")
	for _, c := range []struct {
		opts        []Option
		ns, service string
	}{
		{nil, "EnvNS", "env-service"},
		{[]Option{WithNamespace("OptNS")}, "OptNS", "env-service"},
		{[]Option{WithService("opt-service")}, "EnvNS", "opt-service"},
	} {
		m, buf := newTest(t, c.opts...)
		ctx := m.Start(context.Background())
		must(t, Add(ctx, "M", Count, 1))
		must(t, Flush(ctx))
		d := docs(t, buf)[0]
		if directive(d)["Namespace"] != c.ns || d["service"] != c.service {
			t.Errorf("%d options: namespace %v service %v, want %s %s", len(c.opts), directive(d)["Namespace"], d["service"], c.ns, c.service)
		}
	}
}

// POWERTOOLS_METRICS_DISABLED stops the writing, not the checking; POWERTOOLS_DEV disables
// when it is unset, as Powertools for Python's is_metrics_disabled.
func TestDisabled(t *testing.T) {
	for _, c := range []struct {
		disabled, dev string
		written       bool
	}{
		{"true", "", false},
		{"1", "", false},
		{"", "true", false},
		{"false", "true", true},
		{"", "", true},
	} {
		t.Run(c.disabled+"/"+c.dev, func(t *testing.T) {
			if c.disabled != "" {
				t.Setenv(EnvDisabled, c.disabled)
			} else {
				os.Unsetenv(EnvDisabled)
			}
			if c.dev != "" {
				t.Setenv(envDev, c.dev)
			} else {
				os.Unsetenv(envDev)
			}
			m, buf := newTest(t, WithNamespace("N"))
			ctx := m.Start(context.Background())
			must(t, Add(ctx, "M", Count, 1))
			if err := Add(ctx, "M", "Counts", 1); !errors.Is(err, ErrInvalid) {
				t.Errorf("disabled metrics stopped checking: %v", err)
			}
			must(t, Flush(ctx))
			if (buf.Len() > 0) != c.written {
				t.Errorf("written %q, want written %v", buf, c.written)
			}
		})
	}
}

type failingWriter struct{ err error }

func (w failingWriter) Write([]byte) (int, error) { return 0, w.err }

// A writer that fails: Flush returns its error, and so does the wrapped handler, joined to the
// handler's own.
func TestWriterFails(t *testing.T) {
	boom := errors.New("disk full")
	m, err := New(WithNamespace("N"), WithOutput(failingWriter{boom}), WithColdStartMetric(false))
	must(t, err)
	ctx := m.Start(context.Background())
	must(t, Add(ctx, "M", Count, 1))
	if err := Flush(ctx); !errors.Is(err, boom) {
		t.Fatalf("Flush: %v, want the writer's error", err)
	}
	handlerErr := errors.New("handler failed")
	for _, herr := range []error{nil, handlerErr} {
		h := Handle(m, func(ctx context.Context, _ struct{}) (int, error) {
			return 1, errors.Join(herr, Add(ctx, "M", Count, 1))
		})
		_, err := h(context.Background(), struct{}{})
		if !errors.Is(err, boom) || (herr != nil && !errors.Is(err, herr)) {
			t.Errorf("handler error %v: Handle returned %v", herr, err)
		}
	}
	w := m.Wrap(handlerFunc(func(ctx context.Context, _ []byte) ([]byte, error) { return nil, Add(ctx, "M", Count, 1) }))
	if _, err := w.Invoke(context.Background(), nil); !errors.Is(err, boom) {
		t.Errorf("Wrap: %v, want the writer's error", err)
	}
}

type handlerFunc func(context.Context, []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, b []byte) ([]byte, error) { return f(ctx, b) }

// Flush forgets what it wrote and what the invocation added, not the defaults; a flush of
// nothing writes nothing.
func TestFlushForgets(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"), WithDefaultDimensions(map[string]string{"env": "prod"}))
	ctx := m.Start(context.Background())
	must(t, AddDimension(ctx, "d", "v"))
	must(t, Add(ctx, "M", Count, 1))
	must(t, Flush(ctx))
	must(t, Add(ctx, "M", Count, 2))
	must(t, Flush(ctx))
	must(t, Flush(ctx))
	ds := docs(t, buf)
	if len(ds) != 2 {
		t.Fatalf("%d documents, want 2", len(ds))
	}
	if _, ok := ds[1]["d"]; ok || ds[1]["env"] != "prod" || len(ds[1]["M"].([]any)) != 1 {
		t.Errorf("second document: %v", ds[1])
	}
	if Start := m.Start(ctx); Start != ctx {
		t.Error("a nested Start replaced the recorder")
	}
}

// Any name and value either is refused at the call or makes a valid document.
func FuzzDocument(f *testing.F) {
	f.Add("Latency", "env", "prod", "meta", 1.5)
	f.Add("", "", "", "", math.NaN())
	f.Add("a\"b\\<>&", "é", "\x00", "_aws", 1e300)
	f.Add(strings.Repeat("x", 300), ":d", "v", "k", math.Copysign(0, -1))
	f.Fuzz(func(t *testing.T, name, dim, value, key string, v float64) {
		m, buf := newTest(t, WithNamespace("N"), WithService("s"))
		ctx := m.Start(context.Background())
		_ = AddDimension(ctx, dim, value)
		_ = AddMetadata(ctx, key, value)
		_ = Add(ctx, name, Count, v)
		_ = AddDimensionSet(ctx, map[string]string{dim + "2": value})
		if err := Flush(ctx); err != nil {
			t.Fatal(err)
		}
		docs(t, buf)
	})
}

// Long names and full arrays are split by size too, so that no document passes CloudWatch
// Logs' 256 KiB event (Lambda would cut the line, and EMF drop it).
func TestSplitBytes(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"))
	ctx := m.Start(context.Background())
	for i := range 100 {
		name := fmt.Sprintf("%03d%s", i, strings.Repeat("n", 252))
		for j := range 100 {
			must(t, Add(ctx, name, Milliseconds, 123456.789012345+float64(j)))
		}
	}
	must(t, Flush(ctx))
	n, metrics := 0, 0
	for line := range bytes.Lines(buf.Bytes()) {
		if len(line) > 256<<10 {
			t.Errorf("document of %d bytes", len(line))
		}
		metrics += len(metricNames(checkEMF(t, line)))
		n++
	}
	if n < 2 || metrics != 100 {
		t.Errorf("%d documents of %d metrics in all, want several of 100", n, metrics)
	}
}

// An invocation holds at most 100,000 values between flushes and 30 dimension sets: a loop
// cannot grow the process without bound.
func TestCaps(t *testing.T) {
	m, buf := newTest(t, WithNamespace("N"))
	ctx := m.Start(context.Background())
	for i := range maxHeldValues {
		must(t, Add(ctx, "M"+strconv.Itoa(i%500), Count, 1))
	}
	if err := Add(ctx, "M0", Count, 1); !errors.Is(err, ErrInvalid) {
		t.Errorf("value past the cap: %v", err)
	}
	for i := range maxDimensionSets {
		must(t, AddDimensionSet(ctx, map[string]string{"set": "v", "n" + strconv.Itoa(i): "v"}))
	}
	if err := AddDimensionSet(ctx, map[string]string{"x": "v"}); !errors.Is(err, ErrInvalid) {
		t.Errorf("dimension set past the cap: %v", err)
	}
	must(t, Flush(ctx))
	total := 0
	for _, d := range docs(t, buf) {
		for _, name := range metricNames(d) {
			total += len(d[name].([]any))
		}
	}
	if total != maxHeldValues {
		t.Errorf("%d values written, want %d", total, maxHeldValues)
	}
	must(t, Add(ctx, "M0", Count, 1)) // the flush emptied the recorder
}

// POWERTOOLS_METRICS_FUNCTION_NAME names the ColdStart metric's function instead of Lambda's
// name; with neither, the document has no function_name dimension (Powertools for
// TypeScript's MetricsOptions.functionName: "If none of the above are available, the ColdStart
// metric will not include a function name dimension").
func TestColdStartFunctionName(t *testing.T) {
	for _, c := range []struct{ env, lambda, want string }{
		{"custom", "from-lambda", "custom"},
		{"", "from-lambda", "from-lambda"},
		{"", "", ""},
	} {
		t.Setenv(EnvFunctionName, c.env)
		m, buf := newTest(t, WithNamespace("N"))
		r := &recorder{m: m, info: invocation.Info{FunctionName: c.lambda, ColdStart: true}, coldPending: true}
		ctx := context.WithValue(context.Background(), recorderKey{}, r)
		must(t, Flush(ctx))
		d := docs(t, buf)
		if len(d) != 1 || !reflect.DeepEqual(metricNames(d[0]), []string{"ColdStart"}) {
			t.Fatalf("%s", buf)
		}
		if got, _ := d[0]["function_name"].(string); got != c.want {
			t.Errorf("env %q lambda %q: function_name %q, want %q", c.env, c.lambda, got, c.want)
		}
	}
	t.Setenv(EnvFunctionName, "\x01")
	if _, err := New(WithNamespace("N")); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("a control character in %s: %v", EnvFunctionName, err)
	}
}
