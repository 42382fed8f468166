package fanout

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// FuzzRecord gives ReadRecord messages of any content: it must return a record or a
// *DecodeError, never panic, and a record it returns must survive entry and ReadRecord again
// unchanged. The seed corpus is in testdata/fuzz/FuzzRecord, besides the messages of
// shapes().
func FuzzRecord(f *testing.F) {
	for _, r := range shapes() {
		e, _, err := entry(r, false, nil)
		if err != nil {
			f.Fatal(err)
		}
		a := e.MessageAttributes
		f.Add(aws.ToString(e.MessageBody), aws.ToString(a[RecordAttribute].StringValue), a[HeadersAttribute].BinaryValue, a[ValueAttribute].BinaryValue, uint8(0))
	}
	// Hostile seeds: a record attribute nested past encoding/json's 10,000 levels, headers
	// by the ten thousand, a header claiming more bytes than there are.
	rec := aws.ToString(func() *string {
		e, _, _ := entry(shapes()["headers"], false, nil)
		return e.MessageAttributes[RecordAttribute].StringValue
	}())
	f.Add("b", `{"v":1,"x":`+strings.Repeat("[", 10_001)+`}`, []byte(nil), []byte(nil), uint8(0))
	f.Add("b", rec, bytes.Repeat([]byte{0, 0}, 10_000), []byte(nil), uint8(0))
	f.Add("b", rec, bytes.Repeat([]byte{1, 'k', 2, 'v'}, 10_000), []byte(nil), uint8(0))
	f.Add("b", rec, []byte{0xff, 0xff, 0xff, 0xff, 0x0f, 'k'}, []byte(nil), uint8(0))
	f.Fuzz(func(t *testing.T, body, record string, headers, value []byte, flags uint8) {
		m := events.SQSMessage{MessageId: "fuzz", Body: body, MessageAttributes: map[string]events.SQSMessageAttribute{}}
		if flags&1 == 0 {
			m.MessageAttributes[RecordAttribute] = events.SQSMessageAttribute{DataType: "String", StringValue: &record}
		}
		if flags&2 == 0 && headers != nil {
			m.MessageAttributes[HeadersAttribute] = events.SQSMessageAttribute{DataType: "Binary", BinaryValue: headers}
		}
		if flags&4 == 0 && value != nil {
			m.MessageAttributes[ValueAttribute] = events.SQSMessageAttribute{DataType: "Binary", BinaryValue: value}
		}
		if fast, ok := readRecordFast(record); ok {
			slow, err := readRecordJSON(record)
			if err != nil {
				t.Fatalf("the fast path read %+v, encoding/json refuses it: %v", fast, err)
			}
			if fmt.Sprint(fast) != fmt.Sprint(slow) {
				t.Fatalf("the fast path read %+v, encoding/json %+v", fast, slow)
			}
		}
		r, err := ReadRecord(&m)
		if err != nil {
			if _, ok := err.(*DecodeError); !ok {
				t.Fatalf("error %T %v, want *DecodeError", err, err)
			}
			return
		}
		e, _, err := entry(r, false, nil)
		if err != nil {
			return // a record SQS cannot carry (a topic that is not UTF-8, say)
		}
		again, err := ReadRecord(new(entryMessage(t, "again", e)))
		if err != nil {
			t.Fatalf("a record ReadRecord returned does not decode again: %v", err)
		}
		if d := sameRecord(r, again); d != "" {
			t.Fatal(d)
		}
	})
}

// FuzzRoundTrip builds records of any content: entry either refuses one with an
// *EncodeError or ReadRecord rebuilds it byte for byte from the message Lambda would deliver.
func FuzzRoundTrip(f *testing.F) {
	f.Add("orders", int32(3), int64(42), int64(1700000000123), "CreateTime", []byte("k"), []byte(`{"a":1}`), "h", []byte("v"), uint8(0))
	f.Add("t", int32(0), int64(0), int64(-1), "", []byte{}, []byte{0xff}, "", []byte{}, uint8(0xff))
	f.Add("t\x01", int32(-1), int64(-1), int64(0), "\u2028", []byte(nil), []byte(nil), "\xff", []byte(nil), uint8(2))
	f.Fuzz(func(t *testing.T, topic string, partition int32, offset, ms int64, tsType string, key, value []byte, hname string, hvalue []byte, flags uint8) {
		r := &kafkaevent.Record{Topic: topic, Partition: partition, Offset: offset, TimestampType: tsType, Key: key, Value: value}
		if ms != -1 {
			r.Timestamp = time.UnixMilli(ms).UTC()
		}
		if flags&1 != 0 {
			r.Key = nil
		}
		if flags&2 != 0 {
			r.Value = nil
		}
		if flags&4 != 0 {
			hv := hvalue
			if flags&8 != 0 {
				hv = nil
			}
			r.Headers = []kafkaevent.Header{{Key: hname, Value: hv}, {Key: hname, Value: value}}
		}
		if flags&16 != 0 {
			r.ValueSchema = &kafkaevent.SchemaMetadata{DataFormat: tsType, SchemaID: hname}
		}
		e, size, err := entry(r, flags&32 != 0, nil)
		if err != nil {
			if _, ok := err.(*EncodeError); !ok {
				t.Fatalf("error %T %v, want *EncodeError", err, err)
			}
			return
		}
		if size > limits.MaxSQSMessageBytes {
			t.Fatalf("size %d accepted", size)
		}
		if !textOK([]byte(aws.ToString(e.MessageBody))) || aws.ToString(e.MessageBody) == "" {
			t.Fatalf("body %q: SQS would refuse it", aws.ToString(e.MessageBody))
		}
		for name, a := range e.MessageAttributes {
			if a.StringValue != nil && !textOK([]byte(*a.StringValue)) {
				t.Fatalf("attribute %s %q: SQS would refuse it", name, *a.StringValue)
			}
		}
		if flags&32 != 0 {
			if err := checkGroupID(aws.ToString(e.MessageGroupId)); err != nil {
				t.Fatalf("group ID: %v", err)
			}
			if err := checkGroupID(aws.ToString(e.MessageDeduplicationId)); err != nil {
				t.Fatalf("deduplication ID: %v", err)
			}
		}
		got, err := ReadRecord(new(entryMessage(t, "m", e)))
		if err != nil {
			t.Fatal(err)
		}
		if d := sameRecord(r, got); d != "" {
			t.Fatal(d)
		}
	})
}
