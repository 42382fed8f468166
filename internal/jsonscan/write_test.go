package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
)

// FuzzAppendString: AppendString writes a JSON string that reads back as the one encoding/json
// writes (without HTML escaping: invalid bytes become U+FFFD in both), and as s itself when s
// is valid UTF-8.
func FuzzAppendString(f *testing.F) {
	for _, s := range []string{"", "plain", `"quoted" \ back`, "\x00\x1f\n\r\t\b\f", "<&>", "\u2028\u2029", "üñï 😀", "\xff\xfe bad", "\xed\xa0\x80"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := AppendString([]byte("x"), s)
		var want bytes.Buffer
		enc := json.NewEncoder(&want)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s); err != nil {
			t.Fatal(err)
		}
		var back, std string
		if err := json.Unmarshal(got[1:], &back); err != nil {
			t.Fatalf("%s does not read back: %v", got[1:], err)
		}
		if err := json.Unmarshal(want.Bytes(), &std); err != nil {
			t.Fatal(err)
		}
		if back != std {
			t.Fatalf("AppendString(%q) = %s reads %q; encoding/json's %s reads %q", s, got[1:], back, want.Bytes(), std)
		}
		if utf8.ValidString(s) && back != s {
			t.Fatalf("read back %q, want %q", back, s)
		}
	})
}
