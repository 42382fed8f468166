package metrics

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// lockedBuf is a writer for concurrent invocations.
type lockedBuf struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuf) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuf) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// Eight invocations at once in one process (Lambda Managed Instances), one of whose handlers
// panics: Handle and Wrap keep the panic from aws-lambda-go, which would exit the process and
// end the seven others. The panicking one's metrics are written, it answers with an error
// that says it panicked, and one ERROR line carries the stack; the others answer.
func TestHandlePanic(t *testing.T) {
	for _, name := range []string{"Handle", "Wrap"} {
		t.Run(name, func(t *testing.T) {
			var out, logs lockedBuf
			m, err := New(WithOutput(&out), WithNamespace("N"), WithService("s"), WithColdStartMetric(false))
			if err != nil {
				t.Fatal(err)
			}
			defer func(d *slog.Logger) { slog.SetDefault(d) }(slog.Default())
			slog.SetDefault(slog.New(slog.NewJSONHandler(&logs, nil)))
			body := func(ctx context.Context, i int) (string, error) {
				if err := Add(ctx, "Processed", Count, float64(i)); err != nil {
					return "", err
				}
				if i == 3 {
					panic("boom")
				}
				return "ok", nil
			}
			call := Handle(m, body)
			if name == "Wrap" {
				h := m.Wrap(handlerFunc(func(ctx context.Context, p []byte) ([]byte, error) {
					i, _ := strconv.Atoi(string(p))
					out, err := body(ctx, i)
					return []byte(out), err
				}))
				call = func(ctx context.Context, i int) (string, error) {
					out, err := h.Invoke(ctx, []byte(strconv.Itoa(i)))
					return string(out), err
				}
			}
			errs := make([]error, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-" + strconv.Itoa(i)})
					_, errs[i] = call(ctx, i)
				})
			}
			wg.Wait()
			for i, err := range errs {
				if (i == 3) != (err != nil) || (i == 3 && !strings.Contains(err.Error(), "panicked: boom")) {
					t.Errorf("invocation %d: %v", i, err)
				}
			}
			if n := strings.Count(out.String(), `"Processed"`); n < 8 || !strings.Contains(out.String(), `"req-3"`) {
				t.Errorf("documents: %s", out.String())
			}
			lines := strings.Split(strings.TrimSpace(logs.String()), "\n")
			var l map[string]any
			if len(lines) != 1 || json.Unmarshal([]byte(lines[0]), &l) != nil || l["level"] != "ERROR" || !strings.Contains(l["stack"].(string), "goroutine") {
				t.Errorf("want one ERROR line with the stack: %q", lines)
			}
		})
	}
}
