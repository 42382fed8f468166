// Package lmitest runs a Lambda handler's invocations at once in one process, as aws-lambda-go
// runs them on Lambda Managed Instances (AWS_LAMBDA_MAX_CONCURRENCY > 1), for tests of state
// shared between invocations.
//
// aws-lambda-go v1.55.1 starts AWS_LAMBDA_MAX_CONCURRENCY goroutines, each looping on the
// Runtime API's next invocation (lambda/invoke_loop_gte_go122.go), and gives each invocation a
// context of its own (lambda/invoke_loop.go, handleInvoke): a deadline from the
// Lambda-Runtime-Deadline-Ms header, a lambdacontext.LambdaContext with the request ID and
// the function ARN, and the trace header under the string key "x-amzn-trace-id"; it sets
// _X_AMZN_TRACE_ID only when the concurrency is 1 (aws-lambda-go #602). [Context] makes that
// context, and [Run] calls a handler that way from concurrency goroutines. What the Runtime
// API adds (HTTP, the JSON of the response) is not the subject: the handler is called
// directly, with the payload's bytes, and a panic in it ends the test binary as it ends the
// function's process. This package's TestLMIRuntimeAPI runs a function under aws-lambda-go's
// own loop, against a Runtime API the test serves, as the check that Run does what the runtime
// does.
//
// The package's tests are the library's suite under many invocations at once: Kafka batches
// each delivered twice at once with idempotency on dynalite and a failure sink on
// local-aws-sqs, fan-out through a FIFO queue, ProduceOnce on kfake, lambdalog and metrics per
// invocation; and TestProcessWideValues, the list of the library's package-level variables,
// each with why one value for the whole process is right. AWS's page on the environment: "Understanding the Lambda Managed
// Instances execution environment"
// (https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-execution-environment.html).
package lmitest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Handler is aws-lambda-go's lambda.Handler: batch.KafkaHandler, fanout.WorkerHandler and
// the wrappers of lambdalog and metrics are Handlers.
type Handler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// FunctionARN is the function ARN each invocation is given.
const FunctionARN = "arn:aws:lambda:eu-west-1:123456789012:function:lmi:1"

// Invocation is one invocation as the Runtime API hands it out.
type Invocation struct {
	RequestID string        // Lambda-Runtime-Aws-Request-Id; Run gives "req-INDEX" when empty
	TraceID   string        // Lambda-Runtime-Trace-Id; Run gives TraceHeader(INDEX) when empty
	Payload   []byte        // the event
	Timeout   time.Duration // from when it starts to its deadline; Run gives 30 s when 0
}

// Result is what an invocation returned.
type Result struct {
	Invocation
	Response []byte
	Err      error
}

// Context returns the context aws-lambda-go's runtime loop gives the handler of inv, and the
// function that cancels it (aws-lambda-go cancels it when the handler returns).
func Context(parent context.Context, inv Invocation) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithDeadline(parent, time.Now().Add(inv.Timeout))
	ctx = lambdacontext.NewContext(ctx, &lambdacontext.LambdaContext{AwsRequestID: inv.RequestID, InvokedFunctionArn: FunctionARN})
	//lint:ignore SA1029 the string key is aws-lambda-go's
	ctx = context.WithValue(ctx, "x-amzn-trace-id", inv.TraceID)
	return ctx, cancel
}

// TraceHeader is a sampled X-Ray trace header of its own for each i, as Lambda sends it.
func TraceHeader(i int) string {
	return fmt.Sprintf("Root=1-6756f1c0-%024x;Parent=%016x;Sampled=1", i+1, i+1)
}

// TraceRoot is the Root of TraceHeader(i), as a log line's xray_trace_id names it.
func TraceRoot(i int) string { return fmt.Sprintf("1-6756f1c0-%024x", i+1) }

// Run calls h once per invocation of invs from concurrency goroutines, each taking the next
// invocation when its last one has returned, as aws-lambda-go's loops take theirs from the
// Runtime API. It returns when every invocation has returned, the results in the order of
// invs.
func Run(h Handler, concurrency int, invs []Invocation) []Result {
	results := make([]Result, len(invs))
	next := make(chan int, len(invs))
	for i := range invs {
		inv := invs[i]
		if inv.RequestID == "" {
			inv.RequestID = fmt.Sprintf("req-%d", i)
		}
		if inv.TraceID == "" {
			inv.TraceID = TraceHeader(i)
		}
		if inv.Timeout == 0 {
			inv.Timeout = 30 * time.Second
		}
		results[i].Invocation = inv
		next <- i
	}
	close(next)
	var wg sync.WaitGroup
	for range concurrency {
		wg.Go(func() {
			for i := range next {
				r := &results[i]
				ctx, cancel := Context(context.Background(), r.Invocation)
				r.Response, r.Err = h.Invoke(ctx, r.Payload)
				cancel()
			}
		})
	}
	wg.Wait()
	return results
}

// Barrier holds each of n callers of Wait until all n have called it: invocations that meet
// at one are all in flight at once.
type Barrier struct {
	mu    sync.Mutex
	n     int
	all   chan struct{}
	count int
}

// NewBarrier returns a Barrier for n callers.
func NewBarrier(n int) *Barrier { return &Barrier{n: n, all: make(chan struct{})} }

// Wait returns when n callers have called it, or with ctx's error when ctx ends first.
func (b *Barrier) Wait(ctx context.Context) error {
	b.mu.Lock()
	if b.count++; b.count == b.n {
		close(b.all)
	}
	b.mu.Unlock()
	select {
	case <-b.all:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("lmitest: %d of %d invocations met at the barrier: %w", b.arrived(), b.n, ctx.Err())
	}
}

func (b *Barrier) arrived() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.count
}

// Output is an io.Writer for the lines of many invocations at once (a logger's, the metrics'),
// safe for concurrent use, that reads them back as JSON objects.
type Output struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (o *Output) Write(p []byte) (int, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.buf.Write(p)
}

// Lines returns every line written, each decoded as a JSON object; a line that is not one is
// an error.
func (o *Output) Lines() ([]map[string]any, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	var out []map[string]any
	for line := range bytes.Lines(o.buf.Bytes()) {
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal(line, &m); err != nil {
			return nil, fmt.Errorf("lmitest: a line that is not a JSON object: %q: %w", line, err)
		}
		out = append(out, m)
	}
	return out, nil
}
