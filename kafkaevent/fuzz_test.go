package kafkaevent_test

import (
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// FuzzParse checks, on any input: Parse never panics; its fast path agrees with its general
// path; every error is an *Error that names a path; no known member given twice is accepted
// (checkDuplicates); every event it returns writes back (MarshalJSON) to a payload that parses
// to an equal event. The seed corpus is testdata/fuzz/FuzzParse, the fixture events,
// duplicateSeeds and limitSeeds.
func FuzzParse(f *testing.F) {
	files, _ := filepath.Glob("../testdata/events/*.json")
	more, _ := filepath.Glob("testdata/fixtures/*/*.json")
	for _, file := range append(files, more...) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, data := range duplicateSeeds() {
		f.Add(data)
	}
	f.Add([]byte(msk(rec(`,"headers":[{"h":[1]},{"h":[2],"h":[3]}],"x":1,"x":2`)))) // repeats that are no duplicates
	for _, data := range limitSeeds() {
		f.Add(data)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, data)
		ev, err := kafkaevent.Parse(data)
		checkDuplicates(t, data, ev, err)
		if err != nil {
			var e *kafkaevent.Error
			if !errors.As(err, &e) || e.Path == "" {
				t.Fatalf("error without a path: %#v", err)
			}
			if e.Offset < 0 || e.Offset > len(data) {
				t.Fatalf("error offset %d outside input of %d bytes", e.Offset, len(data))
			}
			oneLine(t, err)
			return
		}
		for r := range ev.All() {
			if r.Err != nil {
				var e *kafkaevent.Error
				if !errors.As(r.Err, &e) || e.Path == "" {
					t.Fatalf("record error without a path: %#v", r.Err)
				}
				oneLine(t, r.Err)
			}
		}
		out, err := ev.MarshalJSON()
		if err != nil {
			t.Fatalf("MarshalJSON: %v", err)
		}
		again, err := kafkaevent.Parse(out)
		if err != nil {
			t.Fatalf("Parse(MarshalJSON(e)): %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalize(ev), normalize(again)) {
			t.Fatalf("round trip changed the event\nbefore: %+v\nafter:  %+v\njson: %s", ev, again, out)
		}
	})
}

// oneLine fails unless err's message is printable text on one line: whatever the payload holds,
// it is quoted with escapes, never copied raw.
func oneLine(t *testing.T, err error) {
	t.Helper()
	msg := err.Error()
	if !utf8.ValidString(msg) {
		t.Fatalf("error message is not valid UTF-8: %q", msg)
	}
	for _, r := range msg {
		if !strconv.IsPrint(r) || r == '\ufeff' {
			t.Fatalf("error message holds %U: %q", r, msg)
		}
	}
}

// normalize clears what a round trip may legitimately change: the byte offsets inside record
// errors, since the written payload is laid out differently from the input.
func normalize(ev *kafkaevent.Event) *kafkaevent.Event {
	for r := range ev.All() {
		var e *kafkaevent.Error
		if errors.As(r.Err, &e) {
			c := *e
			c.Offset = 0
			r.Err = &c
		}
	}
	return ev
}

// limitSeeds are payloads at the limits, for FuzzParse's corpus: unknown members nested as deep
// as jsonscan.MaxDepth allows and one level deeper, in a record and in the envelope, and a
// large event (5,000 records, about 1 MB).
func limitSeeds() [][]byte {
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	recs := make([]string, 5000)
	for i := range recs {
		recs[i] = rec(`,"key":"` + b64(strconv.Itoa(i)) + `","value":"` + b64(strings.Repeat("v", i%300)) + `","headers":[{"h":[1,2]}]`)
	}
	return [][]byte{
		[]byte(msk(rec(`,"x":` + nest(jsonscan.MaxDepth-4)))), // the record is the 4th container
		[]byte(msk(rec(`,"x":` + nest(jsonscan.MaxDepth-3)))),
		[]byte(`{"eventSource":"aws:kafka","x":` + strings.Repeat(`{"a":`, jsonscan.MaxDepth-1) + "1" + strings.Repeat("}", jsonscan.MaxDepth-1) + `,"records":{}}`),
		[]byte(`{"eventSource":"aws:kafka","x":` + strings.Repeat(`{"a":`, jsonscan.MaxDepth) + "1" + strings.Repeat("}", jsonscan.MaxDepth) + `,"records":{}}`),
		[]byte(msk(recs...)),
	}
}

// Unknown members nest as deep as encoding/json reads, and no deeper: Parse agrees with
// aws-lambda-go at jsonscan.MaxDepth.
func TestLimitSeeds(t *testing.T) {
	for i, data := range limitSeeds() {
		_, err := kafkaevent.Parse(data)
		if fail := i == 1 || i == 3; (err != nil) != fail {
			t.Errorf("seed %d: Parse error %v, want one: %v", i, err, fail)
		}
		agree(t, data)
	}
}
