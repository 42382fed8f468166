package producer_test

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
)

// input is a record as the event source mapping delivers it.
func input(topic string, partition int32, offset int64, headers ...kafkaevent.Header) *kafkaevent.Record {
	return &kafkaevent.Record{Topic: topic, Partition: partition, Offset: offset, Headers: headers}
}

// carrying is a record of topic out whose SourceHeader values are vals.
func carrying(vals ...[]byte) *kafkaevent.Record {
	r := input("out", 2, 17)
	for _, v := range vals {
		r.Headers = append(r.Headers, kafkaevent.Header{Key: producer.SourceHeader, Value: v})
	}
	return r
}

func TestSetSourceReadSource(t *testing.T) {
	for _, tc := range []struct {
		src   *kafkaevent.Record
		index int
		want  string
	}{
		{input("orders", 3, 1042), 0, "orders/3/1042/0"},
		{input("a", 0, 0), 7, "a/0/0/7"},
		{input("Orders.v2_eu-west-1", math.MaxInt32, math.MaxInt64), math.MaxInt, fmt.Sprintf("Orders.v2_eu-west-1/2147483647/9223372036854775807/%d", math.MaxInt)},
		{input(strings.Repeat("t", 249), 1, 2), 3, strings.Repeat("t", 249) + "/1/2/3"},
	} {
		rec := &kgo.Record{Topic: "out", Headers: []kgo.RecordHeader{
			{Key: "traceparent", Value: []byte("00-abc-def-01")},
			{Key: producer.SourceHeader, Value: []byte("upstream/0/1/0")}, // the input's own: replaced
			{Key: "tenant", Value: []byte("acme")},
			{Key: producer.SourceHeader, Value: []byte("upstream/0/1/1")},
		}}
		if err := producer.SetSource(rec, tc.src, tc.index); err != nil {
			t.Fatalf("SetSource(%s): %v", tc.want, err)
		}
		var names []string
		for _, h := range rec.Headers {
			names = append(names, h.Key)
		}
		if got := strings.Join(names, ","); got != "traceparent,tenant,kafkalambda-source" {
			t.Errorf("headers after SetSource: %s", got)
		}
		if got := string(rec.Headers[2].Value); got != tc.want {
			t.Errorf("header = %q, want %q", got, tc.want)
		}
		// Back through the wire format the event source mapping delivers.
		ev := kafkaeventtest.NewBuilder().Add("out", 0, []byte("v"),
			kafkaeventtest.WithHeader(producer.SourceHeader, rec.Headers[2].Value)).Event()
		data, err := ev.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := kafkaevent.Parse(data)
		if err != nil {
			t.Fatal(err)
		}
		r := &parsed.Partitions[0].Records[0]
		s, err := producer.ReadSource(r)
		want := producer.Source{Topic: tc.src.Topic, Partition: tc.src.Partition, Offset: tc.src.Offset, Index: tc.index}
		if err != nil || s != want {
			t.Errorf("ReadSource = %+v, %v; want %+v", s, err, want)
		}
		if key, err := producer.SourceKey(r); err != nil || key != tc.want {
			t.Errorf("SourceKey = %q, %v; want %q", key, err, tc.want)
		}
	}
}

func TestSetSourceRefuses(t *testing.T) {
	for _, tc := range []struct {
		src   *kafkaevent.Record
		index int
		want  string
	}{
		{input("", 0, 0), 0, "the topic is empty"},
		{input("in/put", 0, 0), 0, `the topic "in/put" has "/" at byte 2`},
		{input("in put", 0, 0), 0, `has " " at byte 2`},
		{input("caf\u00e9", 0, 0), 0, `has "é" at byte 3`},
		{input("caf\xff", 0, 0), 0, `has "\xff" at byte 3`},
		{input(strings.Repeat("t", 250), 0, 0), 0, "250 bytes long, more than Kafka's 249"},
		{input("in", -1, 0), 0, "the partition -1 is negative"},
		{input("in", 0, -1), 0, "the offset -1 is negative"},
		{input("in", 0, 0), -1, "the index -1 is negative"},
	} {
		before := []kgo.RecordHeader{{Key: producer.SourceHeader, Value: []byte("x/0/0/0")}}
		rec := &kgo.Record{Headers: before}
		err := producer.SetSource(rec, tc.src, tc.index)
		var se *producer.SourceError
		if !errors.Is(err, producer.ErrMalformedSource) || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("SetSource(%q, %d, %d, index %d) = %v, want ErrMalformedSource saying %q", tc.src.Topic, tc.src.Partition, tc.src.Offset, tc.index, err, tc.want)
			continue
		}
		if se.Topic != tc.src.Topic || se.Offset != tc.src.Offset {
			t.Errorf("SourceError names %s@%d, want the input", se.Topic, se.Offset)
		}
		if len(rec.Headers) != 1 || string(rec.Headers[0].Value) != "x/0/0/0" {
			t.Errorf("a refused SetSource changed the headers: %v", rec.Headers)
		}
	}
}

