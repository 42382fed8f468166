package jsonscan

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

func TestFindDuplicates(t *testing.T) {
	for _, c := range []struct {
		in   string
		want []string // "PATH@OFFSET(first FIRST)"
	}{
		{`{}`, nil},
		{`{"a":1,"b":2}`, nil},
		{`{"a":1,"a":2}`, []string{"a@7(first 1)"}},
		{`{"a":1, "a":2 ,"a" :3}`, []string{"a@8(first 1)", "a@15(first 1)"}},
		{`[{"x":{"y b":[],"y b":{}}}]`, []string{`[0].x["y b"]@16(first 7)`}},
		{`{"\u0061":1,"a":2}`, []string{"a@12(first 1)"}},
		{`{"a":{"a":1},"b":{"a":1}}`, nil},
		{`{"":1,"":2}`, []string{`[""]@6(first 1)`}},
		{`{"Records":[{"body":1,"Body":2}]}`, nil}, // differ as map keys
	} {
		var got []string
		err := FindDuplicates([]byte(c.in), nil, func(d Duplicate) bool {
			got = append(got, d.Path().String()+"@"+itoa(d.Offset)+"(first "+itoa(d.First)+")")
			return true
		})
		if err != nil || strings.Join(got, " ") != strings.Join(c.want, " ") {
			t.Errorf("FindDuplicates(%s) = %q, %v; want %q", c.in, got, err, c.want)
		}
	}
}

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

// field maps names to fields: "body" and "Body" are one field, the names of other objects
// their own; FindDuplicates stops when found says so.
func TestFindDuplicatesField(t *testing.T) {
	fold := func(obj Path, name string) (string, bool) {
		if len(obj) == 2 && obj[0].Name == "Records" {
			return strings.ToLower(name), true
		}
		return name, true
	}
	in := `{"Records":[{"body":1,"x":{"Body":1,"body":2},"Body":2,"BODY":3}]}`
	var got []string
	err := FindDuplicates([]byte(in), fold, func(d Duplicate) bool {
		got = append(got, d.Path().String()+"="+d.Field)
		return false
	})
	if err != nil || len(got) != 1 || got[0] != "Records[0].Body=body" {
		t.Errorf("got %q, %v", got, err)
	}
}

// Input that is not JSON ends the walk with ErrNotJSON, and nesting beyond MaxDepth with an
// *Error at the container that goes too deep; the duplicates before are found.
func TestFindDuplicatesErrors(t *testing.T) {
	for _, in := range []string{`{"a":1,"a":2,`, `{"a":1,"a":2} x`, `{"a":1,"a":2} {}`, `{"a":1,"a":2,"b":tru}`} {
		n := 0
		err := FindDuplicates([]byte(in), nil, func(Duplicate) bool { n++; return true })
		if !errors.Is(err, ErrNotJSON) || n != 1 {
			t.Errorf("FindDuplicates(%s) = %d found, %v; want 1, ErrNotJSON", in, n, err)
		}
	}
	deep := `{"a":1,"a":2,"x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`
	if err := FindDuplicates([]byte(deep), nil, func(Duplicate) bool { return true }); err == nil {
		t.Errorf("nesting of %d: no error", MaxDepth+1)
	} else if e, ok := err.(*Error); !ok || e.Offset != 17+MaxDepth-1 || e.Msg != DepthMessage() {
		t.Errorf("nesting of %d: %v", MaxDepth+1, err)
	}
	ok := `{"x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`
	if err := FindDuplicates([]byte(ok), nil, func(Duplicate) bool { return true }); err != nil {
		t.Errorf("nesting of %d: %v", MaxDepth, err)
	}
}

// FuzzFindDuplicates holds FindDuplicates to encoding/json and to Reader: it fails exactly on
// input that json.Valid refuses; on valid input, it reports as many duplicates as Reader finds
// names given again in their object, and each one's two names are where it says, and equal.
//
// Run: go test -run '^$' -fuzz '^FuzzFindDuplicates$' -fuzztime 1m ./internal/jsonscan/
func FuzzFindDuplicates(f *testing.F) {
	for _, s := range []string{
		`{}`, `{"a":1,"a":2}`, `[{"x":{"y":[],"y":{}}}]`, `{"\u0061":1,"a":2}`, `{"a":1,"a":2,`, `{"a":1} x`,
		`{"a":` + strings.Repeat(`{"a":1,"a":`, 3000) + "0" + strings.Repeat("}", 3000) + "}",
		`{"x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
		`{"x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`,
		`{` + strings.Repeat(`"k":null,`, 5000) + `"k":0}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var dups []Duplicate
		err := FindDuplicates(data, nil, func(d Duplicate) bool { dups = append(dups, d); return true })
		if valid := json.Valid(data); valid != (err == nil) {
			t.Fatalf("json.Valid = %v, FindDuplicates: %v", valid, err)
		}
		for _, d := range dups {
			if d.First >= d.Offset || name(t, data, d.First) != d.Name || name(t, data, d.Offset) != d.Name {
				t.Fatalf("duplicate %+v: names not where it says", d)
			}
		}
		if err != nil {
			return
		}
		if want := repeats(t, data); want != len(dups) {
			t.Fatalf("Reader finds %d names given again in their object, FindDuplicates %d", want, len(dups))
		}
	})
}

// name decodes the member name whose opening quote is at data[off].
func name(t *testing.T, data []byte, off int64) string {
	r := Reader{Data: data, Pos: int(off)}
	s, err := r.Str()
	if err != nil {
		t.Fatalf("no name at %d: %v", off, err)
	}
	return s
}

// repeats counts, with Reader, the members of the objects in data whose name their object
// has given before.
func repeats(t *testing.T, data []byte) int {
	r := Reader{Data: data}
	n := 0
	var value func(depth int) error
	value = func(depth int) error {
		r.SkipWS()
		switch {
		case r.Pos < len(data) && data[r.Pos] == '{':
			seen := map[string]bool{}
			return r.Object(depth+1, func(m Name) error {
				name := string(r.NameBytes(m))
				if seen[name] {
					n++
				}
				seen[name] = true
				return value(depth + 1)
			})
		case r.Pos < len(data) && data[r.Pos] == '[':
			return r.Array(depth+1, func(int) error { return value(depth + 1) })
		}
		return r.SkipValue(depth)
	}
	if err := value(0); err != nil {
		t.Fatalf("Reader refuses valid JSON: %v", err)
	}
	return n
}
