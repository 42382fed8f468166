package kafkaevent

import (
	"bytes"
	"encoding/json"
	"errors"
	"strings"
	"testing"
)

func TestMarshalWritesRawOfBadRecords(t *testing.T) {
	raw := []byte(`{"topic":"t","partition":0,"offset":7,"timestamp":1,"timestampType":"CREATE_TIME","value":"%%%","headers":[]}`)
	e := &Event{Source: SourceMSK, Partitions: []Partition{{Topic: "t", Number: 0, Records: []Record{
		{Topic: "t", Partition: 0, Offset: 6, Value: []byte("ok")},
		{Topic: "t", Partition: 0, Offset: 7, Err: &Error{Prefix: "kafkaevent", Path: `records["t-0"][1].value`, Msg: "bad base64"}, raw: raw},
		// Err without raw (a hand-made record): written from its fields.
		{Topic: "t", Partition: 0, Offset: 8, Err: errors.New("x"), Value: []byte("v")},
	}}}}
	data, err := e.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(data, append([]byte{','}, append(raw, ',')...)) {
		t.Errorf("raw record not written verbatim:\n%s", data)
	}
	if !bytes.Contains(data, []byte(`"offset":8,"timestamp":-1,"timestampType":"","key":null,"value":"dg==","headers":[]}`)) {
		t.Errorf("record with Err and no raw not written from fields:\n%s", data)
	}
	if !json.Valid(data) {
		t.Errorf("invalid JSON: %s", data)
	}
	// raw is ignored when Err is nil.
	e.Partitions[0].Records[1].Err = nil
	data, _ = e.MarshalJSON()
	if bytes.Contains(data, []byte("%%%")) {
		t.Errorf("raw written for a record without Err:\n%s", data)
	}
}

// jsonString is what encoding/json writes for s, without HTML escaping.
func jsonString(s string) string {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(buf.String(), "\n")
}

func TestAppendStringMatchesEncodingJSON(t *testing.T) {
	for _, s := range []string{
		"", "plain", `"quoted"`, `back\slash`, "\b\f\n\r\t", "\x00\x01\x1f\x7f", "<&>", "ë😀",
		"\u2028\u2029", "bad\xffutf8\xc3", "\xed\xa0\x80", "mixed\x00ë\xfe\u2029end",
	} {
		if got, want := string(appendString(nil, s)), jsonString(s); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	}
}

func FuzzAppendString(f *testing.F) {
	f.Add("a\"b\\c\n\x00\u2028\xff")
	f.Fuzz(func(t *testing.T, s string) {
		if got, want := string(appendString(nil, s)), jsonString(s); got != want {
			t.Errorf("appendString(%q) = %s, want %s", s, got, want)
		}
	})
}
