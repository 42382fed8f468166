package avrojson

import (
	"bytes"
	"encoding/json"
	"math"
	"math/big"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
)

// TestAppendForms checks the JSON of each Avro type: unions of every kind of branch, maps,
// enums, fixed, logical types, and floats JSON has no number for. AWS does not document its
// JSON form of Avro; the form is the one Append's doc states (esm's
// TestKafkaSchemaAvroJSONForms checks it through the mapping).
func TestAppendForms(t *testing.T) {
	schema := avro.MustParse(`{"type":"record","name":"All","fields":[
		{"name":"u1","type":["null","long","string"]},
		{"name":"u2","type":["null",{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]}]},
		{"name":"u3","type":["null",{"type":"map","values":"boolean"}]},
		{"name":"u4","type":["null",{"type":"enum","name":"E","symbols":["A","B"]}]},
		{"name":"u5","type":["null","string"]},
		{"name":"fx","type":{"type":"fixed","name":"F","size":2}},
		{"name":"day","type":{"type":"int","logicalType":"date"}},
		{"name":"dec","type":{"type":"bytes","logicalType":"decimal","precision":6,"scale":2}},
		{"name":"f","type":"float"},
		{"name":"nan","type":"double"},
		{"name":"m","type":{"type":"map","values":"int"}}]}`)
	bin, err := avro.Marshal(schema, map[string]any{
		"u1": map[string]any{"string": "s"}, "u2": map[string]any{"In": map[string]any{"x": 7}},
		"u3": map[string]any{"map": map[string]any{"b": true, "a": false}}, "u4": map[string]any{"E": "B"}, "u5": nil,
		"fx": [2]byte{0x41, 0xe9}, "day": time.Date(2026, 1, 2, 0, 0, 0, 0, time.UTC),
		"dec": big.NewRat(12345, 100), "f": float32(1.5), "nan": math.Inf(-1), "m": map[string]any{"z": 1, "y": 2},
	})
	if err != nil {
		t.Fatal(err)
	}
	var v any
	if err := avro.Unmarshal(schema, bin, &v); err != nil {
		t.Fatal(err)
	}
	got, err := Append([]byte("x"), schema, v)
	want := `x{"u1":"s","u2":{"x":7},"u3":{"a":false,"b":true},"u4":"B","u5":null,"fx":"Aé","day":20455,"dec":"123.45","f":1.5,"nan":"-Infinity","m":{"y":2,"z":1}}`
	if err != nil || string(got) != want {
		t.Errorf("Append:\n%s, %v\nwant\n%s", got, err, want)
	}
	if _, err := Append(nil, avro.MustParse(`"string"`), 7); err == nil || !strings.Contains(err.Error(), "a string decoded as int") {
		t.Errorf("a value of the wrong type: %v", err)
	}
}

// TestFromJSON: JSON values get the Go types of the schema, and a value the schema does not
// allow is an error naming its place.
func TestFromJSON(t *testing.T) {
	schema := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"i","type":"int"},{"name":"b","type":"bytes"},{"name":"u","type":["null","long"]},
		{"name":"a","type":{"type":"array","items":"float"}},{"name":"d","type":"string","default":"z"}]}`)
	var v any
	d := json.NewDecoder(strings.NewReader(`{"i":7,"b":"\u00ff","u":9,"a":[1.5]}`))
	d.UseNumber()
	if err := d.Decode(&v); err != nil {
		t.Fatal(err)
	}
	x, err := FromJSON(schema, v, "")
	if err != nil {
		t.Fatal(err)
	}
	m := x.(map[string]any)
	if m["i"] != int32(7) || !bytes.Equal(m["b"].([]byte), []byte{0xff}) || m["u"] != int64(9) || m["a"].([]any)[0] != float32(1.5) {
		t.Errorf("FromJSON: %#v", m)
	}
	if _, present := m["d"]; present {
		t.Errorf("a field with a default, absent from the JSON, was given a value: %#v", m)
	}
	v.(map[string]any)["i"] = json.Number("2147483648")
	if _, err := FromJSON(schema, v, ""); err == nil || err.Error() != ".i: the number 2147483648 is not an Avro int" {
		t.Errorf("an int over 32 bits: %v", err)
	}
}

// FuzzFromJSON: whatever JSON a record line gives, giving it the types of an Avro schema
// ends with a value or an error, never a panic, and a value encodes.
func FuzzFromJSON(f *testing.F) {
	schema := avro.MustParse(`{"type":"record","name":"R","fields":[
		{"name":"i","type":"int"},{"name":"l","type":"long"},{"name":"f","type":"float"},
		{"name":"d","type":["null","double"]},{"name":"b","type":"bytes"},{"name":"s","type":"string"},
		{"name":"a","type":{"type":"array","items":"long"}},{"name":"m","type":{"type":"map","values":"boolean"}},
		{"name":"e","type":{"type":"enum","name":"E","symbols":["X","Y"]}},{"name":"x","type":{"type":"fixed","name":"F","size":2}},
		{"name":"o","type":"string","default":"z"}]}`)
	f.Add(`{"i":1,"l":2,"f":1.5,"d":null,"b":"\u00ff","s":"s","a":[1,2],"m":{"k":true},"e":"X","x":"ab"}`)
	f.Add(`{"i":2147483648}`)
	f.Add(`[1,{"a":null}]`)
	f.Add(`{"d":"nope","a":[1.5]}`)
	f.Fuzz(func(t *testing.T, text string) {
		d := json.NewDecoder(strings.NewReader(text))
		d.UseNumber()
		var v any
		if d.Decode(&v) != nil {
			return
		}
		x, err := FromJSON(schema, v, "")
		if err != nil {
			return
		}
		bin, err := avro.Marshal(schema, x)
		if err != nil {
			t.Fatalf("FromJSON(%s) gave %v, which does not encode: %v", text, x, err)
		}
		// What encodes decodes, and Append writes it as valid JSON that FromJSON reads back.
		var back any
		if err := avro.Unmarshal(schema, bin, &back); err != nil {
			t.Fatalf("FromJSON(%s): the encoded value does not decode: %v", text, err)
		}
		js, err := Append(nil, schema, back)
		if err != nil || !json.Valid(js) {
			t.Fatalf("FromJSON(%s): Append of the decoded value: %s, %v", text, js, err)
		}
		d = json.NewDecoder(bytes.NewReader(js))
		d.UseNumber()
		var again any
		if err := d.Decode(&again); err != nil {
			t.Fatal(err)
		}
		if _, err := FromJSON(schema, again, ""); err != nil {
			t.Errorf("FromJSON(%s) does not read back what Append wrote, %s: %v", text, js, err)
		}
	})
}
