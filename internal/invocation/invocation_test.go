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
