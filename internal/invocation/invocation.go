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
	// aws-lambda-go puts the trace header in the context under this string key; it no longer
	// sets _X_AMZN_TRACE_ID when invocations run concurrently (aws-lambda-go #602).
	if t, ok := ctx.Value("x-amzn-trace-id").(string); ok {
		in.TraceID = t
	}
	return context.WithValue(ctx, key{}, in), in
}

// From returns the Info Start put in ctx.
func From(ctx context.Context) (Info, bool) {
	in, ok := ctx.Value(key{}).(Info)
	return in, ok
}
