package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"math"
	"math/big"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The vectors in testdata were produced by CPython 3.11 with
// json.dumps(json.loads(input), sort_keys=True) and hashlib.md5, i.e. what
// Powertools' BasePersistenceLayer._generate_hash computes for an event.

type pythonVector struct {
	Name   string `json:"name"`
	Input  string `json:"input"`
	Python string `json:"python"`
	MD5    string `json:"md5"`
}

func loadPythonVectors(t testing.TB) []pythonVector {
	t.Helper()
	b, err := os.ReadFile(filepath.Join("testdata", "python-json-vectors.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Vectors []pythonVector `json:"vectors"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Vectors) < 60 {
		t.Fatalf("only %d vectors", len(doc.Vectors))
	}
	return doc.Vectors
}

func TestPythonJSONVectors(t *testing.T) {
	for _, vec := range loadPythonVectors(t) {
		t.Run(vec.Name, func(t *testing.T) {
			// The raw event, as a Go handler would receive it.
			got, err := pythonJSON(json.RawMessage(vec.Input))
			if err != nil {
				t.Fatalf("pythonJSON(raw): %v", err)
			}
			if string(got) != vec.Python {
				t.Errorf("pythonJSON(raw)\n got %s\nwant %s", got, vec.Python)
			}

			// The same data decoded into a generic tree first.
			dec := json.NewDecoder(strings.NewReader(vec.Input))
			dec.UseNumber()
			var tree any
			if err := dec.Decode(&tree); err != nil {
				t.Fatalf("decode input: %v", err)
			}
			got, err = pythonJSON(tree)
			if err != nil {
				t.Fatalf("pythonJSON(tree): %v", err)
			}
			if string(got) != vec.Python {
				t.Errorf("pythonJSON(tree)\n got %s\nwant %s", got, vec.Python)
			}

			sum, err := pythonKeyHash(json.RawMessage(vec.Input))
			if err != nil {
				t.Fatalf("pythonKeyHash: %v", err)
			}
			if sum != vec.MD5 {
				t.Errorf("pythonKeyHash = %s, want %s", sum, vec.MD5)
			}
		})
	}
}

// TestPythonFloatRepr checks pythonFloatRepr against json.dumps(float) for
// edge doubles (every power of ten and its neighbours) and random ones.
func TestPythonFloatRepr(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("testdata", "python-float-repr.json"))
	if err != nil {
		t.Fatal(err)
	}
	var pairs [][2]string
	if err := json.Unmarshal(b, &pairs); err != nil {
		t.Fatal(err)
	}
	if len(pairs) < 1000 {
		t.Fatalf("only %d float vectors", len(pairs))
	}
	for _, p := range pairs {
		bits, err := strconv.ParseUint(p[0], 16, 64)
		if err != nil {
			t.Fatal(err)
		}
		f := math.Float64frombits(bits)
		if got := pythonFloatRepr(f); got != p[1] {
			t.Errorf("pythonFloatRepr(%#x) = %s, want %s", bits, got, p[1])
		}
		// And through the JSON path, from Python's own text.
		if !math.IsInf(f, 0) {
			got, err := pythonJSON(json.Number(p[1]))
			if err != nil {
				t.Fatalf("pythonJSON(%s): %v", p[1], err)
			}
			if string(got) != p[1] {
				t.Errorf("pythonJSON(json.Number(%s)) = %s", p[1], got)
			}
		}
	}
}

func TestPythonJSONGoValues(t *testing.T) {
	type item struct {
		SKU   string  `json:"sku"`
		Qty   int     `json:"qty"`
		Price float64 `json:"price"`
	}
	type order struct {
		ID     string          `json:"order_id"`
		Items  []item          `json:"items"`
		Amount json.Number     `json:"amount"`
		Meta   map[string]any  `json:"meta,omitempty"`
		Raw    json.RawMessage `json:"raw"`
		Skip   string          `json:"-"`
		Note   *string         `json:"note"`
	}
	v := order{
		ID:     "ORD-é",
		Items:  []item{{SKU: "B", Qty: 2, Price: 1.5}, {SKU: "A", Qty: 1, Price: 2}},
		Amount: "19.90",
		Meta:   map[string]any{"z": true, "a": []int{3, 1}},
		Raw:    json.RawMessage(`{"y":1.0,"x":1e16}`),
		Skip:   "ignored",
	}
	// Python: json.dumps({...}, sort_keys=True) of the equivalent dict.
	// Note price 2 (a Go float64) is marshalled as "2" and so becomes the
	// Python int 2, and amount keeps its text but is a float: 19.9.
	want := `{"amount": 19.9, "items": [{"price": 1.5, "qty": 2, "sku": "B"}, {"price": 2, "qty": 1, "sku": "A"}], "meta": {"a": [3, 1], "z": true}, "note": null, "order_id": "ORD-\u00e9", "raw": {"x": 1e+16, "y": 1.0}}`
	got, err := pythonJSON(v)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}

	for _, tc := range []struct {
		in   any
		want string
	}{
		{nil, "null"},
		{"a\x7f", `"a\u007f"`},
		{"\xff", `"\ufffd"`}, // invalid UTF-8 is coerced by encoding/json
		{[]byte("hi"), `"aGk="`},
		{map[int]string{10: "a", 9: "b"}, `{"10": "a", "9": "b"}`},
		{[]any{}, "[]"},
		{map[string]any{}, "{}"},
		{json.Number("-0"), "0"},
		{json.Number("-0.0"), "-0.0"},
		{json.Number("1e400"), "Infinity"},
		{json.Number("-1e400"), "-Infinity"},
		{json.Number("-1e-400"), "-0.0"},
		{math.MaxInt64, "9223372036854775807"},
		{uint64(math.MaxUint64), "18446744073709551615"},
		{0.1, "0.1"},
		{1e21, "1e+21"},
		{123456789.0, "123456789"}, // Go marshals integral floats without ".0"
	} {
		got, err := pythonJSON(tc.in)
		if err != nil {
			t.Errorf("pythonJSON(%#v): %v", tc.in, err)
			continue
		}
		if string(got) != tc.want {
			t.Errorf("pythonJSON(%#v) = %s, want %s", tc.in, got, tc.want)
		}
	}
}

