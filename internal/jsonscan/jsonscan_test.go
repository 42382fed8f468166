package jsonscan

import (
	"bytes"
	"encoding/json"
	"testing"
	"unicode/utf8"
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

func TestString(t *testing.T) {
	for _, c := range []struct {
		in    string
		end   int
		flags StringFlags
		err   StringError
	}{
		{`"abc"x`, 5, 0, StringOK},
		{`""`, 2, 0, StringOK},
		{`"a\"b"`, 6, Escaped, StringOK},
		{`"\u00e9"`, 8, Escaped, StringOK},
		{"\"é\"", 4, NonASCII, StringOK},
		{"\"\xff\"", 3, NonASCII | BadUTF8, StringOK},
		{`"abc`, 4, 0, StringEOF},
		{"\"a\nb\"", 2, 0, StringControl},
		{`"a\x"`, 2, Escaped, StringBadEscape},
		{`"a\`, 2, Escaped, StringBadEscape},
		{`"\u12g4"`, 1, Escaped, StringBadUnicode},
		{`"\u12`, 1, Escaped, StringBadUnicode},
	} {
		end, flags, err := String([]byte(c.in), 0)
		if end != c.end || flags != c.flags || err != c.err {
			t.Errorf("String(%q) = %d, %b, %d; want %d, %b, %d", c.in, end, flags, err, c.end, c.flags, c.err)
		}
	}
}

func TestNumber(t *testing.T) {
	for _, c := range []struct {
		in  string
		end int
		err NumberError
	}{
		{"0", 1, NumberOK}, {"-0", 2, NumberOK}, {"123,", 3, NumberOK}, {"01", 1, NumberOK},
		{"1.5e+10]", 7, NumberOK}, {"-", 1, NumberNoDigits}, {"-a", 1, NumberNoDigits},
		{"1.", 2, NumberNoFraction}, {"1.e5", 2, NumberNoFraction}, {"1e", 2, NumberNoExponent},
		{"1e+", 3, NumberNoExponent}, {"2E-7", 4, NumberOK},
	} {
		end, err := Number([]byte(c.in), 0)
		if end != c.end || err != c.err {
			t.Errorf("Number(%q) = %d, %d; want %d, %d", c.in, end, err, c.end, c.err)
		}
	}
}

func TestLiteralAndSpace(t *testing.T) {
	if i, ok := Literal([]byte("null,"), 0, "null"); !ok || i != 4 {
		t.Errorf("Literal(null) = %d, %v", i, ok)
	}
	if i, ok := Literal([]byte("nul"), 0, "null"); ok || i != 3 {
		t.Errorf("Literal(nul) = %d, %v", i, ok)
	}
	if i, ok := Literal([]byte("nxll"), 0, "null"); ok || i != 1 {
		t.Errorf("Literal(nxll) = %d, %v", i, ok)
	}
	if i := SkipWS([]byte(" \t\r\n x"), 0); i != 5 {
		t.Errorf("SkipWS = %d", i)
	}
	if i := SkipWS([]byte("\v"), 0); i != 0 {
		t.Errorf("SkipWS skips a vertical tab")
	}
}

// FuzzString checks String and AppendUnescaped against encoding/json: the same inputs are
// valid strings, they end at the same place and decode to the same text.
func FuzzString(f *testing.F) {
	for _, s := range []string{`"abc"`, `"\u00e9\ud83d\ude00"`, "\"\xff\"", `"\x"`, `"a`, "\"\x01\"", `"\/"`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		if len(d) == 0 || d[0] != '"' {
			return
		}
		end, flags, serr := String(d, 0)
		// encoding/json's verdict on the prefix that String says is one string.
		var want string
		werr := json.Unmarshal(d[:end], &want)
		if serr != StringOK {
			// No prefix of d is a valid string: encoding/json must reject the whole of d too.
			var s string
			if json.Unmarshal(d, &s) == nil {
				t.Fatalf("String(%q) = error %d at %d, encoding/json accepts it", d, serr, end)
			}
			return
		}
		if werr != nil {
			t.Fatalf("String(%q) ends at %d, encoding/json rejects %q: %v", d, end, d[:end], werr)
		}
		raw := d[1 : end-1]
		got := raw
		if flags.NeedsDecoding() {
			got = AppendUnescaped(nil, raw)
		}
		if string(got) != want {
			t.Fatalf("text of %q = %q, encoding/json %q", d[:end], got, want)
		}
		if flags&Escaped == 0 && !bytes.Equal(raw, got) && utf8.Valid(raw) {
			t.Fatalf("%q decoded differently without escapes", raw)
		}
	})
}

// FuzzNumber checks Number against encoding/json.
func FuzzNumber(f *testing.F) {
	for _, s := range []string{"0", "-1.5e3", "01", "1.", "-", "1e+", "123456789012345678901234"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, d []byte) {
		end, err := Number(d, 0)
		valid := json.Valid(d) && len(d) > 0 && (d[0] == '-' || d[0] >= '0' && d[0] <= '9') && !IsSpace(d[len(d)-1])
		whole := err == NumberOK && end == len(d)
		if valid != whole {
			t.Fatalf("Number(%q) = %d, %d; encoding/json valid: %v", d, end, err, valid)
		}
	})
}
