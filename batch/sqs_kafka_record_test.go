package batch_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// bodyRecord reads a Kafka record from a body "topic/partition/offset/value".
func bodyRecord(m *events.SQSMessage) (*kafkaevent.Record, error) {
	f := strings.SplitN(m.Body, "/", 4)
	if len(f) != 4 {
		return nil, errors.New("not topic/partition/offset/value")
	}
	p, err1 := strconv.ParseInt(f[1], 10, 32)
	o, err2 := strconv.ParseInt(f[2], 10, 64)
	if err := errors.Join(err1, err2); err != nil {
		return nil, err
	}
	return &kafkaevent.Record{Topic: f[0], Partition: int32(p), Offset: o, Value: []byte(f[3])}, nil
}

// Under WithSQSKafkaRecord, messages are keyed on the records they carry: the same record in
// two messages (two IDs) is handled once, by its position or by WithIdempotencyKey's
// function; a message that does not decode fails permanently without its handler.
func TestWithSQSKafkaRecordKeysOnTheRecord(t *testing.T) {
	db := startDDB(t)
	ev := &events.SQSEvent{Records: []events.SQSMessage{
		{MessageId: "m1", Body: "orders/0/5/a"},
		{MessageId: "m2", Body: "orders/0/5/a"}, // m1 dispatched again
		{MessageId: "m3", Body: "orders/0/6/a"}, // same value, next offset
		{MessageId: "m4", Body: "garbage"},
		{MessageId: "m5", Body: "orders/1/5/b"},
	}}
	for _, tc := range []struct {
		name    string
		opts    []batch.Option
		handled int64
	}{
		{"message ID", nil, 4},
		{"record position", []batch.Option{batch.WithSQSKafkaRecord(bodyRecord)}, 3},
		{"record value", []batch.Option{batch.WithSQSKafkaRecord(bodyRecord), batch.WithIdempotencyKey(valueKey)}, 2},
	} {
		store := db.store(t)
		var handled atomic.Int64
		var mu sync.Mutex
		h := func(_ context.Context, m *events.SQSMessage) error {
			if m.Body == "garbage" {
				return batch.Permanent(errors.New("garbage"))
			}
			mu.Lock()
			defer mu.Unlock()
			handled.Add(1)
			return nil
		}
		opts := silent(append([]batch.Option{batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithConcurrency(1)}, tc.opts...)...)
		for round := range 2 {
			resp, err := batch.ProcessSQS(context.Background(), ev, h, opts...)
			if err != nil || len(resp.BatchItemFailures) != 1 || resp.BatchItemFailures[0].ItemIdentifier != "m4" {
				t.Fatalf("%s, round %d: %+v, %v; want m4 failed", tc.name, round, resp, err)
			}
		}
		if n := handled.Load(); n != tc.handled {
			t.Errorf("%s: handled %d messages over two deliveries, want %d", tc.name, n, tc.handled)
		}
	}
	// ProcessKafka has no messages: the option there is a mistake.
	_, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 1, 0),
		func(context.Context, *kafkaevent.Record) error { return nil }, silent(batch.WithSQSKafkaRecord(bodyRecord))...)
	if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "WithSQSKafkaRecord") {
		t.Errorf("ProcessKafka: %v, want ErrInvalidOption", err)
	}
	_, err = batch.ProcessSQS(context.Background(), ev, func(context.Context, *events.SQSMessage) error { return nil }, silent(batch.WithSQSKafkaRecord(nil))...)
	if !errors.Is(err, toolkit.ErrInvalidOption) {
		t.Errorf("WithSQSKafkaRecord(nil): %v, want ErrInvalidOption", err)
	}
}

// A message whose record does not decode fails under idempotency as permanent, its handler
// not called, and the error says why.
func TestWithSQSKafkaRecordDecodeFailure(t *testing.T) {
	store := startDDB(t).store(t)
	var calls atomic.Int64
	var failures []*batch.Failure
	hook := failureFunc(func(_ context.Context, f *batch.Failure) { failures = append(failures, f) })
	ev := &events.SQSEvent{Records: []events.SQSMessage{{MessageId: "bad", Body: "garbage"}}}
	resp, err := batch.ProcessSQS(context.Background(), ev, func(context.Context, *events.SQSMessage) error {
		calls.Add(1)
		return nil
	}, silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithSQSKafkaRecord(bodyRecord), batch.WithHooks(hook))...)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("%+v, %v", resp, err)
	}
	if calls.Load() != 0 {
		t.Error("handler called for a message without a key")
	}
	if len(failures) != 1 || !failures[0].Permanent || failures[0].Attempts != 0 || !strings.Contains(failures[0].Err.Error(), "not topic/partition/offset/value") {
		t.Errorf("failures %+v", failures)
	}
}
