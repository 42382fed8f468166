package fanout

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// shapes returns records of every shape a Kafka record can take.
func shapes() map[string]*kafkaevent.Record {
	ts := time.UnixMilli(1700000000123).UTC()
	base := func() *kafkaevent.Record {
		return &kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42, Timestamp: ts, TimestampType: kafkaevent.CreateTime}
	}
	with := func(f func(r *kafkaevent.Record)) *kafkaevent.Record {
		r := base()
		f(r)
		return r
	}
	allBytes := make([]byte, 256)
	for i := range allBytes {
		allBytes[i] = byte(i)
	}
	return map[string]*kafkaevent.Record{
		"json value":        with(func(r *kafkaevent.Record) { r.Key, r.Value = []byte("k1"), []byte(`{"id":1,"name":"Zoë 🚀"}`) }),
		"text with newline": with(func(r *kafkaevent.Record) { r.Value = []byte("line 1\r\nline\t2\n") }),
		"binary value":      with(func(r *kafkaevent.Record) { r.Key, r.Value = []byte{0xff, 0}, allBytes }),
		"invalid utf8":      with(func(r *kafkaevent.Record) { r.Value = []byte("abc\xffdef") }),
		"nul in text":       with(func(r *kafkaevent.Record) { r.Value = []byte("a\x00b") }),
		"U+FFFE":            with(func(r *kafkaevent.Record) { r.Value = []byte("a\uFFFEb") }),
		"U+FFFD is text":    with(func(r *kafkaevent.Record) { r.Value = []byte("a\uFFFDb") }),
		"surrogate bytes":   with(func(r *kafkaevent.Record) { r.Value = []byte("a\xed\xa0\x80b") }),
		"empty value":       with(func(r *kafkaevent.Record) { r.Key, r.Value = []byte("k"), []byte{} }),
		"null value":        with(func(r *kafkaevent.Record) { r.Key, r.Value = []byte("k"), nil }),
		"empty key":         with(func(r *kafkaevent.Record) { r.Key, r.Value = []byte{}, []byte("v") }),
		"null key and value": with(func(r *kafkaevent.Record) {
			r.Key, r.Value = nil, nil
		}),
		"headers": with(func(r *kafkaevent.Record) {
			r.Value = []byte("v")
			r.Headers = []kafkaevent.Header{
				{Key: "b", Value: []byte("2")},
				{Key: "a", Value: []byte("1")},
				{Key: "a", Value: []byte("1")}, // repeated, same value
				{Key: "a", Value: []byte{0xc3, 0x28}},
				{Key: "null", Value: nil},
				{Key: "empty", Value: []byte{}},
				{Key: "", Value: []byte("no name")},
				{Key: "bin\xffname", Value: allBytes},
				{Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")},
				{Key: "tracestate", Value: []byte("congo=t61rcWkgMzE")},
				{Key: "X-Amzn-Trace-Id", Value: []byte("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")},
			}
		}),
		"schema metadata": with(func(r *kafkaevent.Record) {
			r.Key, r.Value = []byte{0, 0, 0, 0, 7}, []byte{0, 0, 0, 0, 9, 2, 4}
			r.KeySchema = &kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "7"}
			r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: "PROTOBUF", SchemaID: "1b7f1b3e-4f3e-4c4a-9f2a-1c2d3e4f5a6b"}
		}),
		"empty schema metadata": with(func(r *kafkaevent.Record) {
			r.Value = []byte("v")
			r.ValueSchema = &kafkaevent.SchemaMetadata{}
		}),
		"no timestamp": with(func(r *kafkaevent.Record) {
			r.Value, r.Timestamp, r.TimestampType = []byte("v"), time.Time{}, ""
		}),
		"log append time": with(func(r *kafkaevent.Record) {
			r.Value, r.TimestampType = []byte("v"), kafkaevent.LogAppendTime
		}),
		"odd topic and extremes": with(func(r *kafkaevent.Record) {
			r.Topic = "t\"\\/\u00e9\U0001F600\x01\u2028"
			r.Partition, r.Offset = -2147483648, 9223372036854775807
			r.Value = []byte("v")
			r.Timestamp = time.UnixMilli(-5).UTC()
			r.TimestampType = "Other \"type\""
		}),
		"long topic": with(func(r *kafkaevent.Record) {
			r.Topic = strings.Repeat("t", 249)
			r.Value = []byte("v")
		}),
	}
}

