package jsondup

import (
	"bytes"
	"encoding/json"
	"regexp"
	"strings"
	"testing"
)

// FuzzDuplicateMembers feeds arbitrary bytes to checkDuplicateMembers, which klt runs on every
// JSON file it reads with encoding/json. It must never panic; input that is not JSON is left to
// the caller (nil); and for JSON it refuses exactly the documents that lose a member when
// decoded (encoding/json keeps the last of two), counted here the other way: the members of the
// document against those of its decoded value. The seeds nest past the depth limit and repeat a
// member thousands of times. Run with
//
//	go test ./cmd/klt -run '^$' -fuzz FuzzDuplicateMembers -fuzztime 1m
func FuzzDuplicateMembers(f *testing.F) {
	for _, seed := range []string{
		`{"a":1,"a":2}`,
		`{"a":{"b":1,"b":1}}`,
		`[{"a":1},{"a":1}]`,
		`{"a":1,"A":2}`,
		`{"\u0061":1,"a":2}`,
		`{"a":1,"b":{"a":2}}`,
		strings.Repeat(`{"a":`, 10001) + "1" + strings.Repeat("}", 10001),
		strings.Repeat("[", 9999) + strings.Repeat("]", 9999),
		"{" + strings.Repeat(`"k":0,`, 5000) + `"k":0}`,
		`{"a":1,}`,
		"",
	} {
		f.Add([]byte(seed))
	}
	text := regexp.MustCompile(`^in\.json:\d+:\d+: (member ".*" given twice in one object \(first at \d+:\d+\)|nested more than 10000 deep)$`)
	f.Fuzz(func(t *testing.T, data []byte) {
		err := CheckDuplicateMembers("in.json", data)
		if !json.Valid(data) {
			// encoding/json refuses nesting past 10,000 too; the check says so first.
			if err != nil && !strings.HasSuffix(err.Error(), "nested more than 10000 deep") {
				t.Fatalf("not JSON, and checkDuplicateMembers = %v; want nil (the caller's decoder words the error)", err)
			}
			return
		}
		if err != nil && !text.MatchString(err.Error()) {
			t.Fatalf("error %q has the wrong form", err)
		}
		if err != nil && strings.Contains(err.Error(), "nested more than") {
			return // encoding/json refuses it too
		}
		var v any
		if json.Unmarshal(data, &v) != nil {
			return
		}
		lost := members(data) != countMembers(v)
		if lost != (err != nil) {
			t.Fatalf("decoding loses a member: %v; checkDuplicateMembers = %v", lost, err)
		}
	})
}

// members counts the object members of the JSON document data, token by token.
func members(data []byte) int {
	d := json.NewDecoder(bytes.NewReader(data))
	n := 0
	var inObject []bool // per open container, and whether the next token is a member name
	expectKey := false
	for {
		tok, err := d.Token()
		if err != nil {
			return n
		}
		if expectKey {
			if _, ok := tok.(string); ok {
				n++
				expectKey = false
				continue
			}
		}
		switch tok {
		case json.Delim('{'):
			inObject = append(inObject, true)
		case json.Delim('['):
			inObject = append(inObject, false)
		case json.Delim('}'), json.Delim(']'):
			inObject = inObject[:len(inObject)-1]
		}
		// After anything but a member name, inside an object, a member name comes next.
		expectKey = len(inObject) > 0 && inObject[len(inObject)-1]
	}
}

// countMembers counts the members of the objects in v, a decoded JSON value.
func countMembers(v any) int {
	switch v := v.(type) {
	case map[string]any:
		n := len(v)
		for _, e := range v {
			n += countMembers(e)
		}
		return n
	case []any:
		n := 0
		for _, e := range v {
			n += countMembers(e)
		}
		return n
	}
	return 0
}
