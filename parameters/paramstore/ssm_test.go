package paramstore_test

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
)

// TestSSMGet: a String and a SecureString (decrypted) from moto's Parameter Store, a base64
// value as bytes, and a missing name as ErrNotFound naming the provider and the name.
func TestSSMGet(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/get/plain", "hello", ssmtypes.ParameterTypeString)
	m.putParameter(t, "/get/secure", "s3cr3t-value", ssmtypes.ParameterTypeSecureString)
	m.putParameter(t, "/get/bin", base64.StdEncoding.EncodeToString([]byte{0, 1, 2, 0xff}), ssmtypes.ParameterTypeString)
	p, err := paramstore.New(m.ssmClient())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	if v, err := p.Get(ctx, "/get/plain"); err != nil || v != "hello" {
		t.Fatalf("Get(/get/plain) = %q, %v; want hello", v, err)
	}
	if v, err := p.Get(ctx, "/get/secure"); err != nil || v != "s3cr3t-value" {
		t.Fatalf("Get(/get/secure) = %q, %v; want the decrypted value", v, err)
	}
	if b, err := p.GetBinary(ctx, "/get/bin"); err != nil || string(b) != "\x00\x01\x02\xff" {
		t.Fatalf("GetBinary(/get/bin) = %q, %v", b, err)
	}
	_, err = p.GetBinary(ctx, "/get/plain") // "hello" is not base64
	if !errors.Is(err, parameters.ErrType) || strings.Contains(err.Error(), "hello") {
		t.Fatalf("GetBinary of a non-base64 value: %v; want ErrType, without the value", err)
	}
	_, err = p.Get(ctx, "/get/missing")
	var pe *parameters.Error
	if !errors.Is(err, parameters.ErrNotFound) || !errors.As(err, &pe) || pe.Provider != "ssm" || pe.Name != "/get/missing" {
		t.Fatalf("Get of a missing parameter: %v; want an *Error of ssm /get/missing matching ErrNotFound", err)
	}
	if _, err := p.Get(ctx, "bad name"); err == nil || !strings.Contains(err.Error(), "space") {
		t.Fatalf("Get of a name with a space: %v", err)
	}
}

// TestSSMCache: a value is fetched once within its max age, again after it; Force fetches at
// once; Invalidate makes the next Get fetch.
func TestSSMCache(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/cache/v", "one", ssmtypes.ParameterTypeString)
	c := &countingSSM{API: m.ssmClient()}
	clk := newClock()
	p, err := paramstore.New(c, withClock(clk)) // the default max age, 5 s
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	get := func(want string, calls int64, opts ...parameters.GetOption) {
		t.Helper()
		v, err := p.Get(ctx, "/cache/v", opts...)
		if err != nil || v != want || c.get.Load() != calls {
			t.Fatalf("Get = %q, %v after %d calls; want %q after %d", v, err, c.get.Load(), want, calls)
		}
	}
	get("one", 1)
	m.putParameter(t, "/cache/v", "two", ssmtypes.ParameterTypeString)
	clk.Add(parameters.DefaultMaxAge - time.Millisecond)
	get("one", 1) // within the max age: the cache
	clk.Add(time.Millisecond)
	get("two", 2) // past it: fetched
	m.putParameter(t, "/cache/v", "three", ssmtypes.ParameterTypeString)
	get("two", 2)
	get("three", 3, parameters.Force())
	m.putParameter(t, "/cache/v", "four", ssmtypes.ParameterTypeString)
	get("three", 3)
	p.Invalidate("/cache/v")
	get("four", 4)
	get("four", 4)
}

