// Package invocation carries what Lambda says of one invocation (its request ID, the function
// ARN it was invoked by, its X-Ray trace ID) and of the execution environment (function name,
// version, memory, whether this invocation is its first: the cold start) in the invocation's
// context. The logger and the metrics read them from there, never from process globals, so
// that each of many invocations running at once in one process (Lambda Managed Instances,
// AWS_LAMBDA_MAX_CONCURRENCY > 1) logs and counts its own.
//
// A handler wrapper calls Start once per invocation; everything below reads From.
package invocation

import (
	"context"
	"os"
	"strconv"
	"sync/atomic"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// Info is one invocation as Lambda describes it.
type Info struct {
	RequestID       string // lambdacontext's AwsRequestID
	FunctionARN     string // the ARN the function was invoked by
	TraceID         string // the X-Ray trace header of the invocation ("Root=...;Parent=...;Sampled=1")
	FunctionName    string // AWS_LAMBDA_FUNCTION_NAME
	FunctionVersion string // AWS_LAMBDA_FUNCTION_VERSION
	MemoryMB        int    // AWS_LAMBDA_FUNCTION_MEMORY_SIZE
	ColdStart       bool   // the first invocation of this execution environment
}

type key struct{}

// started is set by the first Start of the process: the execution environment's first
// invocation is its cold start, whichever of several concurrent ones gets here first.
var started atomic.Bool

// Start returns ctx carrying the Info of the invocation ctx belongs to, and that Info. A ctx
// that already carries one (a nested wrapper) keeps it, so the cold start is counted once.
func Start(ctx context.Context) (context.Context, Info) {
	if in, ok := From(ctx); ok {
		return ctx, in
	}
	in := Info{
		FunctionName:    lambdacontext.FunctionName,
		FunctionVersion: lambdacontext.FunctionVersion,
		MemoryMB:        lambdacontext.MemoryLimitInMB,
		ColdStart:       started.CompareAndSwap(false, true),
	}
	if in.FunctionName == "" { // outside Lambda's runtime (tests, klt invoke's emulator sets them)
		in.FunctionName = os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
		in.FunctionVersion = os.Getenv("AWS_LAMBDA_FUNCTION_VERSION")
		in.MemoryMB, _ = strconv.Atoi(os.Getenv("AWS_LAMBDA_FUNCTION_MEMORY_SIZE"))
	}
	if lc, ok := lambdacontext.FromContext(ctx); ok {
		in.RequestID, in.FunctionARN = lc.AwsRequestID, lc.InvokedFunctionArn
	}
	in.TraceID = TraceHeader(ctx)
	return context.WithValue(ctx, key{}, in), in
}

// TraceHeaderKey is the context key under which aws-lambda-go puts each invocation's X-Ray
// trace header (lambda/invoke_loop.go; rpc_function.go on the go1.x runtime), a string key
// that aws-xray-sdk-go names xray.LambdaTraceHeaderKey.
const TraceHeaderKey = "x-amzn-trace-id"

// TraceEnv is the environment variable that held the trace header of the invocation under
// way when a process ran one at a time.
const TraceEnv = "_X_AMZN_TRACE_ID"

// TraceHeader returns the X-Ray trace header of the invocation ctx belongs to
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"), or "" when
// it has none: the one aws-lambda-go put in ctx under TraceHeaderKey, even when empty (the
// invocation is not traced). Under concurrency (AWS_LAMBDA_MAX_CONCURRENCY > 1, Lambda
// Managed Instances) aws-lambda-go no longer sets _X_AMZN_TRACE_ID (aws-lambda-go #602: "the
// correct place to get the trace id has always been through the lambdacontext"), and one
// variable for the whole process could only name some invocation's trace, not this one's: it
// is read only when ctx has no header at all, that is when the handler was called by
// something other than aws-lambda-go (a test, another runtime client), where the variable is
// right only while one invocation runs at a time.
func TraceHeader(ctx context.Context) string {
	if in, ok := From(ctx); ok {
		return in.TraceID
	}
	if t, ok := ctx.Value(TraceHeaderKey).(string); ok {
		return t
	}
	return os.Getenv(TraceEnv)
}

// From returns the Info Start put in ctx.
func From(ctx context.Context) (Info, bool) {
	in, ok := ctx.Value(key{}).(Info)
	return in, ok
}
