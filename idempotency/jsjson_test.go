package idempotency_test

import (
	"encoding/json"
	"math"
	"reflect"
	"testing"

	"github.com/kafkalambda/toolkit/idempotency"
)

// TestJSNumber checks Number.prototype.toString's forms (ECMA-262 Number::toString), the
// values printed by node for the same doubles.
func TestJSNumber(t *testing.T) {
	for _, tc := range []struct {
		f    float64
		want string
	}{
		{0, "0"}, {math.Copysign(0, -1), "0"}, {1, "1"}, {-1, "-1"}, {0.1, "0.1"}, {1.5, "1.5"},
		{100, "100"}, {1e20, "100000000000000000000"}, {1e21, "1e+21"}, {1.5e21, "1.5e+21"},
		{123456789012345678901, "123456789012345680000"}, {1e-6, "0.000001"}, {1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"}, {0.000001234, "0.000001234"}, {5e-324, "5e-324"},
		{math.MaxFloat64, "1.7976931348623157e+308"}, {9007199254740993, "9007199254740992"},
		{12345678.9, "12345678.9"}, {-4.5e-10, "-4.5e-10"}, {math.Inf(1), "null"}, {math.NaN(), "null"},
	} {
		if got := idempotency.JSNumber(tc.f); got != tc.want {
			t.Errorf("JSNumber(%v) = %s, want %s", tc.f, got, tc.want)
		}
	}
}

// FuzzJSJSON: for any JSON document, the text FormatTypeScript hashes is JSON that decodes to
// the same data (keys reordered, numbers as doubles, __proto__ dropped), and never panics.
func FuzzJSJSON(f *testing.F) {
	for _, s := range []string{`"k"`, `{"b":1,"A":[1e21,-0,0.1]}`, `{"10":1,"2":2,"a":3,"a":4}`, `{"__proto__":1}`, `"\u0000\u2028😀"`, `[null,true,false,{}]`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, doc string) {
		if !json.Valid([]byte(doc)) {
			return
		}
		text, err := idempotency.JSJSON(json.RawMessage(doc))
		if err != nil {
			t.Fatalf("JSJSON(%q): %v", doc, err)
		}
		var want, got any
		if err := json.Unmarshal([]byte(doc), &want); err != nil {
			return // a number beyond float64: JavaScript makes it Infinity, written as null
		}
		if err := json.Unmarshal(text, &got); err != nil {
			t.Fatalf("JSJSON(%q) = %q, not JSON: %v", doc, text, err)
		}
		if !reflect.DeepEqual(dropProto(want), got) {
			t.Fatalf("JSJSON(%q) = %q: other data", doc, text)
		}
	})
}

func dropProto(v any) any {
	switch v := v.(type) {
	case map[string]any:
		delete(v, "__proto__")
		for k, e := range v {
			v[k] = dropProto(e)
		}
	case []any:
		for i, e := range v {
			v[i] = dropProto(e)
		}
	}
	return v
}
