package paramstore_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/internal/faulthttp"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
)

const opGetParameter = "AmazonSSM.GetParameter"

// TestBlackHoleWithoutDeadline: a context with no deadline gets the provider's timeout.
func TestBlackHoleWithoutDeadline(t *testing.T) {
	m := startMoto(t)
	ft := faulthttp.New(nil, faulthttp.Rule{Op: opGetParameter, Fault: faulthttp.BlackHole})
	p, err := paramstore.New(m.ssmClient(func(o *ssm.Options) { o.HTTPClient = ft.Client() }), parameters.WithTimeout(200*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	_, err = p.Get(context.Background(), "/fault/hole")
	if took := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || took > time.Second {
		t.Fatalf("black-holed Get with no deadline: %v after %v; want DeadlineExceeded after about 200 ms", err, took)
	}
}

// TestThrottleRetriedThenLoud: a throttled GetParameter is retried by the SDK (3 attempts
// with the test retryer) and then fails, saying it was throttled; a store that throttles
// once is retried through.
func TestThrottleRetriedThenLoud(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/fault/throttle", "v", ssmtypes.ParameterTypeString)
	ft := faulthttp.New(nil, faulthttp.Rule{Op: opGetParameter, Fault: faulthttp.Throttle})
	p, err := paramstore.New(m.ssmClient(func(o *ssm.Options) { o.HTTPClient = ft.Client() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	_, err = p.Get(ctx, "/fault/throttle")
	if err == nil || !strings.Contains(err.Error(), "ThrottlingException") || !strings.Contains(err.Error(), "/fault/throttle") {
		t.Fatalf("throttled Get: %v; want a ThrottlingException naming the parameter", err)
	}
	t.Logf("throttled Get: %v", err)
	if n := ft.Calls(opGetParameter); n != 3 {
		t.Fatalf("%d GetParameter attempts; want 3 (the SDK retried)", n)
	}
	ft.Clear()
	ft.Add(faulthttp.Rule{Op: opGetParameter, First: ft.Calls(opGetParameter) + 1, Count: 1, Fault: faulthttp.Throttle})
	if v, err := p.Get(ctx, "/fault/throttle"); err != nil || v != "v" {
		t.Fatalf("Get throttled once: %q, %v; want the value after a retry", v, err)
	}
}

// TestDropRetried: a GetParameter whose answer is lost (connection reset) is retried.
func TestDropRetried(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/fault/drop", "v", ssmtypes.ParameterTypeString)
	ft := faulthttp.New(nil, faulthttp.Rule{Op: opGetParameter, First: 1, Count: 1, Fault: faulthttp.DropAfterApply})
	p, _ := paramstore.New(m.ssmClient(func(o *ssm.Options) { o.HTTPClient = ft.Client() }))
	if v, err := p.Get(ctx10(t), "/fault/drop"); err != nil || v != "v" || ft.Calls(opGetParameter) != 2 {
		t.Fatalf("Get with a dropped answer: %q, %v, %d calls; want the value after 2", v, err, ft.Calls(opGetParameter))
	}
}

// TestFailedRefreshIsAnError: once the max age has passed, a fetch that fails is an error,
// not the old value (fail closed).
func TestFailedRefreshIsAnError(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/fault/stale", "v", ssmtypes.ParameterTypeString)
	ft := faulthttp.New(nil)
	clk := newClock()
	p, _ := paramstore.New(m.ssmClient(func(o *ssm.Options) { o.HTTPClient = ft.Client() }), withClock(clk))
	ctx := ctx10(t)
	if _, err := p.Get(ctx, "/fault/stale"); err != nil {
		t.Fatal(err)
	}
	ft.Add(faulthttp.Rule{Op: opGetParameter, Fault: faulthttp.ServerError})
	if v, err := p.Get(ctx, "/fault/stale"); err != nil || v != "v" {
		t.Fatalf("within the max age: %q, %v; want the cached value, no call", v, err)
	}
	clk.Add(parameters.DefaultMaxAge)
	if v, err := p.Get(ctx, "/fault/stale"); err == nil || v != "" {
		t.Fatalf("a failed refresh: %q, %v; want an error and no value", v, err)
	}
}
