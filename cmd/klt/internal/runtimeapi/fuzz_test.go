package runtimeapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"
	"unicode/utf8"
)

// FuzzParseErrorBody checks that any error body a runtime posts becomes an InvokeError with a
// type and valid UTF-8, never a panic, and that a well-formed body's fields come back as sent.
func FuzzParseErrorBody(f *testing.F) {
	f.Add([]byte(`{"errorMessage":"boom","errorType":"errorString"}`), "")
	f.Add([]byte(`{"errorMessage":"x","errorType":"runtime.Error","stackTrace":[{"path":"a.go","line":3,"label":"f"}]}`), "")
	f.Add([]byte(`not json at all`), "Function.Custom")
	f.Add([]byte(``), "")
	f.Add([]byte(`{"errorMessage":null,"errorType":7}`), "Runtime.Unknown")
	f.Fuzz(func(t *testing.T, body []byte, header string) {
		e := parseErrorBody(body, header)
		if e.Type == "" || !utf8.ValidString(e.Type) || !utf8.ValidString(e.Message) {
			t.Fatalf("parseErrorBody(%q, %q) = %+v", body, header, e)
		}
		if len(e.Type) > maxErrorText+64 || len(e.Message) > maxErrorText+64 {
			t.Fatalf("parseErrorBody kept %d and %d bytes", len(e.Type), len(e.Message))
		}
		// A body built from a message and a type gives them back.
		msg := string(body)
		if !utf8.ValidString(msg) || !utf8.ValidString(header) || len(msg) > maxErrorText || len(header) > maxErrorText {
			return
		}
		wellFormed, err := json.Marshal(map[string]string{"errorMessage": msg, "errorType": header})
		if err != nil {
			t.Fatal(err)
		}
		e = parseErrorBody(wellFormed, "Other.Type")
		wantType := header
		if wantType == "" {
			wantType = "Other.Type"
		}
		if e.Message != msg || e.Type != wantType {
			t.Fatalf("parseErrorBody(%s) = %+v, want %q: %q", wellFormed, e, wantType, msg)
		}
	})
}

// FuzzSplitLines checks the log line splitter against a plain split on '\n', with buffers and
// limits small enough for the long-line path to run.
func FuzzSplitLines(f *testing.F) {
	f.Add([]byte("one\ntwo\n"), uint8(16), uint8(8))
	f.Add([]byte("a line much longer than the buffer\nshort\nlast without newline"), uint8(16), uint8(100))
	f.Add([]byte("a line much longer than the limit\n\n\nx"), uint8(16), uint8(5))
	f.Add([]byte(""), uint8(16), uint8(1))
	f.Fuzz(func(t *testing.T, data []byte, bufSize, limit uint8) {
		size, lim := 16+int(bufSize%64), 1+int(limit)
		var got [][]byte
		if err := splitLines(bytes.NewReader(data), size, lim, func(l []byte) { got = append(got, l) }); err != nil {
			t.Fatal(err)
		}
		want := bytes.Split(data, []byte("\n"))
		if len(want[len(want)-1]) == 0 {
			want = want[:len(want)-1] // the input ended with a newline (or was empty)
		}
		if len(got) != len(want) {
			t.Fatalf("%d lines, want %d (buf %d, limit %d): %q", len(got), len(want), size, lim, got)
		}
		for i, w := range want {
			if len(w) <= lim {
				if !bytes.Equal(got[i], w) {
					t.Fatalf("line %d = %q, want %q", i, got[i], w)
				}
				continue
			}
			want := fmt.Sprintf("%s... [runtimeapi: %d bytes of this line cut]", w[:lim], len(w)-lim)
			if string(got[i]) != want {
				t.Fatalf("line %d = %q, want %q", i, got[i], want)
			}
		}
	})
}