// sameRecord reports how got differs from want, byte for byte, or "".
func sameRecord(want, got *kafkaevent.Record) string {
	var d []string
	if want.Topic != got.Topic || want.Partition != got.Partition || want.Offset != got.Offset {
		d = append(d, fmt.Sprintf("position %q-%d@%d, want %q-%d@%d", got.Topic, got.Partition, got.Offset, want.Topic, want.Partition, want.Offset))
	}
	if !want.Timestamp.Equal(got.Timestamp) || want.Timestamp.IsZero() != got.Timestamp.IsZero() || got.Timestamp.Location() != time.UTC {
		d = append(d, fmt.Sprintf("timestamp %v, want %v", got.Timestamp, want.Timestamp))
	}
	if want.TimestampType != got.TimestampType {
		d = append(d, fmt.Sprintf("timestampType %q, want %q", got.TimestampType, want.TimestampType))
	}
	if s := sameBytes(want.Key, got.Key); s != "" {
		d = append(d, "key "+s)
	}
	if s := sameBytes(want.Value, got.Value); s != "" {
		d = append(d, "value "+s)
	}
	if len(want.Headers) != len(got.Headers) {
		d = append(d, fmt.Sprintf("%d headers, want %d", len(got.Headers), len(want.Headers)))
	} else {
		for i := range want.Headers {
			if want.Headers[i].Key != got.Headers[i].Key {
				d = append(d, fmt.Sprintf("header %d name %q, want %q", i, got.Headers[i].Key, want.Headers[i].Key))
			}
			if s := sameBytes(want.Headers[i].Value, got.Headers[i].Value); s != "" {
				d = append(d, fmt.Sprintf("header %d value %s", i, s))
			}
		}
	}
	for _, s := range []struct {
		name      string
		want, got *kafkaevent.SchemaMetadata
	}{{"keySchema", want.KeySchema, got.KeySchema}, {"valueSchema", want.ValueSchema, got.ValueSchema}} {
		if (s.want == nil) != (s.got == nil) || s.want != nil && *s.want != *s.got {
			d = append(d, fmt.Sprintf("%s %+v, want %+v", s.name, s.got, s.want))
		}
	}
	if got.Err != nil {
		d = append(d, fmt.Sprintf("Err %v", got.Err))
	}
	return strings.Join(d, "; ")
}

func sameBytes(want, got []byte) string {
	switch {
	case (want == nil) != (got == nil):
		return fmt.Sprintf("nil=%v, want nil=%v", got == nil, want == nil)
	case !bytes.Equal(want, got):
		g, w := got, want
		if len(g) > 40 {
			g = g[:40]
		}
		if len(w) > 40 {
			w = w[:40]
		}
		return fmt.Sprintf("%q (%d bytes), want %q (%d bytes)", g, len(got), w, len(want))
	}
	return ""
}

// lambdaAttributes writes message attributes the way the SQS event source mapping puts them
// in the event: stringValue or binaryValue (base64), empty list values, dataType.
func lambdaAttributes(attrs map[string]types.MessageAttributeValue) map[string]any {
	out := map[string]any{}
	for name, a := range attrs {
		v := map[string]any{"stringListValues": []string{}, "binaryListValues": []string{}, "dataType": aws.ToString(a.DataType)}
		if a.StringValue != nil {
			v["stringValue"] = *a.StringValue
		}
		if a.BinaryValue != nil {
			v["binaryValue"] = a.BinaryValue // encoding/json writes base64, as Lambda does
		}
		out[name] = v
	}
	return out
}

// lambdaEvent makes the JSON of the SQS event Lambda would deliver for msgs, and decodes it
// as a function would, into events.SQSEvent.
func lambdaEvent(t testing.TB, arn string, msgs []types.Message) *events.SQSEvent {
	t.Helper()
	var recs []map[string]any
	for _, m := range msgs {
		recs = append(recs, map[string]any{
			"messageId":              aws.ToString(m.MessageId),
			"receiptHandle":          aws.ToString(m.ReceiptHandle),
			"body":                   aws.ToString(m.Body),
			"attributes":             m.Attributes,
			"messageAttributes":      lambdaAttributes(m.MessageAttributes),
			"md5OfBody":              aws.ToString(m.MD5OfBody),
			"md5OfMessageAttributes": aws.ToString(m.MD5OfMessageAttributes),
			"eventSource":            "aws:sqs",
			"eventSourceARN":         arn,
			"awsRegion":              "us-east-1",
		})
	}
	data, err := json.Marshal(map[string]any{"Records": recs})
	if err != nil {
		t.Fatal(err)
	}
	var ev events.SQSEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatal(err)
	}
	return &ev
}

// entryMessage is the message SQS would deliver for e, without SQS in between.
func entryMessage(t testing.TB, id string, e types.SendMessageBatchRequestEntry) events.SQSMessage {
	t.Helper()
	m := types.Message{MessageId: aws.String(id), Body: e.MessageBody, MessageAttributes: e.MessageAttributes,
		Attributes: map[string]string{"SentTimestamp": "1700000000999", "ApproximateReceiveCount": "1"}}
	if a, ok := e.MessageSystemAttributes["AWSTraceHeader"]; ok {
		m.Attributes["AWSTraceHeader"] = aws.ToString(a.StringValue)
	}
	return lambdaEvent(t, "arn:aws:sqs:us-east-1:123456789012:q", []types.Message{m}).Records[0]
}

func TestRecordRebuildsEveryShape(t *testing.T) {
	for name, r := range shapes() {
		t.Run(name, func(t *testing.T) {
			e, size, err := entry(r, false, nil)
			if err != nil {
				t.Fatal(err)
			}
			if size <= 0 || size > limits.MaxSQSMessageBytes {
				t.Errorf("size %d", size)
			}
			if e.MessageGroupId != nil || e.MessageDeduplicationId != nil {
				t.Errorf("standard queue entry with FIFO fields: %+v", e)
			}
			got, err := ReadRecord(new(entryMessage(t, "m1", e)))
			if err != nil {
				t.Fatal(err)
			}
			if d := sameRecord(r, got); d != "" {
				t.Error(d)
			}
		})
	}
}

