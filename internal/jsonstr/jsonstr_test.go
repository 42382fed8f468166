package jsonstr

import (
	"encoding/json"
	"testing"
)

// AppendUnescaped decodes as encoding/json does, escapes, surrogates and bad UTF-8 included.
func TestAppendUnescapedMatchesEncodingJSON(t *testing.T) {
	for _, body := range []string{
		``, `plain`, `\"\\\/\b\f\n\r\t`, `caf\u00e9`, `\ud83d\ude00`, `\ud800`, `\ud800\u0041`,
		`\udc00\ud800`, "bad\xffbyte", "\xe2\x82", `mixed \u00e9 é \n`,
	} {
		var want string
		if err := json.Unmarshal([]byte(`"`+body+`"`), &want); err != nil {
			t.Fatalf("%q: %v", body, err)
		}
		if got := string(AppendUnescaped(nil, []byte(body))); got != want {
			t.Errorf("AppendUnescaped(%q) = %q, want %q", body, got, want)
		}
	}
}
