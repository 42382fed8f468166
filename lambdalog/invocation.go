package lambdalog

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/kafkalambda/toolkit/internal/correlation"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/recovered"
)

// state is what the logger keeps of one invocation: Lambda's description of it, the sampling
// draw, and its buffer. Wrap makes one per invocation and puts it in the context.
type state struct {
	info  invocation.Info
	trace string  // the Root of info.TraceID
	draw  float64 // uniform in [0, 1): sampled by a Handler of rate r when draw < r
	buf   buffer
}

type stateKey struct{}

func stateFrom(ctx context.Context) *state {
	st, _ := ctx.Value(stateKey{}).(*state)
	return st
}

// begin returns ctx carrying the invocation's state; a ctx that has one (nested wrappers)
// keeps it, and only the outermost wrapper ends it.
func begin(ctx context.Context) (context.Context, *state, bool) {
	if st := stateFrom(ctx); st != nil {
		return ctx, st, false
	}
	ctx, in := invocation.Start(ctx)
	st := &state{info: in, trace: traceRoot(in.TraceID), draw: rand.Float64()}
	return context.WithValue(ctx, stateKey{}, st), st, true
}

// Wrap returns fn with each invocation's values (request ID, cold start, trace ID, the sampling
// draw, the log buffer) put in its context, where the Handler reads them. The buffer is
// discarded when fn returns. Use it around the function given to lambda.Start:
//
//	lambda.Start(lambdalog.Wrap(handle))
//
// A panic of fn goes no further: the buffered lines are written, then one line at level Error
// with the panic's value and stack (its size bounded) through slog.Default(), and the
// invocation answers with an error that says the handler panicked, so that the process, and
// the other invocations it serves on Lambda Managed Instances, go on.
func Wrap[TIn, TOut any](fn func(context.Context, TIn) (TOut, error)) func(context.Context, TIn) (TOut, error) {
	return func(ctx context.Context, in TIn) (out TOut, err error) {
		ctx, st, outer := begin(ctx)
		defer func() {
			if p := recover(); p != nil {
				var zero TOut
				out, err = zero, panicked(ctx, st, p)
			}
			if outer {
				st.buf.discard()
			}
		}()
		return fn(ctx, in)
	}
}

// WrapHandler is Wrap for a lambda.Handler (batch.KafkaHandler, fanout.WorkerHandler, ...):
//
//	lambda.Start(lambdalog.WrapHandler(batch.KafkaHandler(process)))
func WrapHandler(h lambda.Handler) lambda.Handler { return wrapped{h} }

type wrapped struct{ h lambda.Handler }

func (w wrapped) Invoke(ctx context.Context, payload []byte) (out []byte, err error) {
	ctx, st, outer := begin(ctx)
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, panicked(ctx, st, p)
		}
		if outer {
			st.buf.discard()
		}
	}()
	return w.h.Invoke(ctx, payload)
}

// panicked is the error of a handler that panicked with p: the invocation's buffered lines
// are written, then one line at level Error with the panic's value and stack, through
// slog.Default(). The panic goes no further: aws-lambda-go would exit the process after
// reporting it, ending every other invocation it serves on Lambda Managed Instances (AWS:
// "Understanding the Lambda Managed Instances execution environment"). Call it in the
// deferred function that recovered, so that the stack is the panic's.
func panicked(ctx context.Context, st *state, p any) error {
	e := recovered.New("lambdalog: the handler", p)
	_ = recovered.CallErr("lambdalog: a buffered line's handler", func() error { return st.buf.flush(ctx) })
	slog.Default().LogAttrs(ctx, slog.LevelError, "handler panicked", slog.String("error", e.Error()), slog.String("stack", string(e.Stack)))
	return e
}

// Flush writes the lines held in the buffer of ctx's invocation, oldest first, preceded by one
// WARN line saying how many were dropped if the cap was reached. Call it when a record failed
// without an ERROR line being written. Outside an invocation (no Wrap) it does nothing.
func Flush(ctx context.Context) error {
	if st := stateFrom(ctx); st != nil {
		return st.buf.flush(ctx)
	}
	return nil
}

// buffer holds one invocation's lines: a ring of at most the cap given to add.
type buffer struct {
	mu      sync.Mutex
	lines   []held
	head    int // index of the oldest line when the ring is full
	dropped int
	closed  bool // the invocation has answered: a line logged since (an abandoned goroutine's) is not held
}

type held struct {
	next slog.Handler
	ctx  context.Context
	r    slog.Record
}

func (b *buffer) add(next slog.Handler, ctx context.Context, r slog.Record, limit int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return
	}
	if len(b.lines) < limit {
		b.lines = append(b.lines, held{next, ctx, r})
		return
	}
	b.lines[b.head] = held{next, ctx, r} // the oldest goes
	b.head = (b.head + 1) % len(b.lines)
	b.dropped++
}

func (b *buffer) take() ([]held, int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	lines := append(b.lines[b.head:len(b.lines):len(b.lines)], b.lines[:b.head]...)
	dropped := b.dropped
	b.lines, b.head, b.dropped = nil, 0, 0
	return lines, dropped
}

// discard drops the held lines and closes the buffer: the invocation has answered, and what a
// goroutine it left running logs below the buffer's level later is not held (nothing would
// flush it).
func (b *buffer) discard() {
	b.take()
	b.mu.Lock()
	b.closed = true
	b.mu.Unlock()
}

// flush writes the held lines through the handler each was logged by. The line on drops names
// a count, never a record's content.
func (b *buffer) flush(ctx context.Context) error {
	lines, dropped := b.take()
	var first error
	if dropped > 0 && len(lines) > 0 {
		r := slog.NewRecord(time.Now(), slog.LevelWarn,
			fmt.Sprintf("lambdalog: %d buffered lines were dropped, the oldest first (buffer cap %d lines)", dropped, len(lines)), 0)
		r.AddAttrs(slog.Int("dropped_lines", dropped))
		first = lines[0].next.Handle(ctx, r)
	}
	for _, l := range lines {
		if err := l.next.Handle(l.ctx, l.r); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// MaxCorrelationIDBytes caps a correlation ID: a longer one is cut at a character boundary, so
// that a header a producer filled cannot make every line of a record large.
const MaxCorrelationIDBytes = 256

// The bound is internal/correlation's, which cuts the IDs (batch sets them through it): the
// build fails unless the two constants are equal (the index is 0 only then).
var _ = [1]struct{}{}[MaxCorrelationIDBytes-correlation.MaxBytes]

// WithCorrelationID returns ctx whose lines carry id as "correlation_id" (Powertools' key).
// Package batch sets it per record (batch.WithCorrelationIDFrom) through the same key.
func WithCorrelationID(ctx context.Context, id string) context.Context {
	return correlation.With(ctx, id)
}

// CorrelationID returns the correlation ID WithCorrelationID put in ctx.
func CorrelationID(ctx context.Context) (string, bool) {
	return correlation.From(ctx)
}
