package dynamodb

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzResultValue: a result stored in FormatTypeScript (JSON text to a DynamoDB value) reads
// back as the same JSON data, and neither direction panics.
func FuzzResultValue(f *testing.F) {
	for _, s := range []string{`{"a":[1,"x",true,null,{"b":-1.5e-3}]}`, `"sent"`, `""`, `0`, `[]`, `{}`, `null`, `{"a":1,"a":2}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		v, err := jsonToAttr(text)
		if !json.Valid([]byte(text)) {
			if err == nil {
				t.Fatalf("jsonToAttr(%q) accepted text that is not JSON", text)
			}
			return
		}
		if err != nil {
			t.Fatalf("jsonToAttr(%q): %v", text, err)
		}
		back, err := attrToJSON(v)
		if err != nil {
			t.Fatalf("attrToJSON(jsonToAttr(%q)): %v", text, err)
		}
		var want, got any
		if json.Unmarshal([]byte(text), &want) != nil {
			return // numbers beyond float64
		}
		if err := json.Unmarshal(back, &got); err != nil || !reflect.DeepEqual(want, got) {
			t.Fatalf("%q read back as %q (%v)", text, back, err)
		}
	})
}