// TestMaxAgeSettings: WithMaxAge(0) fetches every time; POWERTOOLS_PARAMETERS_MAX_AGE sets
// the default (Powertools: "POWERTOOLS_PARAMETERS_MAX_AGE: Adjust how long values are kept
// in cache (in seconds)", https://docs.aws.amazon.com/powertools/python/latest/utilities/parameters/#environment-variables),
// WithMaxAge wins over it, and a bad value of either is an OptionError.
func TestMaxAgeSettings(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/age/v", "x", ssmtypes.ParameterTypeString)
	ctx := ctx10(t)
	calls := func(opts ...parameters.Option) int64 {
		t.Helper()
		c := &countingSSM{API: m.ssmClient()}
		clk := newClock()
		p, err := paramstore.New(c, append(opts, withClock(clk))...)
		if err != nil {
			t.Fatal(err)
		}
		for range 3 {
			if _, err := p.Get(ctx, "/age/v"); err != nil {
				t.Fatal(err)
			}
			clk.Add(10 * time.Second)
		}
		return c.get.Load()
	}
	if n := calls(parameters.WithMaxAge(0)); n != 3 {
		t.Errorf("WithMaxAge(0): %d calls for 3 Gets; want 3", n)
	}
	if n := calls(); n != 3 {
		t.Errorf("default max age, Gets 10 s apart: %d calls; want 3", n)
	}
	t.Setenv(parameters.EnvMaxAge, "60")
	if n := calls(); n != 1 {
		t.Errorf("POWERTOOLS_PARAMETERS_MAX_AGE=60, Gets 10 s apart: %d calls; want 1", n)
	}
	if n := calls(parameters.WithMaxAge(time.Second)); n != 3 {
		t.Errorf("WithMaxAge(1s) over POWERTOOLS_PARAMETERS_MAX_AGE=60: %d calls; want 3", n)
	}
	t.Setenv(parameters.EnvMaxAge, "five")
	if _, err := paramstore.New(m.ssmClient()); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("POWERTOOLS_PARAMETERS_MAX_AGE=five: %v; want an OptionError", err)
	}
	for _, o := range []parameters.Option{parameters.WithMaxAge(-time.Second), parameters.WithTimeout(0)} {
		if _, err := paramstore.New(m.ssmClient(), o); !errors.Is(err, toolkit.ErrInvalidOption) {
			t.Errorf("bad option: %v; want an OptionError", err)
		}
	}
	if _, err := paramstore.New(nil); !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("NewSSM(nil): %v", err)
	}
}

// TestSingleFlight: 50 concurrent Gets of one name that miss the cache make one call.
func TestSingleFlight(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/flight/v", "shared", ssmtypes.ParameterTypeString)
	c := &countingSSM{API: m.ssmClient(), gate: make(chan struct{})}
	p, err := paramstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	var wg sync.WaitGroup
	errs := make(chan error, 50)
	for range 50 {
		wg.Go(func() {
			if v, err := p.Get(ctx, "/flight/v"); err != nil || v != "shared" {
				errs <- fmt.Errorf("Get = %q, %v", v, err)
			}
		})
	}
	for c.get.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(50 * time.Millisecond) // let the other 49 reach the flight
	close(c.gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if n := c.get.Load(); n != 1 {
		t.Errorf("%d GetParameter calls for 50 concurrent Gets; want 1", n)
	}
}

// TestSSMGetByPath: every parameter under a path, recursively, over several pages, keyed
// without the path as Powertools' get_parameters keys them (ssm.py _get_multiple:
// `name = name.replace(path, "", 1).lstrip("/")`), cached like one value.
func TestSSMGetByPath(t *testing.T) {
	m := startMoto(t)
	want := map[string]string{}
	for i := range 23 {
		name := fmt.Sprintf("k%02d", i)
		if i%3 == 0 {
			name = "nested/deeper/" + name
		}
		want[name] = fmt.Sprintf("v%d", i)
		typ := ssmtypes.ParameterTypeString
		if i == 5 {
			typ = ssmtypes.ParameterTypeSecureString
		}
		m.putParameter(t, "/path/app/"+name, want[name], typ)
	}
	m.putParameter(t, "/path/other", "not under /path/app", ssmtypes.ParameterTypeString)
	c := &countingSSM{API: m.ssmClient()}
	p, err := paramstore.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	got, err := p.GetByPath(ctx, "/path/app")
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) {
		t.Fatalf("GetByPath: %d parameters; want %d: %v", len(got), len(want), got)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("GetByPath[%q] = %q; want %q", k, got[k], v)
		}
	}
	if n := c.byPath.Load(); n < 3 {
		t.Errorf("%d GetParametersByPath calls for 23 parameters; want at least 3 pages of %d", n, limits.MaxSSMGetParametersByPathResults)
	}
	calls := c.byPath.Load()
	if _, err := p.GetByPath(ctx, "/path/app"); err != nil || c.byPath.Load() != calls {
		t.Errorf("second GetByPath: %v, %d calls; want the cache", err, c.byPath.Load()-calls)
	}
	if _, err := p.GetByPath(ctx, "path/app"); err == nil {
		t.Error(`GetByPath of a path without a leading "/": no error`)
	}
}

