package main

import (
	"bytes"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// murmur2 is Kafka's murmur2 hash (org.apache.kafka.common.utils.Utils.murmur2), written
// from the published algorithm, so the test does not take franz-go's word for where a Java
// client puts a key.
func murmur2(data []byte) uint32 {
	const (
		seed uint32 = 0x9747b28c
		m    uint32 = 0x5bd1e995
		r           = 24
	)
	h := seed ^ uint32(len(data))
	for len(data) >= 4 {
		k := uint32(data[0]) | uint32(data[1])<<8 | uint32(data[2])<<16 | uint32(data[3])<<24
		k *= m
		k ^= k >> r
		k *= m
		h *= m
		h ^= k
		data = data[4:]
	}
	switch len(data) {
	case 3:
		h ^= uint32(data[2]) << 16
		fallthrough
	case 2:
		h ^= uint32(data[1]) << 8
		fallthrough
	case 1:
		h ^= uint32(data[0])
		h *= m
	}
	h ^= h >> 13
	h *= m
	h ^= h >> 15
	return h
}

// javaPartition is the partition a Java client's default partitioner gives key among n.
func javaPartition(key []byte, n int) int32 { return int32(int(murmur2(key)&0x7fffffff) % n) }

func TestMurmur2KnownValues(t *testing.T) {
	// Values from Kafka's own UtilsTest.testMurmur2 (as signed 32-bit ints).
	for in, want := range map[string]int32{
		"21": -973932308, "foobar": -790332482, "a-little-bit-long-string": -985981536,
		"a-little-bit-longer-string": -1486304829, "lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8": -58897971,
		"abc": 479470107,
	} {
		if got := int32(murmur2([]byte(in))); got != want {
			t.Errorf("murmur2(%q) = %d, want %d", in, got, want)
		}
	}
}

// roundTripInput is JSON Lines for produce: each record carries its index in header "seq",
// first, so that it can be found again in the event.
const roundTripInput = `{"key":"order-1","value":{"id":1},"headers":[{"key":"seq","value":"0"},{"key":"content-type","value":"application/json"}]}
{"key":"order-2","value":"two","headers":[{"key":"seq","value":"1"}]}
{"key":"order-1","value":null,"headers":[{"key":"seq","value":"2"}]}
{"value":"no key","headers":[{"key":"seq","value":"3"}]}
{"key":"","value":"","headers":[{"key":"seq","value":"4"}]}
{"keyBase64":"AP8=","valueBase64":"3q2+7wCA","headers":[{"key":"seq","value":"5"},{"key":"dup","value":"a"},{"key":"bin","valueBase64":"AP+AfyE="},{"key":"dup","value":"b"},{"key":"nil","value":null},{"key":"dup","value":""}]}
{"topic":"elsewhere","partition":3,"key":"order-1","value":"pinned","headers":[{"key":"seq","value":"6"}]}
{"partition":0,"value":"pinned keyless","timestamp":"2026-01-15T10:00:00.250Z","headers":[{"key":"seq","value":"7"}]}
{"key":"order-3","value":"three","headers":[{"key":"seq","value":"8"}]}
`

func TestProduceConsumeEventRoundTrip(t *testing.T) {
	// klt produce, then klt consume --event, then kafkaevent.Parse gives back the records:
	// keys (null and empty too), values (tombstones, empty, binary), headers in order with
	// repeated names, binary bytes and a null value, the partitions lines name, murmur2 for
	// the others, and the timestamps lines give.
	const partitions = 4
	cluster := startKafka(t, partitions, "orders")
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	before := time.Now().Add(-time.Second)

	r := klt(t, roundTripInput, "produce", "--brokers", brokers, "--no-tls", "--topic", "orders")
	if r.code != base.ExitOK || r.stdout != "" || r.stderr != "" {
		t.Fatalf("produce: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	want, err := jsonl.ReadLines(t.Context(), "input", strings.NewReader(roundTripInput), false)
	if err != nil {
		t.Fatal(err)
	}

	r = klt(t, "", "consume", "--brokers", brokers, "--no-tls", "--topic", "orders", "--from-beginning",
		"--max", strconv.Itoa(len(want)), "--timeout", "5s", "--event")
	if r.code != base.ExitOK || r.stderr != "" {
		t.Fatalf("consume --event: exit %d, stderr %q", r.code, r.stderr)
	}
	ev, err := kafkaevent.Parse([]byte(r.stdout))
	if err != nil {
		t.Fatalf("Parse: %v\n%s", err, r.stdout)
	}
	if ev.Source != kafkaevent.SourceSelfManaged || ev.SourceARN != "" || !slices.Equal(ev.BootstrapServers, cluster.ListenAddrs()) {
		t.Errorf("envelope: source %q, ARN %q, bootstrapServers %q; want SelfManagedKafka, none, %q",
			ev.Source, ev.SourceARN, ev.BootstrapServers, cluster.ListenAddrs())
	}
	if ev.Len() != len(want) {
		t.Fatalf("the event has %d records, want %d:\n%s", ev.Len(), len(want), r.stdout)
	}

	got := make([]*kafkaevent.Record, len(want))
	lastOffset := map[string]int64{}
	for _, p := range ev.Partitions {
		if p.ID() != fmt.Sprintf("orders-%d", p.Number) {
			t.Errorf("partition key %q, want orders-%d", p.ID(), p.Number)
		}
	}
	for rec := range ev.All() {
		if rec.Err != nil {
			t.Fatalf("record %s@%d: %v", rec.PartitionID(), rec.Offset, rec.Err)
		}
		seq, _ := rec.Header("seq")
		i, err := strconv.Atoi(string(seq))
		if err != nil || i < 0 || i >= len(want) || got[i] != nil {
			t.Fatalf("record %s@%d has seq %q", rec.PartitionID(), rec.Offset, seq)
		}
		got[i] = rec
		if last, ok := lastOffset[rec.PartitionID()]; ok && rec.Offset <= last {
			t.Errorf("%s: offset %d after %d", rec.PartitionID(), rec.Offset, last)
		}
		lastOffset[rec.PartitionID()] = rec.Offset
	}
	// Records of one partition keep the input order.
	for i := range got {
		for j := i + 1; j < len(got); j++ {
			if got[i].Partition == got[j].Partition && got[i].Offset > got[j].Offset {
				t.Errorf("records %d and %d of partition %d are out of order", i, j, got[i].Partition)
			}
		}
	}
	for i, w := range want {
		g := got[i]
		if g.Topic != "orders" {
			t.Errorf("record %d: topic %q, want orders (--topic)", i, g.Topic)
		}
		if !bytesEqualNil(g.Key, w.Record.Key) {
			t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, g.Key, g.Key == nil, w.Record.Key, w.Record.Key == nil)
		}
		if !bytesEqualNil(g.Value, w.Record.Value) {
			t.Errorf("record %d: value %q (nil %v), want %q (nil %v)", i, g.Value, g.Value == nil, w.Record.Value, w.Record.Value == nil)
		}
		if len(g.Headers) != len(w.Record.Headers) {
			t.Errorf("record %d: headers %q, want %q", i, g.Headers, w.Record.Headers)
		} else {
			for j := range g.Headers {
				if g.Headers[j].Key != w.Record.Headers[j].Key || !bytesEqualNil(g.Headers[j].Value, w.Record.Headers[j].Value) {
					t.Errorf("record %d header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, j, g.Headers[j].Key, g.Headers[j].Value,
						g.Headers[j].Value == nil, w.Record.Headers[j].Key, w.Record.Headers[j].Value, w.Record.Headers[j].Value == nil)
				}
			}
		}
		switch {
		case w.HasPartition:
			if g.Partition != w.Record.Partition {
				t.Errorf("record %d: partition %d, want %d (the line's)", i, g.Partition, w.Record.Partition)
			}
		case w.Record.Key != nil:
			if p := javaPartition(w.Record.Key, partitions); g.Partition != p {
				t.Errorf("record %d: key %q in partition %d, want %d (murmur2)", i, w.Record.Key, g.Partition, p)
			}
		}
		if w.HasTimestamp {
			if !g.Timestamp.Equal(w.Record.Timestamp) {
				t.Errorf("record %d: timestamp %v, want %v (the line's)", i, g.Timestamp, w.Record.Timestamp)
			}
		} else if g.Timestamp.Before(before) || g.Timestamp.After(time.Now().Add(time.Second)) {
			t.Errorf("record %d: timestamp %v, want the time it was produced", i, g.Timestamp)
		}
		if g.TimestampType != kafkaevent.CreateTime {
			t.Errorf("record %d: timestampType %q, want CREATE_TIME", i, g.TimestampType)
		}
	}

	// Without --event, consume prints exactly what klt event decode prints for the event.
	lines := klt(t, "", "consume", "--brokers", brokers, "--no-tls", "--topic", "orders", "--from-beginning",
		"--max", strconv.Itoa(len(want)), "--timeout", "5s")
	decoded := klt(t, r.stdout, "event", "decode")
	if lines.code != base.ExitOK || decoded.code != base.ExitOK {
		t.Fatalf("consume: exit %d %q; decode: exit %d %q", lines.code, lines.stderr, decoded.code, decoded.stderr)
	}
	if sortedLines(lines.stdout) != sortedLines(decoded.stdout) {
		t.Errorf("consume printed\n%s\nklt event decode of its --event printed\n%s", lines.stdout, decoded.stdout)
	}
}

// bytesEqualNil reports whether a and b hold the same bytes and are both nil or both not.
func bytesEqualNil(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

// sortedLines returns the lines of s sorted: consume prints partitions in the order they
// arrive, decode in the event's.
func sortedLines(s string) string {
	l := strings.Split(strings.TrimSuffix(s, "\n"), "\n")
	slices.Sort(l)
	return strings.Join(l, "\n")
}

func TestProduceNamesEveryFailedRecord(t *testing.T) {
	// Partition 1 refuses every record (INVALID_RECORD, an error retrying cannot fix): produce
	// names each of its lines, says how many failed, exits 1, and the other records land.
	cluster, err := kfake.NewCluster(kfake.NumBrokers(2), kfake.SeedTopics(2, "orders"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	// Partition 1 alone on the second broker, so its produce requests hold nothing else.
	if err := cluster.MoveTopicPartition("orders", 0, 0); err != nil {
		t.Fatal(err)
	}
	if err := cluster.MoveTopicPartition("orders", 1, 1); err != nil {
		t.Fatal(err)
	}
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		preq := req.(*kmsg.ProduceRequest)
		refuse := false
		for _, tp := range preq.Topics {
			for _, p := range tp.Partitions {
				refuse = refuse || p.Partition == 1
			}
		}
		if !refuse {
			return nil, nil, false
		}
		resp := preq.ResponseKind().(*kmsg.ProduceResponse)
		for _, tp := range preq.Topics {
			rt := kmsg.NewProduceResponseTopic()
			rt.Topic, rt.TopicID = tp.Topic, tp.TopicID
			for _, p := range tp.Partitions {
				rp := kmsg.NewProduceResponseTopicPartition()
				rp.Partition = p.Partition
				rp.ErrorCode = kerr.InvalidRecord.Code
				rt.Partitions = append(rt.Partitions, rp)
			}
			resp.Topics = append(resp.Topics, rt)
		}
		return resp, nil, true
	})
	brokers := strings.Join(cluster.ListenAddrs(), ",")
	in := `{"partition":0,"value":"a"}
{"partition":1,"value":"b"}

{"partition":0,"value":"c"}
{"partition":1,"value":"d"}
`
	r := klt(t, in, "produce", "--brokers", brokers, "--no-tls", "--topic", "orders", "--timeout", "10s")
	if r.code != base.ExitFail || r.stdout != "" {
		t.Fatalf("exit %d, stdout %q; want 1 and nothing", r.code, r.stdout)
	}
	want := []string{
		"klt: <stdin>:2: not produced to orders: INVALID_RECORD: ",
		"klt: <stdin>:5: not produced to orders: INVALID_RECORD: ",
		"klt: 2 of 4 records not produced",
	}
	lines := strings.Split(strings.TrimSuffix(r.stderr, "\n"), "\n")
	if len(lines) != len(want) {
		t.Fatalf("stderr:\n%s\nwant %d lines", r.stderr, len(want))
	}
	for i, w := range want {
		if !strings.HasPrefix(lines[i], w) {
			t.Errorf("stderr line %d: %q, want it to start %q", i+1, lines[i], w)
		}
	}
	r = klt(t, "", "consume", "--brokers", brokers, "--no-tls", "--topic", "orders", "--from-beginning", "--timeout", "1s")
	if got := strings.Count(r.stdout, "\n"); got != 2 || !strings.Contains(r.stdout, `"value":"a"`) || !strings.Contains(r.stdout, `"value":"c"`) {
		t.Errorf("the topic holds\n%s\nwant the records of partition 0, a and c", r.stdout)
	}
}

func TestProduceReportsUnacknowledgedAtTimeout(t *testing.T) {
	// A broker that never answers produce requests: every record is reported, by line, as
	// not acknowledged within --timeout (it may still land), and produce ends in about that
	// time instead of hanging.
	cluster := startKafka(t, 1, "orders")
	wake := make(chan struct{})
	t.Cleanup(func() { close(wake) }) // before cluster.Close, which the cleanup order runs after
	cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		cluster.SleepControl(func() { <-wake })
		return nil, nil, false
	})
	start := time.Now()
	r := klt(t, "{\"value\":\"a\"}\n{\"value\":\"b\"}\n", "produce", "--brokers", strings.Join(cluster.ListenAddrs(), ","),
		"--no-tls", "--topic", "orders", "--timeout", "2s")
	took := time.Since(start)
	if r.code != base.ExitFail {
		t.Fatalf("exit %d, stderr %q; want 1", r.code, r.stderr)
	}
	for _, w := range []string{
		"klt: <stdin>:1: not produced to orders: not acknowledged within --timeout 2s; it may still land\n",
		"klt: <stdin>:2: not produced to orders: not acknowledged within --timeout 2s; it may still land\n",
		"klt: 2 of 2 records not produced\n",
	} {
		if !strings.Contains(r.stderr, w) {
			t.Errorf("stderr\n%s\nlacks %q", r.stderr, w)
		}
	}
	if took > 5*time.Second {
		t.Errorf("produce took %v with --timeout 2s", took)
	}
}
