package codec

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// FuzzCheckSchema: whatever the text, CheckSchema measures it without panicking or recursing
// without end, in each format, and returns nil, a *SchemaLimitError or an error saying why the
// text cannot be measured. An Avro schema it passes has its decoder built by the codec
// without a hang (the fuzzer's timeout would say so). The seeds are issue 27's expanding
// schemas (Avro, JSON Schema, Protobuf), recursive ones, and schemas nested and branching past
// every limit.
func FuzzCheckSchema(f *testing.F) {
	for _, s := range []string{
		expandingAvro(12), expandingAvro(24), expandingAvro(26),
		`{"type":"record","name":"L","fields":[{"name":"next","type":["null","L"]}]}`,
		`{"type":"record","name":"Loop","fields":[{"name":"self","type":"Loop"}]}`,
		strings.Repeat(`{"type":"array","items":`, 300) + `"int"` + strings.Repeat("}", 300),
		`["null","int","string",{"type":"enum","name":"E","symbols":["A"]}]`,
	} {
		f.Add(byte(0), s)
	}
	for _, s := range []string{
		expandingJSONSchema(10), expandingJSONSchema(22),
		`{"$defs":{"n":{"properties":{"next":{"$ref":"#/$defs/n"}}}},"$ref":"#/$defs/n"}`,
		`{"$id":"http://e.x/a","$defs":{"b":{"$id":"b","$anchor":"c","$ref":"a#c"}},"$ref":"b"}`,
		strings.Repeat(`{"not":`, 300) + "{}" + strings.Repeat("}", 300),
		`{"oneOf":[` + strings.Repeat(`{"$ref":"#"},`, 100) + `{}]}`,
		`{"$ref":"#/definitions/%41","definitions":{"A":{}}}`,
	} {
		f.Add(byte(1), s)
	}
	for _, s := range []string{
		expandingProto(20),
		"syntax = \"proto3\";\n" + strings.Repeat("message M { ", 300) + strings.Repeat("}", 300),
		"/* { */ message M { string s = 1 [json_name = \"}\"]; } // {",
	} {
		f.Add(byte(2), s)
	}
	formats := []string{FormatAvro, FormatJSON, FormatProtobuf}
	f.Fuzz(func(t *testing.T, format byte, text string) {
		s := &Schema{ID: "1", Format: formats[int(format)%len(formats)], Text: text}
		err := CheckSchema(s)
		var le *SchemaLimitError
		if errors.As(err, &le) && (le.Measured <= le.Max || le.Format != s.Format || le.ID != "1") {
			t.Fatalf("%+v: a limit error within its limit, or of another schema", le)
		}
		if err == nil && s.Format == FormatAvro {
			c, err := Avro[any]()
			if err != nil {
				t.Fatal(err)
			}
			_, _ = c.Decode(context.Background(), []byte{0, 0, 0, 0}, s)
		}
	})
}
