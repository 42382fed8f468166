package esmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambda/messages"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/google/uuid"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// DefaultFunctionTimeout is the function timeout without one in the configuration: Lambda's
// default, 3 seconds.
const DefaultFunctionTimeout = 3 * time.Second

// DefaultFunctionName is the function's name without one in the configuration.
const DefaultFunctionName = "function"

// Invocation is one invocation the mapping made, as the function saw it and as the mapping
// saw its outcome.
type Invocation struct {
	N         int    // 1 for the mapping's first invocation, then 2, 3...
	RequestID string // the context's lambdacontext.AwsRequestID
	// Records are the records (Kafka: topic, partition, offset) or messages (SQS: message ID
	// and attributes) of the event, in the event's order.
	Records []RecordRef
	Event   []byte // the event, as the function got it
	// Response is the function's response payload; nil when Err is set.
	Response []byte
	// Err is the failed invocation as Lambda reports it to the mapping: a returned error
	// (its type's name and message), a panic, or "Sandbox.Timedout".
	Err      *InvokeError
	Start    time.Time
	Duration time.Duration
	// Environment is the emulated execution environment that ran it (1, 2, ...) for a Lambda
	// Managed Instances function (WithLMIConcurrency); 0 otherwise.
	Environment int
	// PastDeadline is set for a Lambda Managed Instances invocation whose deadline passed
	// before its handler returned: it failed as "Sandbox.Timedout", and the handler ran on.
	PastDeadline bool
}

// Environment is an emulated execution environment of a Lambda Managed Instances function.
type Environment struct {
	N           int // 1, 2, ... in the order they were first used
	Invocations int // invocations it ran
	MaxInFlight int // the most it ran at once (at most WithLMIConcurrency's n)
}

// InvokeError is a failed invocation, as Lambda reports it to the mapping.
type InvokeError struct {
	Type    string // errorType: "errorString", "Sandbox.Timedout", "Function.ResponseSizeTooLarge"...
	Message string // errorMessage
}

func (e *InvokeError) Error() string { return e.Type + ": " + e.Message }

// RecordRef names one record (Kafka) or message (SQS) of an invocation's event.
type RecordRef struct {
	// Kafka: where the record is.
	Topic     string
	Partition int32
	Offset    int64
	// SQS: the message, and the string values of its message attributes.
	MessageID  string
	Attributes map[string]string
}

// Counters are a mapping's running totals, each of records (Kafka) or messages (SQS). Each
// record taken from the source ends as exactly one of Filtered, Succeeded or DeadLettered, or
// is still on its way: In = Filtered + Succeeded + DeadLettered + what is on its way.
type Counters struct {
	In             int64 // taken from the source
	Filtered       int64 // dropped by FilterCriteria, never delivered
	Delivered      int64 // deliveries: each record once per invocation that carried it
	InFlight       int64 // in an invocation right now
	Succeeded      int64 // done: its invocation succeeded for it, and it was committed or deleted
	ReportedFailed int64 // deliveries a partial batch response failed
	ErrorFailed    int64 // deliveries in an invocation that failed as a whole
	Retried        int64 // deliveries of a record after its first
	DeadLettered   int64 // given up on (Kafka: to the on-failure destination, or dropped), or moved to the dead-letter queue (SQS)
	Invocations    int64 // invocations made
	Errors         int64 // invocations that failed as a whole
	Lag            int64 // records in the source not yet delivered
}

func counters(s esm.Snapshot) Counters {
	return Counters{In: s.In, Filtered: s.Filtered, Delivered: s.Delivered, InFlight: s.InFlight, Succeeded: s.Succeeded,
		ReportedFailed: s.ReportedFailed, ErrorFailed: s.ErrorFailed, Retried: s.Retried, DeadLettered: s.DeadLettered,
		Invocations: s.Invocations, Errors: s.Errors, Lag: s.Lag}
}

// Offsets returns the offsets of the invocation's records of partition p (Kafka), in the
// event's order.
func (inv Invocation) Offsets(p int32) []int64 {
	var out []int64
	for _, r := range inv.Records {
		if r.Partition == p {
			out = append(out, r.Offset)
		}
	}
	return out
}