func TestReadSourceErrors(t *testing.T) {
	r := input("out", 2, 17, kafkaevent.Header{Key: "other", Value: []byte("in/0/0/0")})
	_, err := producer.ReadSource(r)
	var se *producer.SourceError
	if !errors.Is(err, producer.ErrNoSource) || errors.Is(err, producer.ErrMalformedSource) || !errors.As(err, &se) {
		t.Fatalf("no header: %v, want a *SourceError wrapping ErrNoSource", err)
	}
	if se.Topic != "out" || se.Partition != 2 || se.Offset != 17 {
		t.Errorf("SourceError names %s-%d@%d, want out-2@17", se.Topic, se.Partition, se.Offset)
	}
	if got, want := err.Error(), "producer: record out-2 at offset 17: producer: no kafkalambda-source header"; got != want {
		t.Errorf("error %q, want %q", got, want)
	}
	if _, err := producer.SourceKey(r); !errors.Is(err, producer.ErrNoSource) {
		t.Errorf("SourceKey without the header: %v", err)
	}

	for _, tc := range []struct {
		vals [][]byte
		want string
	}{
		{[][]byte{[]byte("in/0/1/0"), []byte("in/0/1/0")}, "given 2 times"},
		{[][]byte{nil}, "the value is null"},
		{[][]byte{[]byte("")}, "got 1 fields"},
		{[][]byte{[]byte("in/0/1")}, "want topic/partition/offset/index, got 3 fields"},
		{[][]byte{[]byte("in/0/1/0/0")}, "got 5 fields"},
		{[][]byte{[]byte("/0/1/0")}, "the topic is empty"},
		{[][]byte{[]byte("i n/0/1/0")}, `has " " at byte 1`},
		{[][]byte{[]byte("in/x/1/0")}, `the partition "x" is not a decimal number from 0 to 2147483647`},
		{[][]byte{[]byte("in/-1/1/0")}, `the partition "-1"`},
		{[][]byte{[]byte("in/+1/1/0")}, `the partition "+1"`},
		{[][]byte{[]byte("in/01/1/0")}, `the partition "01"`},
		{[][]byte{[]byte("in/2147483648/1/0")}, `the partition "2147483648"`},
		{[][]byte{[]byte("in/0/9223372036854775808/0")}, `the offset "9223372036854775808" is not a decimal number from 0 to 9223372036854775807`},
		{[][]byte{[]byte("in/0/ 1/0")}, `the offset " 1"`},
		{[][]byte{[]byte("in/0/1/")}, `the index ""`},
		{[][]byte{[]byte("in/0/1/0\n")}, `the index "0\n"`},
		{[][]byte{[]byte("in/0/1/1e3")}, `the index "1e3"`},
		{[][]byte{[]byte(strings.Repeat("é", 40) + "/0/1/0")}, `"...: the topic "éééééééééééééééééééééééééééééééé"... has "é" at byte 0`},
	} {
		r := carrying(tc.vals...)
		_, err := producer.ReadSource(r)
		if !errors.Is(err, producer.ErrMalformedSource) || !errors.As(err, &se) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want ErrMalformedSource saying %q", tc.vals, err, tc.want)
			continue
		}
		if strings.ContainsAny(err.Error(), "\n\r") {
			t.Errorf("%q: error on more than one line: %q", tc.vals, err)
		}
		if _, kerr := producer.SourceKey(r); kerr == nil || kerr.Error() != err.Error() {
			t.Errorf("%q: SourceKey: %v, want %v", tc.vals, kerr, err)
		}
	}
}

// FuzzReadSource: no panic; a value is read only if it is exactly what SetSource writes for
// what was read; every refusal is a one-line *SourceError wrapping ErrMalformedSource.
func FuzzReadSource(f *testing.F) {
	for _, s := range []string{"orders/3/1042/0", "in/0/0/0", "in/0/1", "in/01/1/0", "in/0/1/0/0",
		"a/2147483647/9223372036854775807/9223372036854775807", "in/2147483648/0/0", "/0/0/0", "in/-0/0/0", "in/0/0/+0", "\xff/0/0/0"} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, v []byte) {
		r := carrying(v)
		s, err := producer.ReadSource(r)
		if err != nil {
			var se *producer.SourceError
			if !errors.Is(err, producer.ErrMalformedSource) || !errors.As(err, &se) || strings.ContainsAny(err.Error(), "\r\n") {
				t.Fatalf("%q: %v", v, err)
			}
			return
		}
		if s.String() != string(v) {
			t.Fatalf("%q read as %+v, which writes %q", v, s, s.String())
		}
		rec := &kgo.Record{}
		if err := producer.SetSource(rec, input(s.Topic, s.Partition, s.Offset), s.Index); err != nil {
			t.Fatalf("%q read, but SetSource refuses %+v: %v", v, s, err)
		}
		if string(rec.Headers[0].Value) != string(v) {
			t.Fatalf("%q read, SetSource writes %q", v, rec.Headers[0].Value)
		}
	})
}