func TestEntryBody(t *testing.T) {
	s := shapes()
	for _, c := range []struct {
		shape, body string
		binary      bool
	}{
		{"json value", `{"id":1,"name":"Zoë 🚀"}`, false},
		{"text with newline", "line 1\r\nline\t2\n", false},
		{"U+FFFD is text", "a\uFFFDb", false},
		{"binary value", bodyBinary, true},
		{"invalid utf8", bodyBinary, true},
		{"nul in text", bodyBinary, true},
		{"U+FFFE", bodyBinary, true},
		{"surrogate bytes", bodyBinary, true},
		{"empty value", bodyEmpty, false},
		{"null value", bodyNull, false},
	} {
		e, _, err := entry(s[c.shape], false, nil)
		if err != nil {
			t.Fatalf("%s: %v", c.shape, err)
		}
		if got := aws.ToString(e.MessageBody); got != c.body {
			t.Errorf("%s: body %q, want %q", c.shape, got, c.body)
		}
		if _, ok := e.MessageAttributes[ValueAttribute]; ok != c.binary {
			t.Errorf("%s: %s present %v, want %v", c.shape, ValueAttribute, ok, c.binary)
		}
	}
	// The trace context is copied where OpenTelemetry and X-Ray look for it.
	e, _, err := entry(s["headers"], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got := aws.ToString(e.MessageAttributes[TraceParentAttribute].StringValue); got != "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" {
		t.Errorf("traceparent attribute %q", got)
	}
	if got := aws.ToString(e.MessageAttributes[TraceStateAttribute].StringValue); got != "congo=t61rcWkgMzE" {
		t.Errorf("tracestate attribute %q", got)
	}
	if got := aws.ToString(e.MessageSystemAttributes["AWSTraceHeader"].StringValue); !strings.HasPrefix(got, "Root=1-5759e988") {
		t.Errorf("AWSTraceHeader %q", got)
	}
	// A malformed X-Ray header stays in the headers: SQS may refuse it in AWSTraceHeader.
	for _, bad := range []string{"", "Root=1-5759e988-bd862e3fe1be46a99427279", "Root=2-5759e988-bd862e3fe1be46a994272793", "Parent=53995c3f42cd8ad8", "Root=1-5759e988-bd862e3fe1be46a994272793;x y=1", "garbage"} {
		r := &kafkaevent.Record{Topic: "t", Value: []byte("v"), Headers: []kafkaevent.Header{{Key: "X-Amzn-Trace-Id", Value: []byte(bad)}}}
		e, _, err := entry(r, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := e.MessageSystemAttributes["AWSTraceHeader"]; ok {
			t.Errorf("AWSTraceHeader from %q", bad)
		}
	}
	if n := len(e.MessageAttributes); n > 5 {
		t.Errorf("%d attributes: leave users room under SQS's 10", n)
	}
}

func TestEntrySize(t *testing.T) {
	for name, r := range shapes() {
		e, size, err := entry(r, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := len(aws.ToString(e.MessageBody))
		for n, a := range e.MessageAttributes {
			want += len(n) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue)) + base64.StdEncoding.EncodedLen(len(a.BinaryValue))
		}
		for n, a := range e.MessageSystemAttributes {
			want += len(n) + len(aws.ToString(a.DataType)) + len(aws.ToString(a.StringValue))
		}
		if size != want {
			t.Errorf("%s: size %d, want %d", name, size, want)
		}
	}
}

// largest returns a record at offset with the largest value (text, or binary) whose
// message entry accepts; its size is limits.MaxSQSMessageBytes for text, and within 2 bytes of it for
// binary, whose base64 grows 4 characters at a time.
func largest(t testing.TB, binary bool, offset int64) (*kafkaevent.Record, int) {
	t.Helper()
	fill := byte('x')
	if binary {
		fill = 0xff
	}
	r := &kafkaevent.Record{Topic: "big", Partition: 1, Offset: offset, Key: []byte("k")}
	fits := func(n int) (int, bool) {
		r.Value = bytes.Repeat([]byte{fill}, n)
		_, size, err := entry(r, false, nil)
		return size, err == nil
	}
	lo, hi := 1, limits.MaxSQSMessageBytes // fits(lo), !fits(hi)
	for hi-lo > 1 {
		if mid := (lo + hi) / 2; func() bool { _, ok := fits(mid); return ok }() {
			lo = mid
		} else {
			hi = mid
		}
	}
	size, _ := fits(lo)
	if !binary && size != limits.MaxSQSMessageBytes || size < limits.MaxSQSMessageBytes-2 {
		t.Fatalf("binary=%v: the largest message is %d bytes", binary, size)
	}
	return r, size
}

func TestEntryRefusesTooLarge(t *testing.T) {
	for _, binary := range []bool{false, true} {
		r, size := largest(t, binary, 7)
		t.Logf("binary=%v: the largest value is %d bytes (%d with its attributes)", binary, len(r.Value), size)
		r.Value = append(r.Value, r.Value[0])
		_, _, err := entry(r, false, nil)
		var ee *EncodeError
		if !errors.As(err, &ee) || !errors.Is(err, batch.ErrMessageTooLarge) || ee.Field != "message" || ee.Offset != 7 {
			t.Fatalf("binary=%v: one byte over: %v, want an *EncodeError wrapping batch.ErrMessageTooLarge", binary, err)
		}
		if !strings.Contains(err.Error(), "1048576") {
			t.Errorf("error %q does not give the limit", err)
		}
	}
}

func TestEntryRefuses(t *testing.T) {
	for _, c := range []struct {
		name  string
		r     *kafkaevent.Record
		group func(*kafkaevent.Record) string
		field string
	}{
		{"record error", &kafkaevent.Record{Topic: "t", Err: errors.New("bad base64")}, nil, "record"},
		{"topic not UTF-8", &kafkaevent.Record{Topic: "t\xff"}, nil, "topic"},
		{"timestamp type not UTF-8", &kafkaevent.Record{Topic: "t", TimestampType: "\xff"}, nil, "timestampType"},
		{"schema not UTF-8", &kafkaevent.Record{Topic: "t", KeySchema: &kafkaevent.SchemaMetadata{SchemaID: "\xff"}}, nil, "keySchemaMetadata"},
		{"empty group", &kafkaevent.Record{Topic: "t"}, func(*kafkaevent.Record) string { return "" }, "MessageGroupId"},
		{"long group", &kafkaevent.Record{Topic: "t"}, func(*kafkaevent.Record) string { return strings.Repeat("g", 129) }, "MessageGroupId"},
		{"group with space", &kafkaevent.Record{Topic: "t"}, func(*kafkaevent.Record) string { return "a b" }, "MessageGroupId"},
	} {
		_, _, err := entry(c.r, true, c.group)
		var ee *EncodeError
		if !errors.As(err, &ee) || ee.Field != c.field {
			t.Errorf("%s: %v, want an *EncodeError on %s", c.name, err, c.field)
		}
	}
}

func TestEntryFIFO(t *testing.T) {
	rec := func(topic string, p int32, o int64, key []byte) *kafkaevent.Record {
		return &kafkaevent.Record{Topic: topic, Partition: p, Offset: o, Key: key, Value: []byte("v")}
	}
	group := func(r *kafkaevent.Record, f func(*kafkaevent.Record) string) (string, string) {
		t.Helper()
		e, _, err := entry(r, true, f)
		if err != nil {
			t.Fatal(err)
		}
		return aws.ToString(e.MessageGroupId), aws.ToString(e.MessageDeduplicationId)
	}
	hexLen := func(s string) bool { return len(s) == 64 && strings.Trim(s, "0123456789abcdef") == "" }
	g, d := group(rec("orders", 1, 5, []byte("customer-17")), nil)
	if g != "customer-17" || !hexLen(d) {
		t.Errorf("readable key: group %q dedup %q", g, d)
	}
	if g2, _ := group(rec("orders", 2, 9, []byte("customer-17")), nil); g2 != g {
		t.Errorf("the same key in another partition: group %q, want %q", g2, g)
	}
	for _, key := range [][]byte{{0xff, 0}, []byte("has space"), []byte{}, bytes.Repeat([]byte("k"), 129)} {
		if g, _ := group(rec("orders", 1, 5, key), nil); !hexLen(g) {
			t.Errorf("key %q: group %q, want a SHA-256", key, g)
		}
	}
	if g, _ := group(rec("orders", 1, 5, nil), nil); g != "orders-1" {
		t.Errorf("null key: group %q, want the partition", g)
	}
	if g, _ := group(rec(strings.Repeat("t", 200), 1, 5, nil), nil); !hexLen(g) {
		t.Errorf("null key, long topic: group %q", g)
	}
	if g, _ := group(rec("orders", 1, 5, []byte("k")), groupByPartition); g != "orders-1" {
		t.Errorf("by partition: group %q", g)
	}
	if g, _ := group(rec(strings.Repeat("t", 200), 1, 5, []byte("k")), groupByPartition); !hexLen(g) {
		t.Errorf("by partition, long topic: group %q", g)
	}
	// Deduplication IDs: the same position gives the same ID; any other position another.
	_, d1 := group(rec("orders", 1, 5, []byte("a")), nil)
	_, d2 := group(rec("orders", 1, 5, []byte("b")), nil)
	if d1 != d2 {
		t.Errorf("the same record with another key: dedup %q and %q", d1, d2)
	}
	seen := map[string]string{}
	for _, r := range []*kafkaevent.Record{rec("orders", 1, 5, nil), rec("orders", 1, 6, nil), rec("orders", 2, 5, nil),
		rec("orders-1", 1, 5, nil), rec("order", 1, 5, nil), rec(strings.Repeat("t", 249), 0, 0, nil)} {
		_, d := group(r, nil)
		if !hexLen(d) {
			t.Errorf("dedup %q", d)
		}
		pos := fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset)
		if other, ok := seen[d]; ok {
			t.Errorf("%s and %s share dedup ID %s", pos, other, d)
		}
		seen[d] = pos
	}
}

