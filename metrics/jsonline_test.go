package metrics

import (
	"context"
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// Strings and numbers are written as encoding/json writes them, byte for byte: the document
// reads as encoding/json would have written it (the tests of internal/emfout, which wrote
// batch's and fanout's documents before this package did).
func TestAppendString(t *testing.T) {
	for _, s := range []string{"", "orders", `q "<&>" \ é` + "\x01\x7f", "Records", strings.Repeat("a", 300), "\u2028", "\xff"} {
		want, _ := json.Marshal(s)
		if got := appendString(nil, s); string(got) != string(want) {
			t.Errorf("%q: %s, want %s", s, got, want)
		}
	}
}

func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, math.Copysign(0, -1), 1, -1, 0.5, 12.345, 1e-6, 9.99e-7, 1e-7, 1e14, 1e15 - 1, 1e15, 1e20, 1e21,
		-1e21, 123456789012345678, math.MaxFloat64, math.SmallestNonzeroFloat64, 0x1p360, 60000, 1 << 40} {
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	if got := appendFloat(nil, math.NaN()); string(got) != "0" {
		t.Errorf("NaN: %s", got)
	}
}

// Two Metrics in one invocation (a function's own, and package batch's) each write their own
// document: Start gives each a recorder of its own, and neither's Flush writes the other's.
func TestStartPerMetrics(t *testing.T) {
	own, ownBuf := newTest(t, WithNamespace("Own"), WithService("svc"))
	other, otherBuf := newTest(t, WithNamespace("Other"), WithDefaultDimensions(map[string]string{"Source": "kafka"}))
	ctx := own.Start(context.Background())
	if own.Start(ctx) != ctx {
		t.Error("a second Start of the same Metrics made another recorder")
	}
	if err := Add(ctx, "OrdersPlaced", Count, 1); err != nil {
		t.Fatal(err)
	}
	octx := other.Start(ctx)
	if err := Add(octx, "Records", Count, 6); err != nil {
		t.Fatal(err)
	}
	if err := Flush(octx); err != nil {
		t.Fatal(err)
	}
	if err := Flush(ctx); err != nil {
		t.Fatal(err)
	}
	o := docs(t, otherBuf)
	if len(o) != 1 || o[0]["Source"] != "kafka" || o[0]["OrdersPlaced"] != nil || o[0]["service"] != nil {
		t.Errorf("the other Metrics' documents: %v", o)
	}
	w := docs(t, ownBuf)
	if len(w) != 1 || w[0]["Records"] != nil || w[0]["service"] != "svc" || w[0]["OrdersPlaced"] == nil {
		t.Errorf("the function's documents: %v", w)
	}
}

// WithService("") leaves the service dimension out, whatever POWERTOOLS_SERVICE_NAME says.
func TestWithServiceEmpty(t *testing.T) {
	t.Setenv(EnvService, "from-env")
	m, buf := newTest(t, WithNamespace("N"), WithService(""))
	ctx := m.Start(context.Background())
	if err := Add(ctx, "M", Count, 1); err != nil {
		t.Fatal(err)
	}
	if err := Flush(ctx); err != nil {
		t.Fatal(err)
	}
	d := docs(t, buf)
	if len(d) != 1 || d[0]["service"] != nil {
		t.Errorf("documents %v: want no service dimension", d)
	}
	dims := d[0]["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)["Dimensions"].([]any)
	if len(dims) != 1 || len(dims[0].([]any)) != 0 {
		t.Errorf("dimension sets %v, want one empty set", dims)
	}
	if _, err := New(WithNamespace("N"), WithService(" ")); err == nil {
		t.Error("WithService(\" \") accepted")
	}
}