// endlessPages answers every GetParametersByPath with a full page and a new NextToken, and
// GetParameter with a value of size n.
type endlessPages struct {
	n    int
	page int
	same bool
}

func (e *endlessPages) GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: aws.String(strings.Repeat("v", e.n))}}, nil
}

func (e *endlessPages) GetParametersByPath(_ context.Context, in *ssm.GetParametersByPathInput, _ ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	out := &ssm.GetParametersByPathOutput{NextToken: aws.String(fmt.Sprint("t", e.page))}
	if e.same {
		out.NextToken = aws.String("t")
	}
	for i := range 10 {
		out.Parameters = append(out.Parameters, ssmtypes.Parameter{Name: aws.String(fmt.Sprintf("%s/p%d-%d", *in.Path, e.page, i)), Value: aws.String(strings.Repeat("v", e.n))})
	}
	e.page++
	return out, nil
}

// TestSSMBounds: a path that never ends stops at MaxPathParameters, a NextToken that repeats
// is an error, and a value over limits.MaxSSMParameterValueBytes is ErrTooLarge, without the value.
func TestSSMBounds(t *testing.T) {
	ctx := ctx10(t)
	e := &endlessPages{n: 1}
	p, _ := paramstore.New(e)
	if _, err := p.GetByPath(ctx, "/endless"); !errors.Is(err, parameters.ErrTooLarge) || e.page > paramstore.MaxPathParameters/10+1 {
		t.Errorf("endless path: %v after %d pages; want ErrTooLarge after %d", err, e.page, paramstore.MaxPathParameters/10)
	}
	p, _ = paramstore.New(&endlessPages{n: 1, same: true})
	if _, err := p.GetByPath(ctx, "/loop"); err == nil || !strings.Contains(err.Error(), "NextToken") {
		t.Errorf("repeated NextToken: %v", err)
	}
	p, _ = paramstore.New(&endlessPages{n: limits.MaxSSMParameterValueBytes})
	if v, err := p.Get(ctx, "/at-limit"); err != nil || len(v) != limits.MaxSSMParameterValueBytes {
		t.Errorf("a value of exactly the limit: %d bytes, %v", len(v), err)
	}
	p, _ = paramstore.New(&endlessPages{n: limits.MaxSSMParameterValueBytes + 1})
	_, err := p.Get(ctx, "/over")
	if !errors.Is(err, parameters.ErrTooLarge) || strings.Contains(err.Error(), "vvvv") {
		t.Errorf("a value over the limit: %v", err)
	}
}

// TestInvalidateDuringFetch: a value fetched by a call that began before Invalidate is
// returned to its callers but not kept: the next Get fetches again.
func TestInvalidateDuringFetch(t *testing.T) {
	m := startMoto(t)
	m.putParameter(t, "/inflight/v", "before", ssmtypes.ParameterTypeString)
	c := &countingSSM{API: m.ssmClient(), gate: make(chan struct{})}
	p, _ := paramstore.New(c)
	ctx := ctx10(t)
	done := make(chan error, 1)
	go func() {
		_, err := p.Get(ctx, "/inflight/v")
		done <- err
	}()
	for c.get.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	p.Invalidate("/inflight/v") // the value being fetched was refused
	close(c.gate)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := p.Get(ctx, "/inflight/v"); err != nil || c.get.Load() != 2 {
		t.Fatalf("Get after Invalidate during a fetch: %v, %d calls; want a second call", err, c.get.Load())
	}
}