func TestRecordErrors(t *testing.T) {
	good, _, err := entry(shapes()["headers"], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	str := func(s string) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "String", StringValue: aws.String(s)}
	}
	bin := func(b []byte) events.SQSMessageAttribute {
		return events.SQSMessageAttribute{DataType: "Binary", BinaryValue: b}
	}
	for _, c := range []struct {
		name string
		edit func(m *events.SQSMessage)
		attr string
	}{
		{"no record attribute", func(m *events.SQSMessage) { delete(m.MessageAttributes, RecordAttribute) }, RecordAttribute},
		{"record attribute binary", func(m *events.SQSMessage) { m.MessageAttributes[RecordAttribute] = bin([]byte("{}")) }, RecordAttribute},
		{"record attribute not JSON", func(m *events.SQSMessage) { m.MessageAttributes[RecordAttribute] = str("{") }, RecordAttribute},
		{"no version", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"topic":"t","partition":0,"offset":0,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"version 2", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":2,"topic":"t","partition":0,"offset":0,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"no topic", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"partition":0,"offset":0,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"partition out of range", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":2147483648,"offset":0,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"no offset", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"offset not integer", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":1.5,"timestamp":-1,"value":"text"}`)
		}, RecordAttribute},
		{"no timestamp", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"value":"text"}`)
		}, RecordAttribute},
		{"no value", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"timestamp":-1}`)
		}, RecordAttribute},
		{"unknown value kind", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"timestamp":-1,"value":"gzip"}`)
		}, RecordAttribute},
		{"bad key base64", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"timestamp":-1,"key":"!!","value":"text"}`)
		}, RecordAttribute},
		{"text value, empty body", func(m *events.SQSMessage) { m.Body = "" }, "body"},
		{"binary value missing", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"timestamp":-1,"value":"binary"}`)
		}, ValueAttribute},
		{"value attribute beside a text value", func(m *events.SQSMessage) { m.MessageAttributes[ValueAttribute] = bin([]byte{1}) }, ValueAttribute},
		{"value attribute a string", func(m *events.SQSMessage) {
			m.MessageAttributes[RecordAttribute] = str(`{"v":1,"topic":"t","partition":0,"offset":0,"timestamp":-1,"value":"binary"}`)
			m.MessageAttributes[ValueAttribute] = str("x")
		}, ValueAttribute},
		{"headers a string", func(m *events.SQSMessage) { m.MessageAttributes[HeadersAttribute] = str("x") }, HeadersAttribute},
		{"headers empty", func(m *events.SQSMessage) { m.MessageAttributes[HeadersAttribute] = bin(nil) }, HeadersAttribute},
		{"headers truncated name", func(m *events.SQSMessage) { m.MessageAttributes[HeadersAttribute] = bin([]byte{5, 'a'}) }, HeadersAttribute},
		{"headers no value length", func(m *events.SQSMessage) { m.MessageAttributes[HeadersAttribute] = bin([]byte{1, 'a'}) }, HeadersAttribute},
		{"headers truncated value", func(m *events.SQSMessage) { m.MessageAttributes[HeadersAttribute] = bin([]byte{1, 'a', 9, 'x'}) }, HeadersAttribute},
		{"headers bad varint", func(m *events.SQSMessage) {
			m.MessageAttributes[HeadersAttribute] = bin(bytes.Repeat([]byte{0xff}, 11))
		}, HeadersAttribute},
	} {
		t.Run(c.name, func(t *testing.T) {
			m := entryMessage(t, "msg-1", good)
			c.edit(&m)
			r, err := ReadRecord(&m)
			var de *DecodeError
			if !errors.As(err, &de) || de.Attribute != c.attr || de.MessageID != "msg-1" || r != nil {
				t.Fatalf("got %v, %v; want a *DecodeError on %s", r, err, c.attr)
			}
			if !strings.Contains(err.Error(), c.attr) || !strings.Contains(err.Error(), "msg-1") {
				t.Errorf("error %q does not name the attribute and the message", err)
			}
		})
	}
}

// TestRecordSharesNoMemory: the record does not alias the message, whose event the caller
// may reuse.
func TestRecordSharesNoMemory(t *testing.T) {
	e, _, err := entry(shapes()["headers"], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := entryMessage(t, "m", e)
	r, err := ReadRecord(&m)
	if err != nil {
		t.Fatal(err)
	}
	h := m.MessageAttributes[HeadersAttribute].BinaryValue
	for i := range h {
		h[i] = 0
	}
	if d := sameRecord(shapes()["headers"], r); d != "" {
		t.Error(d)
	}
}

// queue is a queue on a local-aws-sqs server.
type queue struct {
	c        *sqs.Client
	url, arn string
	fifo     bool
}

// newQueue creates queue name on srv (a FIFO queue when it ends in ".fifo").
func newQueue(t testing.TB, srv *standin.SQS, name string) *queue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := srv.Client()
	url, err := standin.CreateQueue(ctx, c, name, nil)
	if err != nil {
		t.Fatal(err)
	}
	return &queue{c: c, url: url, arn: "arn:aws:sqs:" + standin.Region + ":" + standin.AccountID + ":" + name, fifo: strings.HasSuffix(name, ".fifo")}
}

// sendBatch sends records with entry() in SendMessageBatch calls of at most 10 entries and
// 1 MiB, in order, and fails t on any failed entry.
func (q *queue) sendBatch(t testing.TB, recs []*kafkaevent.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const maxSize = limits.MaxSQSMessageBytes // before batch, the variable, hides the package
	var batch []types.SendMessageBatchRequestEntry
	total := 0
	flush := func() {
		if len(batch) == 0 {
			return
		}
		out, err := q.c.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: batch})
		if err != nil {
			t.Fatal(err)
		}
		if len(out.Failed) > 0 || len(out.Successful) != len(batch) {
			t.Fatalf("SendMessageBatch: %d sent, failed %+v", len(out.Successful), out.Failed)
		}
		batch, total = batch[:0], 0
	}
	for i, r := range recs {
		e, size, err := entry(r, q.fifo, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(batch) == 10 || total+size > maxSize {
			flush()
		}
		e.Id = aws.String(fmt.Sprint(i))
		batch, total = append(batch, e), total+size
	}
	flush()
}

// send sends one entry with SendMessage.
func (q *queue) send(t testing.TB, e types.SendMessageBatchRequestEntry) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	_, err := q.c.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: e.MessageBody,
		MessageAttributes: e.MessageAttributes, MessageSystemAttributes: e.MessageSystemAttributes,
		MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId})
	return err
}

// receive receives n messages and returns them as the event source mapping would deliver
// them, in events of at most 10 messages (a FIFO mapping's largest batch), in order.
func (q *queue) receive(t testing.TB, n int) []*events.SQSEvent {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	msgs, err := standintest.Receive(ctx, q.c, q.url, n, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != n {
		t.Fatalf("received %d messages, want %d", len(msgs), n)
	}
	var evs []*events.SQSEvent
	for len(msgs) > 0 {
		k := min(10, len(msgs))
		evs = append(evs, lambdaEvent(t, q.arn, msgs[:k]))
		msgs = msgs[k:]
	}
	return evs
}

// TestShapesThroughSQS sends records of every shape through local-aws-sqs, standard and FIFO,
// with SendMessageBatch and, for the largest, SendMessage, and rebuilds each from the message
// as Lambda delivers it.
func TestShapesThroughSQS(t *testing.T) {
	t.Parallel()
	srv := standintest.StartSQS(t)
	all := shapes()
	names := make([]string, 0, len(all))
	for name := range all {
		names = append(names, name)
	}
	sort.Strings(names)
	var recs []*kafkaevent.Record
	for i, name := range names {
		all[name].Offset = int64(1000 + i) // one position each, to match them up
		recs = append(recs, all[name])
	}
	for _, qname := range []string{"shapes", "shapes.fifo"} {
		t.Run(qname, func(t *testing.T) {
			q := newQueue(t, srv, qname)
			want := map[int64]*kafkaevent.Record{}
			for i, r := range recs {
				want[int64(1000+i)] = r
			}
			q.sendBatch(t, recs)
			// The largest messages SQS takes, text and binary, alone in their calls.
			for i, binary := range []bool{false, true} {
				r, size := largest(t, binary, int64(2000+i))
				want[r.Offset] = r
				e, _, err := entry(r, q.fifo, nil)
				if err != nil {
					t.Fatal(err)
				}
				if err := q.send(t, e); err != nil {
					t.Fatalf("binary=%v: SQS refused the largest message entry allows (%d bytes): %v", binary, size, err)
				}
				// At one byte more than 1 MiB SQS refuses it: entry counts as SQS does.
				over := e
				over.MessageBody = aws.String(aws.ToString(e.MessageBody) + strings.Repeat("x", limits.MaxSQSMessageBytes-size+1))
				over.MessageDeduplicationId = aws.String("over")
				if err := q.send(t, over); err == nil {
					t.Fatalf("binary=%v: SQS took a message of %d bytes: entry does not count as SQS does", binary, limits.MaxSQSMessageBytes+1)
				}
				// A value one byte longer, entry refuses with a typed error.
				r2 := *r
				r2.Value = append(r.Value[:len(r.Value):len(r.Value)], r.Value[0])
				var ee *EncodeError
				if _, _, err := entry(&r2, q.fifo, nil); !errors.As(err, &ee) || !errors.Is(err, batch.ErrMessageTooLarge) {
					t.Fatalf("binary=%v: entry of a record one byte over: %v", binary, err)
				}
			}
			got := 0
			for _, ev := range q.receive(t, len(want)) {
				for _, m := range ev.Records {
					r, err := ReadRecord(&m)
					if err != nil {
						t.Fatal(err)
					}
					w, ok := want[r.Offset]
					if !ok {
						t.Fatalf("message %s: offset %d not sent, or received twice", m.MessageId, r.Offset)
					}
					delete(want, r.Offset)
					if d := sameRecord(w, r); d != "" {
						t.Errorf("offset %d: %s", r.Offset, d)
					}
					if q.fifo && m.Attributes["MessageGroupId"] != groupByKey(w) {
						t.Errorf("offset %d: group %q", r.Offset, m.Attributes["MessageGroupId"])
					}
					got++
				}
			}
			if len(want) != 0 {
				t.Errorf("%d records not received", len(want))
			}
		})
	}
}

// TestLambdaAttributeShapes checks the JSON this package's messages take in the event Lambda
// delivers: String attributes as stringValue, Binary ones as binaryValue in base64, with
// their dataType, and the AWSTraceHeader system attribute among attributes.
func TestLambdaAttributeShapes(t *testing.T) {
	t.Parallel()
	srv := standintest.StartSQS(t)
	q := newQueue(t, srv, "attrs")
	r := shapes()["headers"]
	r.Value = []byte{0xff, 0xfe}
	q.sendBatch(t, []*kafkaevent.Record{r})
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	msgs, err := standintest.Receive(ctx, q.c, q.url, 1, 10*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("%d messages, %v", len(msgs), err)
	}
	ev := lambdaEvent(t, q.arn, msgs)
	data, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	var raw struct {
		Records []struct {
			Attributes        map[string]string                     `json:"attributes"`
			MessageAttributes map[string]map[string]json.RawMessage `json:"messageAttributes"`
		}
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		t.Fatal(err)
	}
	ma := raw.Records[0].MessageAttributes
	for name, want := range map[string]string{RecordAttribute: "String", HeadersAttribute: "Binary", ValueAttribute: "Binary", TraceParentAttribute: "String", TraceStateAttribute: "String"} {
		a, ok := ma[name]
		if !ok {
			t.Errorf("no attribute %s", name)
			continue
		}
		if string(a["dataType"]) != `"`+want+`"` {
			t.Errorf("%s: dataType %s, want %s", name, a["dataType"], want)
		}
		field := map[string]string{"String": "stringValue", "Binary": "binaryValue"}[want]
		var s string
		if err := json.Unmarshal(a[field], &s); err != nil || s == "" {
			t.Errorf("%s: %s = %s, want a string", name, field, a[field])
		}
	}
	var b64 string
	_ = json.Unmarshal(ma[ValueAttribute]["binaryValue"], &b64)
	if b64 != base64.StdEncoding.EncodeToString([]byte{0xff, 0xfe}) {
		t.Errorf("binaryValue %q, want the value in base64", b64)
	}
	if got := raw.Records[0].Attributes["AWSTraceHeader"]; !strings.HasPrefix(got, "Root=1-5759e988") {
		t.Errorf("AWSTraceHeader %q", got)
	}
	got, err := ReadRecord(&ev.Records[0])
	if err != nil {
		t.Fatal(err)
	}
	if d := sameRecord(r, got); d != "" {
		t.Error(d)
	}
}

// naiveRecord is the obvious alternative format: the whole record as JSON in the body, bytes
// in base64 (encoding/json's []byte).
type naiveRecord struct {
	Topic         string `json:"topic"`
	Partition     int32  `json:"partition"`
	Offset        int64  `json:"offset"`
	Timestamp     int64  `json:"timestamp"`
	TimestampType string `json:"timestampType"`
	Key           []byte `json:"key"`
	Value         []byte `json:"value"`
	Headers       []struct {
		Key   string `json:"key"`
		Value []byte `json:"value"`
	} `json:"headers"`
}

// BenchmarkRecord rebuilds a record with a 200-byte JSON value, a key and two headers from
// its message, beside the obvious alternative: the record as JSON in the body, decoded with
// encoding/json.
//
//	go test -run '^$' -bench BenchmarkRecord -count 8 ./fanout/ | tee /tmp/rec.txt
//	GOWORK=off go tool -modfile=tools/go.mod benchstat -col /format /tmp/rec.txt
func BenchmarkRecord(b *testing.B) {
	value := []byte(`{"order":7,"customer":"c-1042","items":[{"sku":"A-1","qty":2,"price":12.5},{"sku":"B-7","qty":1,"price":3.25}],"total":28.25,"currency":"EUR","note":"leave at the door, ring twice"}`)
	value = append(value, bytes.Repeat([]byte(" "), 200-len(value))...)
	r := &kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 123456, Timestamp: time.UnixMilli(1700000000123).UTC(),
		TimestampType: kafkaevent.CreateTime, Key: []byte("customer-1042"), Value: value,
		Headers: []kafkaevent.Header{{Key: "source", Value: []byte("web")}, {Key: "traceparent", Value: []byte("00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01")}}}
	b.Run("format=toolkit", func(b *testing.B) {
		e, _, err := entry(r, false, nil)
		if err != nil {
			b.Fatal(err)
		}
		m := entryMessage(b, "m", e)
		b.ReportAllocs()
		for b.Loop() {
			if _, err := ReadRecord(&m); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("format=json-body", func(b *testing.B) {
		n := naiveRecord{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(),
			TimestampType: r.TimestampType, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			n.Headers = append(n.Headers, struct {
				Key   string `json:"key"`
				Value []byte `json:"value"`
			}{h.Key, h.Value})
		}
		body, err := json.Marshal(n)
		if err != nil {
			b.Fatal(err)
		}
		m := events.SQSMessage{MessageId: "m", Body: string(body)}
		b.ReportAllocs()
		for b.Loop() {
			var n naiveRecord
			if err := json.Unmarshal([]byte(m.Body), &n); err != nil {
				b.Fatal(err)
			}
			got := &kafkaevent.Record{Topic: n.Topic, Partition: n.Partition, Offset: n.Offset, Timestamp: time.UnixMilli(n.Timestamp).UTC(),
				TimestampType: n.TimestampType, Key: n.Key, Value: n.Value}
			for _, h := range n.Headers {
				got.Headers = append(got.Headers, kafkaevent.Header{Key: h.Key, Value: h.Value})
			}
		}
	})
}

// TestRecordFastPath: what entry writes for a record without schema metadata or escapes is
// read on the fast path, with the result encoding/json gives; anything else falls back.
func TestRecordFastPath(t *testing.T) {
	fast := 0
	for name, r := range shapes() {
		e, _, err := entry(r, false, nil)
		if err != nil {
			t.Fatal(err)
		}
		s := aws.ToString(e.MessageAttributes[RecordAttribute].StringValue)
		f, ok := readRecordFast(s)
		plain := r.KeySchema == nil && r.ValueSchema == nil && !strings.ContainsAny(s, `\`)
		if ok != plain {
			t.Errorf("%s: fast path %v for %s", name, ok, s)
		}
		if !ok {
			continue
		}
		fast++
		slow, err := readRecordJSON(s)
		if err != nil || fmt.Sprint(f) != fmt.Sprint(slow) {
			t.Errorf("%s: fast %+v, encoding/json %+v, %v", name, f, slow, err)
		}
	}
	if fast < 10 {
		t.Errorf("only %d shapes on the fast path", fast)
	}
	for _, s := range []string{
		`{"v":1,"topic":"t","partition":01,"offset":0,"timestamp":-1,"value":"text"}`,
		`{"v":1,"topic":"t","partition":1,"offset":0,"timestamp":-1,"value":"text"} `,
		`{"v":1,"topic":"t","partition":1,"offset":0,"timestamp":-1,"value":"text","x":1}`,
		`{"v":1,"topic":"t","partition":1,"offset":1e3,"timestamp":-1,"value":"text"}`,
		`{"v":1,"topic":"t","partition":2147483648,"offset":0,"timestamp":-1,"value":"text"}`,
		`{"v":1,"topic":"t","partition":1,"offset":9223372036854775808,"timestamp":-1,"value":"text"}`,
		`{"v":1,"topic":"t","partition":1,"offset":0,"timestamp":-1,"key":"a\/","value":"text"}`,
		`{"v":1,"topic":"t","partition":-,"offset":0,"timestamp":-1,"value":"text"}`,
	} {
		if f, ok := readRecordFast(s); ok {
			t.Errorf("fast path took %s: %+v", s, f)
		}
	}
}

// TestRecordMemoryBound: a message of 1 MiB (SQS's limit) cannot make Record allocate more than
// 24 times its size, whatever it holds: 524,288 headers cost their slice (40 bytes each) and
// one copy of the attribute, and a record attribute nested 500,000 levels deep is refused by
// encoding/json at 10,000.
func TestRecordMemoryBound(t *testing.T) {
	e, _, err := entry(shapes()["headers"], false, nil)
	if err != nil {
		t.Fatal(err)
	}
	m := entryMessage(t, "m", e)
	m.MessageAttributes[HeadersAttribute] = events.SQSMessageAttribute{DataType: "Binary", BinaryValue: bytes.Repeat([]byte{0, 0}, limits.MaxSQSMessageBytes/2)}
	var r *kafkaevent.Record
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	r, err = ReadRecord(&m)
	runtime.ReadMemStats(&after)
	if err != nil || len(r.Headers) != limits.MaxSQSMessageBytes/2 || r.Headers[0].Key != "" || r.Headers[0].Value != nil {
		t.Fatalf("524,288 null headers: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 24*limits.MaxSQSMessageBytes {
		t.Errorf("524,288 headers: Record allocated %d bytes for a %d-byte attribute, over 24 times", got, limits.MaxSQSMessageBytes)
	}

	deep := `{"v":1,"x":` + strings.Repeat("[", limits.MaxSQSMessageBytes/2) + `}`
	m = events.SQSMessage{MessageId: "deep", Body: "b", MessageAttributes: map[string]events.SQSMessageAttribute{
		RecordAttribute: {DataType: "String", StringValue: &deep}}}
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, err = ReadRecord(&m)
	runtime.ReadMemStats(&after)
	var de *DecodeError
	if !errors.As(err, &de) || de.Attribute != RecordAttribute || !strings.Contains(err.Error(), "exceeded max depth") {
		t.Fatalf("a record attribute nested 524,288 levels deep: %v", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 24*limits.MaxSQSMessageBytes {
		t.Errorf("deep record attribute: Record allocated %d bytes, over 24 times its size", got)
	}
}