func TestPythonJSONErrors(t *testing.T) {
	for _, in := range []any{
		math.NaN(),
		math.Inf(1),
		make(chan int),
		json.RawMessage(`{"a":`),
		json.Number("0x10"),
	} {
		if _, err := pythonJSON(in); err == nil {
			t.Errorf("pythonJSON(%#v): no error", in)
		}
		if _, err := pythonKeyHash(in); err == nil {
			t.Errorf("pythonKeyHash(%#v): no error", in)
		}
	}
}

// TestPythonJSONLoneSurrogate documents a known difference: Python keeps a
// lone surrogate escape such as "\ud800" as-is (json.dumps writes
// "\ud800"), while encoding/json decodes it to U+FFFD. Events with lone
// surrogates therefore hash differently in Go and Python.
func TestPythonJSONLoneSurrogate(t *testing.T) {
	got, err := pythonJSON(json.RawMessage(`"a\ud800b"`))
	if err != nil {
		t.Fatal(err)
	}
	if want := `"a\ufffdb"`; string(got) != want { // Python: "a\ud800b"
		t.Errorf("got %s, want %s", got, want)
	}
}

func FuzzPythonJSON(f *testing.F) {
	for _, vec := range loadPythonVectors(f) {
		f.Add([]byte(vec.Input))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		if !json.Valid(data) {
			_, _ = pythonJSON(json.RawMessage(data)) // must not panic
			return
		}
		out, err := pythonJSON(json.RawMessage(data))
		if err != nil {
			t.Fatalf("pythonJSON(%q): %v", data, err)
		}
		for _, c := range out {
			if c < 0x20 || c > 0x7e {
				t.Fatalf("non-printable-ASCII byte %#x in %q", c, out)
			}
		}
		if _, err := pythonKeyHash(json.RawMessage(data)); err != nil {
			t.Fatal(err)
		}
		in := decodeNumbers(t, data)
		if hasInf(in) {
			// Python writes ±Infinity, which is not JSON.
			if !bytes.Contains(out, []byte("Infinity")) {
				t.Fatalf("overflowing number but no Infinity in %q", out)
			}
			return
		}
		if !json.Valid(out) {
			t.Fatalf("invalid JSON %q from %q", out, data)
		}
		if !sameData(in, decodeNumbers(t, out)) {
			t.Fatalf("data changed:\n in %q\nout %q", data, out)
		}
		// The output is canonical: serializing it again is a no-op.
		again, err := pythonJSON(json.RawMessage(out))
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, out) {
			t.Fatalf("not idempotent:\n%q\n%q", out, again)
		}
	})
}

func decodeNumbers(t *testing.T, b []byte) any {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		t.Fatalf("decode %q: %v", b, err)
	}
	return v
}

func hasInf(v any) bool {
	switch x := v.(type) {
	case json.Number:
		if isIntText(string(x)) {
			return false
		}
		_, err := strconv.ParseFloat(string(x), 64)
		return err != nil
	case []any:
		for _, e := range x {
			if hasInf(e) {
				return true
			}
		}
	case map[string]any:
		for _, e := range x {
			if hasInf(e) {
				return true
			}
		}
	}
	return false
}

func isIntText(s string) bool { return !strings.ContainsAny(s, ".eE") }

// sameData compares decoded trees with Python's notion of equality of the
// loaded values: ints by value (arbitrary precision), floats as float64
// (including the sign of zero), and int never equal to float.
func sameData(a, b any) bool {
	switch x := a.(type) {
	case json.Number:
		y, ok := b.(json.Number)
		if !ok || isIntText(string(x)) != isIntText(string(y)) {
			return false
		}
		if isIntText(string(x)) {
			ix, okx := new(big.Int).SetString(string(x), 10)
			iy, oky := new(big.Int).SetString(string(y), 10)
			return okx && oky && ix.Cmp(iy) == 0
		}
		fx, errx := strconv.ParseFloat(string(x), 64)
		fy, erry := strconv.ParseFloat(string(y), 64)
		if errx != nil || erry != nil {
			return errors.Is(errx, strconv.ErrRange) && errors.Is(erry, strconv.ErrRange) && fx == fy
		}
		return fx == fy && math.Signbit(fx) == math.Signbit(fy)
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !sameData(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for k, e := range x {
			if f, ok := y[k]; !ok || !sameData(e, f) {
				return false
			}
		}
		return true
	default:
		return a == b
	}
}
