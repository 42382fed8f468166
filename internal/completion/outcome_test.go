package completion

import (
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// The outcome reads back what it wrote, and any stored result is an error exactly when it
// was one for the struct{} result package batch gave Do before outcomes: a replay of an entry
// that another function completed reads as before.
func FuzzOutcome(f *testing.F) {
	for _, s := range []string{`{"outcome":"sunk"}`, `{}`, `null`, `"ok"`, `[1]`, `{"outcome":5}`, `{"outcome":"sunk","x":1}`,
		`{"outcome":"\ud800"}`, `{"outcome":"a","outcome":"b"}`, `{`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, stored string) {
		var o Outcome
		err := json.Unmarshal([]byte(stored), &o)
		var before struct{}
		if errBefore := json.Unmarshal([]byte(stored), &before); (err == nil) != (errBefore == nil) {
			t.Errorf("%q: Outcome error %v, struct{} error %v", stored, err, errBefore)
		}
		b, err := json.Marshal(Outcome(stored))
		if err != nil {
			t.Fatalf("Marshal(Outcome(%q)): %v", stored, err)
		}
		var back Outcome
		// encoding/json writes invalid UTF-8 as U+FFFD; batch's outcomes are ASCII constants.
		if err := json.Unmarshal(b, &back); err != nil || (back != Outcome(stored) && utf8.ValidString(stored)) {
			t.Errorf("Outcome(%q) wrote %s, read back %q, %v", stored, b, back, err)
		}
	})
}
