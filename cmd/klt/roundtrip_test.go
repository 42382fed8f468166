package main

import (
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/kafkaevent"
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
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"keyBase64":"AP8=","valueBase64":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8gISIjJCUmJygpKissLS4vMDEyMzQ1Njc4OTo7PD0+P0BBQkNERUZHSElKS0xNTk9QUVJTVFVWV1hZWltcXV5fYGFiY2RlZmdoaWprbG1ub3BxcnN0dXZ3eHl6e3x9fn+AgYKDhIWGh4iJiouMjY6PkJGSk5SVlpeYmZqbnJ2en6ChoqOkpaanqKmqq6ytrq+wsbKztLW2t7i5uru8vb6/wMHCw8TFxsfIycrLzM3Oz9DR0tPU1dbX2Nna29zd3t/g4eLj5OXm5+jp6uvs7e7v8PHy8/T19vf4+fr7/P3+/w==","headers":[]}`},
		{"headers", `{"topic":"t","headers":[{"key":"a","value":"Zoë"},{"key":"a","valueBase64":"gA=="},{"key":"n","value":null},{"key":"e","value":""}]}`,
			`{"topic":"t","partition":0,"offset":0,` + ts + `,"key":null,"value":null,"headers":[{"key":"a","value":"Zoë"},{"key":"a","valueBase64":"gA=="},{"key":"n","value":null},{"key":"e","value":""}]}`},
		{"position, time and schemas", `{"topic":"orders.v1","partition":2147483647,"offset":9223372036854775807,"timestamp":"2026-02-03T04:05:06.007-01:00","timestampType":"LOG_APPEND_TIME","keySchema":{"dataFormat":"JSON","schemaId":"9"},"valueSchema":{"dataFormat":"AVRO","schemaId":"12345678-1234-1234-1234-123456789012"}}`,
			`{"topic":"orders.v1","partition":2147483647,"offset":9223372036854775807,"timestamp":"2026-02-03T05:05:06.007Z","timestampType":"LOG_APPEND_TIME","key":null,"value":null,"headers":[],"keySchema":{"dataFormat":"JSON","schemaId":"9"},"valueSchema":{"dataFormat":"AVRO","schemaId":"12345678-1234-1234-1234-123456789012"}}`},
		{"no timestamp", `{"topic":"t","timestamp":-1}`,
			`{"topic":"t","partition":0,"offset":0,"timestamp":-1,"timestampType":"CREATE_TIME","key":null,"value":null,"headers":[]}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			records := filepath.Join(dir, "records.jsonl")
			event := filepath.Join(dir, "event.json")
			if err := os.WriteFile(records, []byte(tt.in+"\n"), 0o644); err != nil {
				t.Fatal(err)
			}
			if r := klt(t, "", "event", "build", "-o", event, records); r.code != base.ExitOK {
				t.Fatalf("build: exit %d: %s", r.code, r.stderr)
			}
			r := klt(t, "", "event", "decode", event)
			if r.code != base.ExitOK || r.stderr != "" {
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
	if b.code != base.ExitOK {
		t.Fatalf("build: exit %d: %s", b.code, b.stderr)
	}
	d := klt(t, b.stdout, "event", "decode")
	if d.code != base.ExitOK {
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

func TestDecodeThenBuildReproducesFixtures(t *testing.T) {
	// "klt event decode FILE | klt event build" makes the event of every fixture again: the same
	// partitions and records, field by field, telling nil bytes from empty ones. The envelope
	// is not in decode's output; it comes from build's flags, here the fixture's own.
	for _, file := range fixtureEvents(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			data, err := os.ReadFile(file)
			if err != nil {
				t.Fatal(err)
			}
			want, err := kafkaevent.Parse(data)
			if err != nil {
				t.Fatal(err)
			}
			d := klt(t, "", "event", "decode", file)
			if d.code != base.ExitOK || d.stderr != "" {
				t.Fatalf("decode: exit %d, stderr %q", d.code, d.stderr)
			}
			flags := envelopeFlags(want)
			b := klt(t, d.stdout, append([]string{"event", "build"}, flags...)...)
			if b.code != base.ExitOK || b.stderr != "" {
				t.Fatalf("build %s: exit %d, stderr:\n%s\ninput:\n%s", strings.Join(flags, " "), b.code, b.stderr, d.stdout)
			}
			got, err := kafkaevent.Parse([]byte(b.stdout))
			if err != nil {
				t.Fatalf("Parse of build's event: %v\n%s", err, b.stdout)
			}

			if got.Source != want.Source || got.SourceARN != want.SourceARN || !slices.Equal(got.BootstrapServers, want.BootstrapServers) {
				t.Errorf("envelope %q %q %q, want %q %q %q", got.Source, got.SourceARN, got.BootstrapServers,
					want.Source, want.SourceARN, want.BootstrapServers)
			}
			if len(got.Partitions) != len(want.Partitions) {
				t.Fatalf("%d partitions, want %d", len(got.Partitions), len(want.Partitions))
			}
			for i := range want.Partitions {
				gp, wp := &got.Partitions[i], &want.Partitions[i]
				if gp.ID() != wp.ID() || len(gp.Records) != len(wp.Records) {
					t.Errorf("partition %d is %s with %d records, want %s with %d", i, gp.ID(), len(gp.Records), wp.ID(), len(wp.Records))
					continue
				}
				for j := range wp.Records {
					for _, diff := range recordDiffs(&gp.Records[j], &wp.Records[j]) {
						t.Errorf("%s[%d]: %s", wp.ID(), j, diff)
					}
				}
			}

			// And decode prints the rebuilt event as it printed the fixture.
			if again := klt(t, b.stdout, "event", "decode"); again.code != base.ExitOK || again.stdout != d.stdout {
				t.Errorf("decode of the rebuilt event: exit %d, stderr %q, printed\n%s\nwant\n%s", again.code, again.stderr, again.stdout, d.stdout)
			}
		})
	}
}

// envelopeFlags returns the flags of "klt event build" that give the envelope of ev: its source,
// ARN and bootstrap servers.
func envelopeFlags(ev *kafkaevent.Event) []string {
	var flags []string
	switch ev.Source {
	case kafkaevent.SourceMSK:
		flags = append(flags, "--source", "msk")
	case kafkaevent.SourceSelfManaged:
		flags = append(flags, "--source", "self-managed")
	}
	if ev.SourceARN != "" {
		flags = append(flags, "--arn", ev.SourceARN)
	}
	return append(flags, "--bootstrap-servers", strings.Join(ev.BootstrapServers, ","))
}

// recordDiffs lists how got differs from want, field by field, telling nil bytes from empty
// ones. An empty header list is the same as none: the wire format writes both as [].
func recordDiffs(got, want *kafkaevent.Record) []string {
	var diffs []string
	differ := func(field string, g, w any) {
		diffs = append(diffs, fmt.Sprintf("%s %v, want %v", field, g, w))
	}
	if got.Topic != want.Topic {
		differ("topic", got.Topic, want.Topic)
	}
	if got.Partition != want.Partition {
		differ("partition", got.Partition, want.Partition)
	}
	if got.Offset != want.Offset {
		differ("offset", got.Offset, want.Offset)
	}
	if !got.Timestamp.Equal(want.Timestamp) || got.Timestamp.IsZero() != want.Timestamp.IsZero() {
		differ("timestamp", got.Timestamp, want.Timestamp)
	}
	if got.TimestampType != want.TimestampType {
		differ("timestampType", got.TimestampType, want.TimestampType)
	}
	if !sameBytes(got.Key, want.Key) {
		differ("key", showBytes(got.Key), showBytes(want.Key))
	}
	if !sameBytes(got.Value, want.Value) {
		differ("value", showBytes(got.Value), showBytes(want.Value))
	}
	if len(got.Headers) != len(want.Headers) {
		differ("headers", got.Headers, want.Headers)
	} else {
		for i, h := range want.Headers {
			if g := got.Headers[i]; g.Key != h.Key || !sameBytes(g.Value, h.Value) {
				differ(fmt.Sprintf("header %d", i), g.Key+"="+showBytes(g.Value), h.Key+"="+showBytes(h.Value))
			}
		}
	}
	if !reflect.DeepEqual(got.KeySchema, want.KeySchema) {
		differ("keySchema", got.KeySchema, want.KeySchema)
	}
	if !reflect.DeepEqual(got.ValueSchema, want.ValueSchema) {
		differ("valueSchema", got.ValueSchema, want.ValueSchema)
	}
	if got.Err != nil || want.Err != nil {
		differ("error", got.Err, want.Err)
	}
	return diffs
}

// showBytes prints b for a test message, telling nil from empty.
func showBytes(b []byte) string {
	if b == nil {
		return "nil"
	}
	return fmt.Sprintf("%q", b)
}
