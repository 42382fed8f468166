package parameters

import (
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzJSONErrors: decoding any text into a struct never panics, and an error never quotes
// the text (a value that reaches an error message reaches the logs).
func FuzzJSONErrors(f *testing.F) {
	for _, s := range []string{`{"username":"u","password":"p"}`, `{"port":"secret-text-here"}`, `[1,2`, `"just a string"`, ``, `{"username":12345678901234567890}`, `{"port":99999999999999999999999}`} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		var v struct {
			Username string `json:"username"`
			Port     int    `json:"port"`
			Nested   struct {
				Flag bool `json:"flag"`
			} `json:"nested"`
		}
		err := decodeJSON(s, &v)
		if err == nil {
			return
		}
		// Short texts may be words of the message itself ("number", "string").
		if len(s) >= 12 && utf8.ValidString(s) && strings.Contains(err.Error(), s) {
			t.Fatalf("the error %q quotes the text", err)
		}
		for _, frag := range []string{"secret-text", "12345678901234567890", "99999999999999999999999"} {
			if strings.Contains(s, frag) && strings.Contains(err.Error(), frag) {
				t.Fatalf("the error %q quotes %q of the text", err, frag)
			}
		}
	})
}
