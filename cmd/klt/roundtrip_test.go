package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBuildThenDecode(t *testing.T) {
	// "klt event build < records.jsonl > event.json && klt event decode event.json", line by
	// line: what each input line comes back as. Every line is in its own partition, so the
	// order of the output is the order of the table.
	const ts = `"timestamp":"2026-01-15T10:00:00.000Z","timestampType":"CREATE_TIME"`
	tests := []struct{ name, in, out string }{
		{"text", `{"topic":"t","key":"k","value":"hello"}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"k","value":"hello","headers":[]}`},
		{"JSON value becomes its compact text", `{"topic":"t","value":{ "id" : 1, "tags" : [ "a" ] }}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":null,"value":"{\"id\":1,\"tags\":[\"a\"]}","headers":[]}`},
		{"HTML characters are not escaped", `{"topic":"t","value":"<a href=\"x\">&amp;</a>"}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":null,"value":"<a href=\"x\">&amp;</a>","headers":[]}`},
		{"tombstone: null value", `{"topic":"t","key":"gone","value":null}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"gone","value":null,"headers":[]}`},
		{"tombstone: no value", `{"topic":"t","key":"gone"}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"gone","value":null,"headers":[]}`},
		{"tombstone: null valueBase64", `{"topic":"t","key":"gone","valueBase64":null}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"gone","value":null,"headers":[]}`},
		{"empty is not a tombstone", `{"topic":"t","key":"","value":""}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"","value":"","headers":[]}`},
		{"base64 that is UTF-8 decodes as text", `{"topic":"t","keyBase64":"a8O8","valueBase64":"e30="}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"kü","value":"{}","headers":[]}`},
		{"binary stays base64", `{"topic":"t","keyBase64":"AP8=","valueBase64":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w=="}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":"AP8=","keyEncoding":"base64","value":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==","valueEncoding":"base64","headers":[]}`},
		{"headers", `{"topic":"t","headers":[{"key":"a","value":"Zoë"},{"key":"a","valueBase64":"gA=="},{"key":"n","value":null},{"key":"e","value":""}]}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":null,"value":null,"headers":[{"key":"a","value":"Zoë"},{"key":"a","value":"gA==","valueEncoding":"base64"},{"key":"n","value":null},{"key":"e","value":""}]}`},
		{"position, time and schemas", `{"topic":"orders.v1","partition":2147483647,"offset":9223372036854775807,"timestamp":"2026-02-03T04:05:06.007-01:00","timestampType":"LOG_APPEND_TIME","keySchema":{"dataFormat":"JSON","schemaId":"9"},"valueSchema":{"dataFormat":"AVRO","schemaId":"12345678-1234-1234-1234-123456789012"}}`,
			`{"topic":"orders.v1","partition":2147483647,"offset":9223372036854775807,"timestamp":"2026-02-03T05:05:06.007Z","timestampType":"LOG_APPEND_TIME","key":null,"value":null,"headers":[],"keySchema":{"dataFormat":"JSON","schemaId":"9"},"valueSchema":{"dataFormat":"AVRO","schemaId":"12345678-1234-1234-1234-123456789012"}}`},
		{"no timestamp", `{"topic":"t","timestamp":-1}`,
			`{"topic":"t","partition":0,"offset":0,"timestamp":null,"timestampType":"CREATE_TIME","key":null,"value":null,"headers":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			records := filepath.Join(dir, "records.jsonl")
			event := filepath.Join(dir, "event.json")
			if err := os.WriteFile(records, []byte(tt.in+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := klt(t, "", "event", "build", "-o", event, records); r.code != exitOK {
				t.Fatalf("build: exit %d: %s", r.code, r.stderr)
			}
			r := klt(t, "", "event", "decode", event)
			if r.code != exitOK || r.stderr != "" {
				t.Fatalf("decode: exit %d: %s", r.code, r.stderr)
			}
			if got := strings.TrimSuffix(r.stdout, "\n"); got != tt.out {
				t.Errorf("%s\ncame back as\n%s\nwant\n%s", tt.in, got, tt.out)
			}
		})
	}
}

func TestBuildThenDecodeOrder(t *testing.T) {
	// Partitions come back sorted by topic, then number, records in input order within each.
	in := `{"topic":"b","partition":10,"value":"1"}
{"topic":"b","partition":2,"value":"2"}
{"topic":"a","partition":1,"value":"3"}
{"topic":"b","partition":10,"offset":7,"value":"4"}
{"topic":"b","partition":2,"value":"5"}
`
	b := klt(t, in, "event", "build")
	if b.code != exitOK {
		t.Fatalf("build: exit %d: %s", b.code, b.stderr)
	}
	d := klt(t, b.stdout, "event", "decode")
	if d.code != exitOK {
		t.Fatalf("decode: exit %d: %s", d.code, d.stderr)
	}
	var got []string
	for _, line := range strings.Split(strings.TrimSuffix(d.stdout, "\n"), "\n") {
		_, v, _ := strings.Cut(line, `"value":"`)
		_, o, _ := strings.Cut(line, `"offset":`)
		o, _, _ = strings.Cut(o, ",")
		got = append(got, v[:1]+"@"+o)
	}
	if s := strings.Join(got, " "); s != "3@0 2@0 5@1 1@0 4@7" {
		t.Errorf("values@offsets in output order: %s, want 3@0 2@0 5@1 1@0 4@7", s)
	}
}
