package appconfig

import (
	"strings"
	"testing"
)

// FuzzID: the name check never panics, and what it accepts is what AppConfig takes: 1 to 128
// bytes, no control character.
func FuzzID(f *testing.F) {
	for _, s := range []string{"orders", "prod", "", strings.Repeat("x", 129), "pr\nod", "\x7f", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkID(s) != nil {
			return
		}
		if s == "" || len(s) > 128 || strings.ContainsAny(s, "\x00\n\r\t\x7f") {
			t.Fatalf("accepted %q", s)
		}
	})
}
