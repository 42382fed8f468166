package kafkaevent_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"sort"
	"strconv"
	"strings"
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
//
// It checks Parse with each base64 implementation this machine runs: the vector one (AVX2 on
// amd64, NEON on arm64) that Parse uses, and the plain Go one.
func compareWithAWS(t *testing.T, data []byte) {
	t.Helper()
	parsers := []struct {
		name  string
		parse func([]byte) (*kafkaevent.Event, error)
	}{{"Parse", kafkaevent.Parse}, {"Parse with plain Go base64", kafkaevent.ParseNoSIMD}}
	for _, p := range parsers {
		ev, err := p.parse(data)
		if err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		compareEventWithAWS(t, data, ev)
		if t.Failed() {
			t.Fatalf("%s differs from aws-lambda-go", p.name)
		}
	}
}

// compareEventWithAWS is compareWithAWS for the event ev that data parsed to.
func compareEventWithAWS(t *testing.T, data []byte, ev *kafkaevent.Event) {
	t.Helper()
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

// docRecord is a record of a payload in document order: its records key, its index under the
// key, and where its object starts.
type docRecord struct {
	key string
	idx int
	pos int
}

// docRecords lists the records of a payload written by randomEvent, in document order.
func docRecords(data []byte) []docRecord {
	var out []docRecord
	s := string(data)
	for i := 0; ; {
		k := strings.Index(s[i:], `{"topic":`)
		if k < 0 {
			return out
		}
		pos := i + k
		if s[pos-1] == '[' { // the first record of a key: "key":[{"topic":
			end := pos - 2
			start := strings.LastIndexByte(s[:end-1], '"')
			key, err := strconv.Unquote(s[start:end])
			if err != nil {
				panic(err)
			}
			out = append(out, docRecord{key: key, pos: pos})
		} else {
			prev := out[len(out)-1]
			out = append(out, docRecord{key: prev.key, idx: prev.idx + 1, pos: pos})
		}
		i = pos + 1
	}
}

// recordAt returns the record of ev under records key key at index idx.
func recordAt(t *testing.T, ev *kafkaevent.Event, key string, idx int) *kafkaevent.Record {
	t.Helper()
	for i := range ev.Partitions {
		if p := &ev.Partitions[i]; p.ID() == key {
			return &p.Records[idx]
		}
	}
	t.Fatalf("no partition %q", key)
	return nil
}

// encoding/json, and so aws-lambda-go, reads a member given twice as the last one; Parse never
// does. On random events with one member of one record given twice (first in the record, so
// that both the fast and the general path meet it), aws-lambda-go decodes the event; Parse fails
// it when the member is the record's topic, partition or offset, and otherwise marks that one
// record, naming the member, and reads every other record exactly as without the duplicate.
// Envelope members given twice fail Parse too.
func TestDifferentialDuplicates(t *testing.T) {
	r := rand.New(rand.NewPCG(13, 17))
	members := []struct {
		name     string
		twice    string // the member twice, as inserted at the start of a record
		identity bool
	}{
		{"topic", `"topic":"x","topic":"y",`, true},
		{"partition", `"partition":5,"partition":6,`, true},
		{"offset", `"offset":1,"offset":2,`, true},
		{"timestamp", `"timestamp":1,"timestamp":2,`, false},
		{"timestampType", `"timestampType":"CREATE_TIME","timestampType":"LOG_APPEND_TIME",`, false},
		{"key", `"key":"` + b64("k1") + `","key":"` + b64("k2") + `",`, false},
		{"value", `"value":"` + b64("v1") + `","value":"` + b64("v2") + `",`, false},
		{"headers", `"headers":[{"h":[1]}],"headers":[{"h":[2]}],`, false},
	}
	for i := 0; i < 200; i++ {
		orig := randomEvent(r)
		recs := docRecords(orig)
		m := members[i%len(members)]
		target := recs[r.IntN(len(recs))]
		data := slices.Concat(orig[:target.pos+1], []byte(m.twice), orig[target.pos+1:])
		path := "records[" + strconv.Quote(target.key) + "][" + strconv.Itoa(target.idx) + "]." + m.name

		var aws events.KafkaEvent
		if err := json.Unmarshal(data, &aws); err != nil {
			t.Fatalf("encoding/json: %v", err)
		}
		if v := aws.Records[target.key][target.idx].Value; m.name == "value" && v == b64("v1") {
			t.Fatalf("aws-lambda-go kept the first of several values") // it keeps the last
		}
		ev, err := kafkaevent.Parse(data)
		agree(t, data)
		if m.identity {
			var e *kafkaevent.Error
			if !errors.As(err, &e) || e.Path != path || !strings.Contains(e.Msg, "member appears twice") {
				t.Fatalf("Parse = %v; want an *Error at %s\n%s", err, path, data)
			}
			continue
		}
		if err != nil {
			t.Fatalf("Parse: %v\n%s", err, data)
		}
		got := recordAt(t, ev, target.key, target.idx)
		var e *kafkaevent.Error
		if !errors.As(got.Err, &e) || e.Path != path || !strings.Contains(e.Msg, "member appears twice") {
			t.Fatalf("record Err = %v; want an *Error at %s\n%s", got.Err, path, data)
		}
		// Every other record is what Parse gives without the duplicate, which
		// TestDifferentialRandom holds to aws-lambda-go's view.
		want := mustParse(t, string(orig))
		w := recordAt(t, want, target.key, target.idx)
		if got.Topic != w.Topic || got.Partition != w.Partition || got.Offset != w.Offset {
			t.Errorf("record %s/%d@%d, want %s/%d@%d", got.Topic, got.Partition, got.Offset, w.Topic, w.Partition, w.Offset)
		}
		*got = kafkaevent.Record{}
		*w = kafkaevent.Record{}
		if !reflect.DeepEqual(ev, want) {
			t.Fatalf("the other records differ from those of the event without the duplicate\n%s", data)
		}
	}
	env := `{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1}]}}`
	for _, c := range []struct{ name, in string }{
		{"records", strings.Replace(env, `}}`, `},"records":{}}`, 1)},
		{"eventSource", strings.Replace(env, `{"eventSource"`, `{"eventSource":"SelfManagedKafka","eventSource"`, 1)},
		{"eventSourceArn", strings.Replace(env, `"records"`, `"eventSourceArn":"a","eventSourceArn":"b","records"`, 1)},
		{"bootstrapServers", strings.Replace(env, `"records"`, `"bootstrapServers":"a:1","bootstrapServers":"b:1","records"`, 1)},
	} {
		var aws events.KafkaEvent
		if err := json.Unmarshal([]byte(c.in), &aws); err != nil {
			t.Fatalf("%s: encoding/json: %v", c.name, err)
		}
		_, err := kafkaevent.Parse([]byte(c.in))
		var e *kafkaevent.Error
		if !errors.As(err, &e) || e.Path != c.name || !strings.Contains(e.Msg, "member appears twice") {
			t.Errorf("%s: Parse = %v; want an *Error at %s", c.name, err, c.name)
		}
	}
}
