// Package sinktest holds what the tests of batch's failure sinks share (package sqssink's
// and package kafkasink's): an event of every record shape, a handler that fails
// chosen records, and checks of what a sink wrote.
package sinktest

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// Event is two partitions of "orders" with keys, binary values, headers (repeated names,
// a null value, non-UTF-8 bytes) and a tombstone.
func Event(topic string) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for i := range 4 {
		b.Add(topic, 0, []byte{'v', byte(i), 0x00, 0xff, '"'},
			kafkaeventtest.WithKey([]byte("key-"+strconv.Itoa(i))),
			kafkaeventtest.WithHeader("traceparent", []byte("00-abc-"+strconv.Itoa(i))),
			kafkaeventtest.WithHeader("dup", []byte{0xfe, 0x01}),
			kafkaeventtest.WithHeader("dup", nil),
			kafkaeventtest.WithHeader("empty", []byte{}))
	}
	b.Add(topic, 1, []byte("p1-0"), kafkaeventtest.WithKey([]byte("k")))
	b.Add(topic, 1, nil, kafkaeventtest.WithKey([]byte("gone"))) // a tombstone
	b.Add(topic, 1, []byte("p1-2"), kafkaeventtest.WithOffset(10))
	return b.Event()
}

// Record returns the record of ev at topic-partition@offset.
func Record(t testing.TB, ev *kafkaevent.Event, partition int32, offset int64) *kafkaevent.Record {
	t.Helper()
	for i := range ev.Partitions {
		for j := range ev.Partitions[i].Records {
			if r := &ev.Partitions[i].Records[j]; r.Partition == partition && r.Offset == offset {
				return r
			}
		}
	}
	t.Fatalf("no record %d@%d", partition, offset)
	return nil
}

// Quiet turns the batch's metrics line into a buffer and its log line off.
func Quiet(metrics io.Writer) []batch.Option {
	if metrics == nil {
		metrics = io.Discard
	}
	return []batch.Option{batch.WithMetrics(metrics), batch.WithLogger(slog.New(slog.DiscardHandler)),
		batch.WithRetry(3, time.Millisecond)}
}

// FailOn returns a handler that fails the records in fail (by "partition@offset") with
// err, and records every record it is called for.
func FailOn(err error, fail ...string) (batch.RecordFunc, func() []string) {
	var mu sync.Mutex
	var seen []string
	set := map[string]bool{}
	for _, f := range fail {
		set[f] = true
	}
	h := func(_ context.Context, r *kafkaevent.Record) error {
		id := fmt.Sprintf("%d@%d", r.Partition, r.Offset)
		mu.Lock()
		seen = append(seen, id)
		mu.Unlock()
		if set[id] {
			return err
		}
		return nil
	}
	return h, func() []string { mu.Lock(); defer mu.Unlock(); return append([]string(nil), seen...) }
}

// SameRecord checks that an envelope read back holds the original record, byte for byte,
// the difference between a nil and an empty header value and a tombstone included.
func SameRecord(t testing.TB, got, want *kafkaevent.Record) {
	t.Helper()
	if got.Topic != want.Topic || got.Partition != want.Partition || got.Offset != want.Offset {
		t.Errorf("record %s@%d, want %s@%d", got.PartitionID(), got.Offset, want.PartitionID(), want.Offset)
	}
	if !got.Timestamp.Equal(want.Timestamp) || got.TimestampType != want.TimestampType {
		t.Errorf("timestamp %v %s, want %v %s", got.Timestamp, got.TimestampType, want.Timestamp, want.TimestampType)
	}
	if !bytes.Equal(got.Key, want.Key) {
		t.Errorf("key %q, want %q", got.Key, want.Key)
	}
	if !bytes.Equal(got.Value, want.Value) || (got.Value == nil) != (want.Value == nil) {
		t.Errorf("value %q (nil %v), want %q (nil %v)", got.Value, got.Value == nil, want.Value, want.Value == nil)
	}
	if len(got.Headers) != len(want.Headers) {
		t.Fatalf("headers %v, want %v", got.Headers, want.Headers)
	}
	for i, h := range want.Headers {
		g := got.Headers[i]
		if g.Key != h.Key || !bytes.Equal(g.Value, h.Value) || (g.Value == nil) != (h.Value == nil) {
			t.Errorf("header %d: %q=%q (nil %v), want %q=%q (nil %v)", i, g.Key, g.Value, g.Value == nil, h.Key, h.Value, h.Value == nil)
		}
	}
}

// Metric reads one count from the batch's EMF line.
func Metric(t testing.TB, emf *bytes.Buffer, name string) float64 {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(emf.Bytes(), &doc); err != nil {
		t.Fatalf("metrics line %q: %v", emf.String(), err)
	}
	a, _ := doc[name].([]any) // a value is an array of one, as package metrics writes it
	if len(a) != 1 {
		t.Fatalf("metrics line has no %s of one value: %s", name, emf.String())
	}
	n, ok := a[0].(float64)
	if !ok {
		t.Fatalf("metrics line: %s is not a number: %s", name, emf.String())
	}
	return n
}
