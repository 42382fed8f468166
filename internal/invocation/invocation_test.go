package invocation

import (
	"context"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// TestConcurrentInvocations: invocations started at once each carry their own request ID and
// trace ID, and exactly one is the cold start.
func TestConcurrentInvocations(t *testing.T) {
	started.Store(false)
	const n = 16
	var wg sync.WaitGroup
	infos := make([]Info, n)
	for i := range n {
		wg.Go(func() {
			ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-" + string(rune('a'+i))})
			//lint:ignore SA1029 the string key is aws-lambda-go's
			ctx = context.WithValue(ctx, "x-amzn-trace-id", "Root=1-"+string(rune('a'+i)))
			ctx, in := Start(ctx)
			if _, again := Start(ctx); again != in {
				t.Errorf("a nested Start changed the Info: %+v then %+v", in, again)
			}
			infos[i] = in
		})
	}
	wg.Wait()
	cold := 0
	for i, in := range infos {
		if in.RequestID != "req-"+string(rune('a'+i)) || in.TraceID != "Root=1-"+string(rune('a'+i)) {
			t.Errorf("invocation %d: %+v", i, in)
		}
		if in.ColdStart {
			cold++
		}
	}
	if cold != 1 {
		t.Errorf("%d cold starts among %d concurrent first invocations, want 1", cold, n)
	}
}

func TestFromWithoutStart(t *testing.T) {
	if _, ok := From(context.Background()); ok {
		t.Error("From found an Info in a context Start never saw")
	}
}

// TestTraceHeaderSource: the context's header wins over _X_AMZN_TRACE_ID, which another
// invocation (or none) set, even when the context's is empty (the invocation is not traced);
// the variable is read only when the context has no header at all.
func TestTraceHeaderSource(t *testing.T) {
	const env = "Root=1-00000000-000000000000000000000003;Parent=0000000000000003;Sampled=1"
	const own = "Root=1-00000000-000000000000000000000001;Parent=0000000000000001;Sampled=1"
	t.Setenv(TraceEnv, env)
	//lint:ignore SA1029 the string key is aws-lambda-go's
	withHeader := func(h string) context.Context { return context.WithValue(context.Background(), TraceHeaderKey, h) }
	for _, tc := range []struct {
		name string
		ctx  context.Context
		want string
	}{
		{"context", withHeader(own), own},
		{"context empty", withHeader(""), ""},
		{"no header: the variable", context.Background(), env},
	} {
		if got := TraceHeader(tc.ctx); got != tc.want {
			t.Errorf("%s: TraceHeader = %q, want %q", tc.name, got, tc.want)
		}
		if _, in := Start(tc.ctx); in.TraceID != tc.want {
			t.Errorf("%s: Start's TraceID = %q, want %q", tc.name, in.TraceID, tc.want)
		}
	}
}
