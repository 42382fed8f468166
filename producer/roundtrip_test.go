package producer_test

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/producer"
)

func plaintextCluster(t testing.TB, opts ...kfake.Opt) (*kfake.Cluster, *kgo.Client) {
	t.Helper()
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return c, cl
}

// fetchAll reads n records of topic from the beginning with a plain kgo consumer.
func fetchAll(t testing.TB, addrs []string, topic string, n int) []*kgo.Record {
	t.Helper()
	cons, err := kgo.NewClient(kgo.SeedBrokers(addrs...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cons.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		fs := cons.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("fetched %d of %d records: %v", len(out), n, err)
		}
		fs.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetch: %v", err) })
		out = append(out, fs.Records()...)
	}
	return out
}

func TestRoundTripHeadersNullKeysTombstones(t *testing.T) {
	c, cl := plaintextCluster(t, kfake.SeedTopics(1, "rt"))
	binary := []byte{0x00, 0xff, 0x80, 0x7f, '\n', 0xc3, 0x28} // not UTF-8
	in := []*kgo.Record{
		{Key: []byte("k1"), Value: []byte("v1"), Headers: []kgo.RecordHeader{
			{Key: "b", Value: []byte("2")}, {Key: "a", Value: []byte("1")}, // order kept, not sorted
			{Key: "dup", Value: []byte("first")}, {Key: "dup", Value: []byte("second")}, // duplicates kept
			{Key: "bin", Value: binary},
			{Key: "null", Value: nil}, {Key: "empty", Value: []byte{}},
		}},
		{Key: nil, Value: []byte("null key")},
		{Key: []byte{}, Value: []byte("empty key")},
		{Key: []byte("k1"), Value: nil}, // tombstone
		{Key: nil, Value: nil},          // null key and null value
		{Key: []byte("k2"), Value: []byte{}},
	}
	for _, r := range in {
		r.Topic = "rt"
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := producer.Produce(ctx, cl, in...).Err(); err != nil {
		t.Fatal(err)
	}
	got := fetchAll(t, c.ListenAddrs(), "rt", len(in))
	if len(got) != len(in) {
		t.Fatalf("fetched %d records, produced %d", len(got), len(in))
	}
	for i, want := range in {
		g := got[i]
		if !sameBytes(g.Key, want.Key) {
			t.Errorf("record %d: key %q (nil %v), want %q (nil %v)", i, g.Key, g.Key == nil, want.Key, want.Key == nil)
		}
		if !sameBytes(g.Value, want.Value) {
			t.Errorf("record %d: value %q (nil %v), want %q (nil %v)", i, g.Value, g.Value == nil, want.Value, want.Value == nil)
		}
		if len(g.Headers) != len(want.Headers) {
			t.Errorf("record %d: %d headers, want %d: %v", i, len(g.Headers), len(want.Headers), g.Headers)
			continue
		}
		for j, h := range want.Headers {
			if g.Headers[j].Key != h.Key || !bytes.Equal(g.Headers[j].Value, h.Value) {
				t.Errorf("record %d header %d: %q=%q, want %q=%q", i, j, g.Headers[j].Key, g.Headers[j].Value, h.Key, h.Value)
			}
		}
	}
}

// sameBytes is bytes.Equal that also tells nil (null) from empty.
func sameBytes(a, b []byte) bool { return (a == nil) == (b == nil) && bytes.Equal(a, b) }

// A record that keeps an old timestamp (a copy of a topic, a replay) is produced like any
// other, with it. Before, the default kgo.RecordDeliveryTimeout, which kgo counts from each
// record's Timestamp, failed such a record at once (found by klt consume | klt produce).
func TestOldTimestampProduces(t *testing.T) {
	c, cl := plaintextCluster(t, kfake.SeedTopics(1, "old"))
	old := time.Now().Add(-72 * time.Hour).Truncate(time.Millisecond)
	for _, withDeadline := range []bool{true, false} {
		ctx := context.Background()
		if withDeadline {
			var cancel context.CancelFunc
			ctx, cancel = context.WithTimeout(ctx, 10*time.Second)
			defer cancel()
		}
		r := &kgo.Record{Topic: "old", Value: []byte("v"), Timestamp: old}
		if err := producer.Produce(ctx, cl, r).Err(); err != nil {
			t.Fatalf("deadline %v: %v", withDeadline, err)
		}
	}
	for _, got := range fetchAll(t, c.ListenAddrs(), "old", 2) {
		if !got.Timestamp.Equal(old) {
			t.Errorf("timestamp %v, want %v", got.Timestamp, old)
		}
	}
}
