package jsonscan

import (
	"encoding/json"
	"errors"
	"strconv"
	"strings"
	"testing"
)

// readAll reads data as one JSON document with a Reader, as the decoders do: a value, then
// nothing but whitespace.
func readAll(data []byte) error {
	r := Reader{Data: data}
	r.SkipWS()
	if err := r.SkipValue(0); err != nil {
		return err
	}
	if r.SkipWS(); r.Pos != len(data) {
		return r.SyntaxErr("after top-level value")
	}
	return nil
}

// agreeWithEncodingJSON fails t unless Reader refuses data exactly when encoding/json does, at
// the same byte, in the same words but in two cases where the words are clearer: where the input
// ends, "unexpected end of JSON input" and where in the grammar (json.Unmarshal says that, or
// "invalid character ' '" for the space it reads past the end), and a byte from 0x80 up is
// "byte 0xNN" (json.Unmarshal takes it for a Latin-1 character). Nesting deeper than MaxDepth
// is DepthMessage.
func agreeWithEncodingJSON(t *testing.T, data []byte) {
	t.Helper()
	err := readAll(data)
	var v json.RawMessage // syntax only: no number is converted
	want := json.Unmarshal(data, &v)
	if (err == nil) != (want == nil) {
		t.Fatalf("%.80q: Reader %v, encoding/json %v", data, err, want)
	}
	if err == nil {
		return
	}
	var e *Error
	if !errors.As(err, &e) || e.Offset < 0 || e.Offset > len(data) {
		t.Fatalf("%.80q: error %#v, want an *Error within the input", data, err)
	}
	var se *json.SyntaxError
	switch {
	case !errors.As(want, &se):
		t.Fatalf("%.80q: encoding/json's error %v is no *json.SyntaxError", data, want)
	case strings.Contains(se.Error(), "exceeded max depth"):
		if e.Msg != DepthMessage() {
			t.Fatalf("%.80q: Reader %q, encoding/json %q", data, e.Msg, se.Error())
		}
	case se.Error() == "unexpected end of JSON input" || e.Offset == len(data) && strings.HasPrefix(se.Error(), "invalid character ' ' "):
		if !strings.HasPrefix(e.Msg, "unexpected end of JSON input ") || e.Offset != len(data) {
			t.Fatalf("%.80q: Reader %q at %d, encoding/json %q", data, e.Msg, e.Offset, se.Error())
		}
	case e.Msg != latin1(se.Error(), data[e.Offset]) || int64(e.Offset)+1 != se.Offset:
		t.Fatalf("%.80q: Reader %q at %d, encoding/json %q after %d", data, e.Msg, e.Offset, se.Error(), se.Offset)
	}
}

// latin1 returns encoding/json's message with its quoting of c, when c is from 0x80 up, as
// QuoteChar's.
func latin1(msg string, c byte) string {
	if c < 0x80 {
		return msg
	}
	q := strconv.Quote(string(rune(c))) // as encoding/json quotes it
	return strings.Replace(msg, "'"+q[1:len(q)-1]+"'", QuoteChar(c), 1)
}

var readerCases = []string{
	`{}`, `[]`, `{"a":[1,-2.5e+3,true,false,null,"x\u00e9\n"]}`, ` 1 `, `"\ud800"`, "\"\xff\"",
	`[1,}`, `{"a" 1}`, `{"a":1 "b":2}`, `{1:2}`, `[1 2]`, `tru`, `nul`, `-`, `01`, `1.`, `1e`, `1e+`,
	`"\q"`, `"\u12g4"`, "\"a\tb\"", `"abc`, `{"a":`, `[`, `{`, `{"a"`, `[1,`, `{} x`, `{}}`,
	"\x00", "\xff", `'a'`, `[1,]`, `{"a":1,}`, "\ufeff{}",
	`{"x":` + strings.Repeat("[", MaxDepth) + strings.Repeat("]", MaxDepth) + `}`,
	`{"x":` + strings.Repeat("[", MaxDepth-1) + strings.Repeat("]", MaxDepth-1) + `}`,
	strings.Repeat(`{"a":`, MaxDepth+1) + "1" + strings.Repeat("}", MaxDepth+1),
}

// Reader refuses what encoding/json refuses, in encoding/json's words, at the byte it names.
func TestReaderAgreesWithEncodingJSON(t *testing.T) {
	for _, c := range readerCases {
		agreeWithEncodingJSON(t, []byte(c))
	}
}

// FuzzReader holds Reader to encoding/json on any input (see agreeWithEncodingJSON).
//
// Run: go test -run '^$' -fuzz '^FuzzReader$' -fuzztime 1m ./internal/jsonscan/
func FuzzReader(f *testing.F) {
	for _, c := range readerCases {
		f.Add([]byte(c))
	}
	f.Add([]byte(`{"` + strings.Repeat("k", 1<<16) + `":[` + strings.Repeat(`"\u00e9x",`, 1<<12) + `1]}`))
	f.Fuzz(func(t *testing.T, data []byte) { agreeWithEncodingJSON(t, data) })
}

// A Reader's Failer makes its errors; Got quotes the offending value.
func TestReaderFailer(t *testing.T) {
	r := Reader{Data: []byte(`{"a":{"b":[1,2]},"c":x}`), Failer: pathFailer{"$.c"}}
	err := r.Object(1, func(n Name) error {
		if string(r.NameBytes(n)) == "a" {
			if got := r.Got(r.Pos); got != `{"b":[1,2]}` {
				t.Errorf("Got = %q", got)
			}
		}
		return r.SkipValue(1)
	})
	if err == nil || err.Error() != "$.c: invalid character 'x' looking for beginning of value" {
		t.Errorf("err = %v", err)
	}
}

type pathFailer struct{ path string }

func (f pathFailer) Fail(off int, msg string) error { return errors.New(f.path + ": " + msg) }