// recorder runs a lambda.Handler in process, as Lambda's Go runtime would, and keeps every
// invocation. It is the mapping's esm.Invoker.
type recorder struct {
	h       lambda.Handler
	timeout time.Duration
	arn     string
	parse   func(event []byte) []RecordRef
	logf    func(format string, args ...any) // the test's Logf: one line per failed invocation

	lmi int // WithLMIConcurrency's n; 0: Lambda's default model

	mu       sync.Mutex
	done     []Invocation
	inFlight int
	n        int
	envs     []*environment // LMI only
}

// environment is an emulated LMI execution environment: its stats and its handlers running.
type environment struct {
	Environment
	running int
}

func newRecorder(tb testing.TB, h lambda.Handler, cfg *config, parse func([]byte) []RecordRef) *recorder {
	timeout, fn := cfg.functionTimeout, cfg.functionName
	if timeout <= 0 {
		timeout = DefaultFunctionTimeout
	}
	if fn == "" {
		fn = DefaultFunctionName
	}
	if cfg.lmiConcurrency > 0 {
		// What aws-lambda-go reads (lambdacontext.MaxConcurrency) to run that many handlers.
		tb.Setenv("AWS_LAMBDA_MAX_CONCURRENCY", strconv.Itoa(cfg.lmiConcurrency))
	}
	return &recorder{h: h, timeout: timeout, arn: samspec.LocalFunctionARN(fn), parse: parse, logf: tb.Logf, lmi: cfg.lmiConcurrency}
}

// place puts a new invocation in an LMI environment: the fullest one with room, else a new
// one, as klt local's Runtime API server does. r.mu must be held.
func (r *recorder) place() *environment {
	var best *environment
	for _, e := range r.envs {
		if e.running < r.lmi && (best == nil || e.running > best.running) {
			best = e
		}
	}
	if best == nil {
		best = &environment{Environment: Environment{N: len(r.envs) + 1}}
		r.envs = append(r.envs, best)
	}
	best.running++
	best.Invocations++
	best.MaxInFlight = max(best.MaxInFlight, best.running)
	return best
}

// environments returns a copy of the LMI environments' stats.
func (r *recorder) environments() []Environment {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Environment
	for _, e := range r.envs {
		out = append(out, e.Environment)
	}
	return out
}

// outcome is what the handler's goroutine reports.
type outcome struct {
	payload []byte
	err     *esm.InvokeError
}

// Invoke implements esm.Invoker.
func (r *recorder) Invoke(ctx context.Context, payload []byte) (esm.Response, error) {
	r.mu.Lock()
	r.n++
	inv := Invocation{N: r.n, RequestID: uuid.NewString(), Event: slices.Clone(payload), Start: time.Now()}
	r.inFlight++
	var env *environment
	if r.lmi > 0 {
		env = r.place()
		inv.Environment = env.N
	}
	r.mu.Unlock()
	inv.Records = r.parse(payload)

	// Lambda's context: a deadline, and the invocation's identity. It is not canceled when
	// the mapping stops: a function is not told either.
	deadline := inv.Start.Add(r.timeout)
	hctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	hctx = lambdacontext.NewContext(hctx, &lambdacontext.LambdaContext{AwsRequestID: inv.RequestID, InvokedFunctionArn: r.arn})
	out := make(chan outcome, 1)
	go func() {
		r.call(hctx, payload, out)
		if env != nil { // the handler has returned: its place in the environment frees
			r.mu.Lock()
			env.running--
			r.mu.Unlock()
		}
	}()

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	var o outcome
	select {
	case o = <-out:
	case <-timer.C:
		// The goroutine cannot be stopped: it runs on, and its result is dropped. On LMI
		// that is the platform's behaviour too: "Lambda Managed Instances do not enforce the
		// timeout, and your code continues to run" (AWS, "Understanding the Lambda Managed
		// Instances execution environment").
		inv.PastDeadline = r.lmi > 0
		o.err = &esm.InvokeError{Type: "Sandbox.Timedout", Message: fmt.Sprintf("Task timed out after %.2f seconds", r.timeout.Seconds())}
	case <-ctx.Done():
		r.mu.Lock()
		r.inFlight--
		r.mu.Unlock()
		return esm.Response{}, ctx.Err()
	}
	inv.Duration = time.Since(inv.Start)
	if o.err == nil && len(o.payload) > limits.MaxLambdaResponseBytes {
		// Lambda fails a response over its 6 MB limit (limits.MaxLambdaResponseBytes).
		o = outcome{err: esm.ResponseTooLarge(int64(len(o.payload)))}
	}
	resp := esm.Response{Payload: o.payload, Err: o.err}
	if o.err == nil {
		inv.Response = slices.Clone(o.payload)
	} else {
		inv.Err = &InvokeError{Type: o.err.Type, Message: o.err.Message}
		r.logf("esmtest: invocation %d (%d records) failed: %v", inv.N, len(inv.Records), inv.Err)
	}
	r.mu.Lock()
	r.done = append(r.done, inv)
	r.inFlight--
	r.mu.Unlock()
	return resp, nil
}

