package kafkaevent_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// randomEvent writes a valid ESM event in the wire format, with the variety Lambda produces:
// several topics (dashes and dots) and partitions, large offsets, keys and values of any bytes,
// signed header bytes, repeated header names.
func randomEvent(r *rand.Rand) []byte {
	var b bytes.Buffer
	src := []string{`"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:eu-west-1:123456789012:cluster/c/x"`, `"eventSource":"SelfManagedKafka"`}[r.IntN(2)]
	fmt.Fprintf(&b, `{%s,"bootstrapServers":"b-1:9092,b-2:9092","records":{`, src)
	topics := []string{"orders", "orders.v1-eu", "a-b-c", "x"}
	seen := map[string]bool{}
	for p := 0; p < 1+r.IntN(4); p++ {
		topic := topics[r.IntN(len(topics))]
		part := r.Int32N(20)
		id := fmt.Sprintf("%s-%d", topic, part)
		if seen[id] {
			continue
		}
		if len(seen) > 0 {
			b.WriteByte(',')
		}
		seen[id] = true
		fmt.Fprintf(&b, `%q:[`, id)
		off := r.Int64N(1 << 62)
		for i := 0; i < 1+r.IntN(5); i++ {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"topic":%q,"partition":%d,"offset":%d,"timestamp":%d,"timestampType":%q`,
				topic, part, off+int64(i), r.Int64N(1<<42), []string{"CREATE_TIME", "LOG_APPEND_TIME"}[r.IntN(2)])
			if r.IntN(4) > 0 {
				fmt.Fprintf(&b, `,"key":%q`, base64.StdEncoding.EncodeToString(randBytes(r, 1+r.IntN(40))))
			}
			if r.IntN(5) > 0 {
				fmt.Fprintf(&b, `,"value":%q`, base64.StdEncoding.EncodeToString(randBytes(r, 1+r.IntN(400))))
			}
			b.WriteString(`,"headers":[`)
			for h := 0; h < r.IntN(4); h++ {
				if h > 0 {
					b.WriteByte(',')
				}
				fmt.Fprintf(&b, `{%q:[`, []string{"content-type", "trace", "ë"}[r.IntN(3)])
				for k, c := range randBytes(r, r.IntN(10)) {
					if k > 0 {
						b.WriteByte(',')
					}
					fmt.Fprint(&b, int8(c))
				}
				b.WriteString("]}")
			}
			b.WriteString("]}")
		}
		b.WriteByte(']')
	}
	b.WriteString("}}")
	return b.Bytes()
}

func randBytes(r *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(r.UintN(256))
	}
	return b
}

// awsView is what encoding/json into events.KafkaEvent plus base64 yields, record by record,
// in Parse's order.
type awsRecord struct {
	id            string
	topic         string
	partition     int64
	offset        int64
	timestampMs   int64
	timestampType string
	key, value    []byte
	headers       []kafkaevent.Header
}

func awsView(t *testing.T, data []byte) []awsRecord {
	t.Helper()
	var ev events.KafkaEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		t.Fatalf("encoding/json: %v", err)
	}
	var ids []string
	for id := range ev.Records {
		ids = append(ids, id)
	}
	// Parse sorts by topic then number; sort the same way here, independently.
	sort.Slice(ids, func(i, j int) bool {
		a, b := ev.Records[ids[i]], ev.Records[ids[j]]
		if a[0].Topic != b[0].Topic {
			return a[0].Topic < b[0].Topic
		}
		return a[0].Partition < b[0].Partition
	})
	var out []awsRecord
	for _, id := range ids {
		for _, r := range ev.Records[id] {
			ar := awsRecord{id: id, topic: r.Topic, partition: r.Partition, offset: r.Offset,
				timestampMs: r.Timestamp.UnixMilli(), timestampType: r.TimestampType}
			var err error
			if ar.key, err = base64.StdEncoding.DecodeString(r.Key); err != nil {
				t.Fatal(err)
			}
			if ar.value, err = base64.StdEncoding.DecodeString(r.Value); err != nil {
				t.Fatal(err)
			}
			for _, h := range r.Headers {
				for k, v := range h {
					ar.headers = append(ar.headers, kafkaevent.Header{Key: k, Value: []byte(v)})
				}
			}
			out = append(out, ar)
		}
	}
	return out
}

// compareWithAWS checks that every field Parse yields equals what aws-lambda-go yields. The
// only differences allowed are the ones aws-lambda-go cannot express: it reads absent, null and
// "" all as "", so a nil Key or Value compares equal to an empty one.
func compareWithAWS(t *testing.T, data []byte) {
	t.Helper()
	ev, err := kafkaevent.Parse(data)
	if err != nil {
		t.Fatalf("Parse: %v", err)
	}
	want := awsView(t, data)
	var got []*kafkaevent.Record
	for r := range ev.All() {
		got = append(got, r)
	}
	if len(got) != len(want) {
		t.Fatalf("Parse yields %d records, aws-lambda-go %d", len(got), len(want))
	}
	for i, r := range got {
		w := want[i]
		if r.Err != nil {
			t.Fatalf("record %d: Err = %v", i, r.Err)
		}
		if r.PartitionID() != w.id || r.Topic != w.topic || int64(r.Partition) != w.partition || r.Offset != w.offset {
			t.Errorf("record %d: %s/%d@%d, aws-lambda-go %s/%d@%d", i, r.Topic, r.Partition, r.Offset, w.topic, w.partition, w.offset)
		}
		if r.Timestamp.UnixMilli() != w.timestampMs && !(r.Timestamp.IsZero() && w.timestampMs == -1) {
			t.Errorf("record %d: timestamp %v, aws-lambda-go %d ms", i, r.Timestamp, w.timestampMs)
		}
		if r.TimestampType != w.timestampType {
			t.Errorf("record %d: timestampType %q vs %q", i, r.TimestampType, w.timestampType)
		}
		if !bytes.Equal(r.Key, w.key) || !bytes.Equal(r.Value, w.value) {
			t.Errorf("record %d: key/value %q/%q, aws-lambda-go %q/%q", i, r.Key, r.Value, w.key, w.value)
		}
		if len(r.Headers) != len(w.headers) {
			t.Errorf("record %d: %d headers, aws-lambda-go %d", i, len(r.Headers), len(w.headers))
			continue
		}
		for k := range r.Headers {
			if r.Headers[k].Key != w.headers[k].Key || !bytes.Equal(r.Headers[k].Value, w.headers[k].Value) {
				t.Errorf("record %d header %d: %q=%v, aws-lambda-go %q=%v", i, k, r.Headers[k].Key, r.Headers[k].Value, w.headers[k].Key, w.headers[k].Value)
			}
		}
	}
	var src string
	switch ev.Source {
	case kafkaevent.SourceMSK:
		src = "aws:kafka"
	case kafkaevent.SourceSelfManaged:
		src = "SelfManagedKafka"
	}
	var env events.KafkaEvent
	_ = json.Unmarshal(data, &env)
	if src != env.EventSource || ev.SourceARN != env.EventSourceARN {
		t.Errorf("source %q %q, aws-lambda-go %q %q", ev.Source, ev.SourceARN, env.EventSource, env.EventSourceARN)
	}
}

func TestDifferentialRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(7, 11))
	for i := 0; i < 300; i++ {
		compareWithAWS(t, randomEvent(r))
		if t.Failed() {
			return
		}
	}
}

func TestDifferentialLarge(t *testing.T) {
	compareWithAWS(t, largeEvent())
}

// The fixtures aws-lambda-go can read (its header bytes are int8: unsigned ones fail there).
func TestDifferentialFixtures(t *testing.T) {
	files, _ := filepath.Glob("../testdata/events/*.json")
	if len(files) == 0 {
		t.Fatal("no fixtures in ../testdata/events")
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var probe events.KafkaEvent
		if json.Unmarshal(data, &probe) != nil {
			continue
		}
		t.Run(filepath.Base(f), func(t *testing.T) { compareWithAWS(t, data) })
	}
}
