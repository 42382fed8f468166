package batch_test

import (
	"context"
	"errors"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// valueKey keys a record on its value: records with the same value are the same.
func valueKey(r *kafkaevent.Record) (string, error) { return string(r.Value), nil }

func TestWithIdempotencyKeyInvalid(t *testing.T) {
	store := startDDB(t).store(t)
	ev := kafkaParts("orders", []int32{0}, 2, 0)
	var calls atomic.Int64
	h := func(context.Context, *kafkaevent.Record) error { calls.Add(1); return nil }
	for _, tc := range []struct {
		name string
		opts []batch.Option
		want string
	}{
		{"nil function", []batch.Option{batch.WithIdempotency(store), batch.WithIdempotencyKey(nil)}, "WithIdempotencyKey(nil)"},
		{"without a store", []batch.Option{batch.WithIdempotencyKey(valueKey)}, "invalid option WithIdempotencyKey: needs WithIdempotency"},
	} {
		_, err := batch.ProcessKafka(context.Background(), ev, h, silent(tc.opts...)...)
		if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: err = %v, want ErrInvalidOption naming %q", tc.name, err, tc.want)
		}
	}
	sqsEv := &events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", Body: "x"}}}
	_, err := batch.ProcessSQS(context.Background(), sqsEv, func(context.Context, *events.SQSMessage) error {
		calls.Add(1)
		return nil
	}, silent(batch.WithIdempotency(store), batch.WithIdempotencyKey(valueKey))...)
	if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "ProcessSQS keys on the message ID") {
		t.Errorf("ProcessSQS: err = %v, want ErrInvalidOption", err)
	}
	if n := calls.Load(); n != 0 {
		t.Errorf("handler called %d times under an invalid option", n)
	}
}

// Two records with the same value at two offsets: the default key handles both, a key on the
// value handles the first only, on every delivery.
func TestWithIdempotencyKeyDedups(t *testing.T) {
	db := startDDB(t)
	b := kafkaeventtest.NewBuilder()
	for _, v := range []string{"a", "b", "a", "c", "b"} {
		b.Add("orders", 0, []byte(v))
	}
	ev := b.Event()
	for _, tc := range []struct {
		name string
		key  []batch.Option
		want string // the handled values, over two deliveries
	}{
		{"own offset", nil, "abacb"},
		{"value", []batch.Option{batch.WithIdempotencyKey(valueKey)}, "abc"},
	} {
		store := db.store(t)
		var mu sync.Mutex
		var got strings.Builder
		h := func(_ context.Context, r *kafkaevent.Record) error {
			mu.Lock()
			defer mu.Unlock()
			got.Write(r.Value)
			return nil
		}
		opts := silent(append([]batch.Option{batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix))}, tc.key...)...)
		for round := range 2 {
			resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
			if err != nil || kafkaJSON(t, resp) != wantKafka() {
				t.Fatalf("%s, round %d: %s, %v", tc.name, round, kafkaJSON(t, resp), err)
			}
		}
		if got.String() != tc.want {
			t.Errorf("%s: handled %q, want %q", tc.name, got.String(), tc.want)
		}
	}
}

// A record whose key function fails, or gives an empty key, fails permanently without its
// handler: the key function runs once (no retries), and the partition stops there.
func TestWithIdempotencyKeyFails(t *testing.T) {
	store := startDDB(t).store(t)
	errNoKey := errors.New("no order id in the value")
	b := kafkaeventtest.NewBuilder()
	for _, v := range []string{"a", "nokey", "c", "empty", "d"} {
		b.Add("orders", 0, []byte(v))
		b.Add("orders", 1, []byte(v+"1"))
	}
	ev := b.Event()
	var keyCalls atomic.Int64
	key := func(r *kafkaevent.Record) (string, error) {
		keyCalls.Add(1)
		switch string(r.Value) {
		case "nokey":
			return "", errNoKey
		case "empty":
			return "", nil
		}
		return string(r.Value), nil
	}
	var mu sync.Mutex
	var handled []string
	h := func(_ context.Context, r *kafkaevent.Record) error {
		mu.Lock()
		defer mu.Unlock()
		handled = append(handled, string(r.Value))
		return nil
	}
	var hooked []error
	hook := failureFunc(func(_ context.Context, f *batch.Failure) {
		mu.Lock()
		defer mu.Unlock()
		hooked = append(hooked, f.Err)
		if !f.Permanent || f.Attempts > 1 {
			t.Errorf("failure of offset %d: permanent %v, attempts %d; want permanent, at most 1 attempt", f.Kafka.Offset, f.Permanent, f.Attempts)
		}
	})
	resp, err := batch.ProcessKafka(context.Background(), ev, h, silent(
		batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)),
		batch.WithIdempotencyKey(key), batch.WithHooks(hook))...)
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kafkaJSON(t, resp), wantKafka("orders-0@1", "orders-0@2", "orders-0@3", "orders-0@4"); got != want {
		t.Errorf("response %s, want %s", got, want)
	}
	if !sameSet(handled, "a", "a1", "nokey1", "c1", "empty1", "d1") {
		t.Errorf("handled %q", handled)
	}
	if len(hooked) != 1 || !errors.Is(hooked[0], errNoKey) {
		t.Fatalf("failures %v, want one wrapping %v", hooked, errNoKey)
	}
	if n := keyCalls.Load(); n != 7 {
		t.Errorf("key function called %d times, want 7 (once per record reached)", n)
	}

	// The empty key, reached once nokey is past.
	hooked = nil
	ev2 := kafkaeventtest.NewBuilder().Add("orders", 0, []byte("empty")).Event()
	if _, err := batch.ProcessKafka(context.Background(), ev2, h, silent(
		batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)),
		batch.WithIdempotencyKey(key), batch.WithHooks(hook))...); err != nil {
		t.Fatal(err)
	}
	if len(hooked) != 1 || !errors.Is(hooked[0], idempotency.ErrEmptyKey) {
		t.Errorf("failures %v, want one wrapping idempotency.ErrEmptyKey", hooked)
	}
}

// failureFunc is a FailureHook.
type failureFunc func(ctx context.Context, f *batch.Failure)

func (h failureFunc) OnFailure(ctx context.Context, f *batch.Failure) { h(ctx, f) }

func sameSet(got []string, want ...string) bool {
	if len(got) != len(want) {
		return false
	}
	seen := map[string]int{}
	for _, g := range got {
		seen[g]++
	}
	for _, w := range want {
		if seen[w] != 1 {
			return false
		}
	}
	return true
}
