package lambdalog

import (
	"context"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambda"
)

// payloadHandler is a lambda.Handler of a function.
type payloadHandler func(ctx context.Context, payload []byte) ([]byte, error)

func (f payloadHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	return f(ctx, payload)
}

var _ lambda.Handler = payloadHandler(nil)

// Eight invocations at once in one process (Lambda Managed Instances), one of whose
// handlers panics: Wrap and WrapHandler keep the panic from aws-lambda-go, which would exit
// the process and end the seven others. The panicking one answers with an error that says it
// panicked, after its buffered lines and one ERROR line with the stack; the others answer.
func TestWrapPanic(t *testing.T) {
	for _, name := range []string{"Wrap", "WrapHandler"} {
		t.Run(name, func(t *testing.T) {
			var w lineBuf
			log := newTestLogger(&w, WithBuffer(slog.LevelDebug, slog.LevelError, 10))
			defer func(d *slog.Logger) { slog.SetDefault(d) }(slog.Default())
			slog.SetDefault(log)
			body := func(ctx context.Context, in string) (string, error) {
				log.DebugContext(ctx, "before "+in)
				if in == "3" {
					panic("boom " + in)
				}
				return "ok " + in, nil
			}
			call := Wrap(body)
			if name == "WrapHandler" {
				h := WrapHandler(payloadHandler(func(ctx context.Context, p []byte) ([]byte, error) {
					out, err := body(ctx, string(p))
					return []byte(out), err
				}))
				call = func(ctx context.Context, in string) (string, error) {
					out, err := h.Invoke(ctx, []byte(in))
					return string(out), err
				}
			}
			outs, errs := make([]string, 8), make([]error, 8)
			var wg sync.WaitGroup
			for i := range 8 {
				wg.Go(func() {
					outs[i], errs[i] = call(lambdaCtx(fmt.Sprint("r", i), "arn", ""), fmt.Sprint(i))
				})
			}
			wg.Wait()
			for i := range 8 {
				if i == 3 {
					if errs[i] == nil || !strings.Contains(errs[i].Error(), "panicked: boom 3") {
						t.Errorf("invocation 3: %q %v, want an error that says it panicked", outs[i], errs[i])
					}
					continue
				}
				if errs[i] != nil || outs[i] != fmt.Sprint("ok ", i) {
					t.Errorf("invocation %d: %q %v", i, outs[i], errs[i])
				}
			}
			var mine []map[string]any
			for _, l := range w.lines(t) {
				if l["function_request_id"] == "r3" {
					mine = append(mine, l)
				}
			}
			if len(mine) != 2 || mine[0]["message"] != "before 3" || mine[1]["message"] != "handler panicked" || mine[1]["level"] != "ERROR" ||
				!strings.Contains(fmt.Sprint(mine[1]["stack"]), "goroutine") {
				t.Errorf("the panicking invocation's lines: %v", mine)
			}
			if n := len(w.lines(t)); n != 2 {
				t.Errorf("%d lines, want the panicking invocation's 2 (the others' DEBUG lines are discarded)", n)
			}
		})
	}
}

// What a goroutine an invocation left running logs after the invocation answered is not held
// in its buffer, which nothing would flush (and which would grow).
func TestBufferClosedAfterAnswer(t *testing.T) {
	var w lineBuf
	log := newTestLogger(&w, WithBuffer(slog.LevelDebug, slog.LevelError, 10))
	var late context.Context
	invoke(lambdaCtx("r1", "arn", ""), func(ctx context.Context) { late = ctx })
	log.DebugContext(late, "late")
	st := stateFrom(late)
	st.buf.mu.Lock()
	n := len(st.buf.lines)
	st.buf.mu.Unlock()
	if n != 0 {
		t.Errorf("%d lines held after the invocation answered", n)
	}
}