// call runs the handler, reporting its result, its error or its panic as Lambda's Go runtime
// does (github.com/aws/aws-lambda-go/lambda: errorType is the type's name, without package
// or pointer; a panic's errorMessage is its value printed with %v). A handler whose goroutine
// exits without returning (runtime.Goexit, which t.FailNow, t.Fatal and t.SkipNow call) is
// reported at once as errGoexit.
func (r *recorder) call(ctx context.Context, payload []byte, out chan<- outcome) {
	returned := false
	defer func() {
		if v := recover(); v != nil {
			out <- outcome{err: invokeError(v, fmt.Sprintf("%v", v))}
		} else if !returned {
			out <- outcome{err: errGoexit()}
		}
	}()
	p, err := r.h.Invoke(ctx, payload)
	returned = true
	if err != nil {
		out <- outcome{err: invokeError(err, err.Error())}
		return
	}
	out <- outcome{payload: p}
}

// errGoexit is the failed invocation of a handler whose goroutine exited without returning.
// On Lambda, runtime.Goexit in the handler ends aws-lambda-go's loop, so the invocation is never
// answered: it fails when the process dies ("Runtime.ExitError") or its timeout ends. Here no
// answer can come either, and nothing is learnt by waiting for the timeout (15 minutes of a
// test's time for a 15-minute function), so it is reported at once, as the process's end.
func errGoexit() *esm.InvokeError {
	return &esm.InvokeError{Type: "Runtime.ExitError", Message: "the handler's goroutine exited without returning " +
		"(runtime.Goexit: t.FailNow, t.Fatal or t.SkipNow called in the handler? call them from the test's goroutine)"}
}

// invokeError is v (a returned error or a panic's value) as the Go runtime reports it.
func invokeError(v any, msg string) *esm.InvokeError {
	if ie, ok := v.(messages.InvokeResponse_Error); ok {
		return &esm.InvokeError{Type: ie.Type, Message: ie.Message}
	}
	t := reflect.TypeOf(v)
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	return &esm.InvokeError{Type: t.Name(), Message: msg}
}

// invocations returns a copy of the finished invocations, in the order they finished, and
// how many are under way.
func (r *recorder) invocations() ([]Invocation, int) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return slices.Clone(r.done), r.inFlight
}

// kafkaRefs names the records of a Kafka event; nil when it is not one.
func kafkaRefs(event []byte) []RecordRef {
	ev, err := kafkaevent.Parse(event)
	if err != nil {
		return nil
	}
	var out []RecordRef
	for rec := range ev.All() {
		out = append(out, RecordRef{Topic: rec.Topic, Partition: rec.Partition, Offset: rec.Offset})
	}
	return out
}

// sqsRefs names the messages of an SQS event; nil when it is not one.
func sqsRefs(event []byte) []RecordRef {
	var ev struct {
		Records []struct {
			MessageID  string `json:"messageId"`
			Attributes map[string]struct {
				StringValue *string `json:"stringValue"`
			} `json:"messageAttributes"`
		} `json:"Records"`
	}
	if json.Unmarshal(event, &ev) != nil {
		return nil
	}
	var out []RecordRef
	for _, m := range ev.Records {
		ref := RecordRef{MessageID: m.MessageID}
		for k, v := range m.Attributes {
			if v.StringValue != nil {
				if ref.Attributes == nil {
					ref.Attributes = map[string]string{}
				}
				ref.Attributes[k] = *v.StringValue
			}
		}
		out = append(out, ref)
	}
	return out
}
