package producer_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/completion"
	"github.com/kafkalambda/toolkit/producer"
)

// countingStore counts the calls that reach the store.
type countingStore struct {
	idempotency.Store
	calls atomic.Int64
}

func (s *countingStore) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	s.calls.Add(1)
	return s.Store.Acquire(ctx, r, now)
}

func (s *countingStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	s.calls.Add(1)
	return s.Store.Complete(ctx, r)
}

func (s *countingStore) Release(ctx context.Context, r *idempotency.Entry) error {
	s.calls.Add(1)
	return s.Store.Release(ctx, r)
}

func TestProduceOnce(t *testing.T) {
	env := startTP(t)
	k := startKafka(t)
	store := &countingStore{Store: env.store(t)}
	prefix := idempotency.WithKeyPrefix("once")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	src := input("in", 0, 5)
	recs := func(values ...string) []*kgo.Record {
		var out []*kgo.Record
		for _, v := range values {
			out = append(out, &kgo.Record{Topic: "out", Key: []byte("k"), Value: []byte(v)})
		}
		return out
	}
	// nothing reaches the store or the cluster
	nothing := func(what string, err error, want string) {
		t.Helper()
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want an error saying %q", what, err, want)
		}
		if store.calls.Load() != 0 || k.acks.n.Load() != 0 {
			t.Errorf("%s: %d store calls, %d records produced", what, store.calls.Load(), k.acks.n.Load())
		}
	}
	nothing("nil client", producer.ProduceOnce(ctx, nil, store, src, recs("a"), prefix), "nil client")
	nothing("nil store", producer.ProduceOnce(ctx, k.cl, nil, src, recs("a"), prefix), "nil store")
	nothing("nil input", producer.ProduceOnce(ctx, k.cl, store, nil, recs("a"), prefix), "nil input record")
	nothing("nil record", producer.ProduceOnce(ctx, k.cl, store, src, append(recs("a"), nil), prefix), "record 1 is nil")
	err := producer.ProduceOnce(ctx, k.cl, store, input("in/put", 0, 5), recs("a"), prefix)
	nothing("bad input", err, `the topic "in/put" has "/"`)
	if !errors.Is(err, producer.ErrMalformedSource) {
		t.Errorf("bad input: %v, want ErrMalformedSource", err)
	}
	if err := producer.ProduceOnce(ctx, k.cl, store, src, nil, prefix); err != nil || store.calls.Load() != 0 {
		t.Errorf("no records: %v, %d store calls; want nil and none", err, store.calls.Load())
	}

	// The first call produces, with the header; a second with the same routing produces
	// nothing, even with other values.
	first := recs("a", "b")
	if err := producer.ProduceOnce(ctx, k.cl, store, src, first, prefix); err != nil {
		t.Fatal(err)
	}
	for i, rec := range first {
		if got := string(rec.Headers[len(rec.Headers)-1].Value); got != fmt.Sprintf("in/0/5/%d", i) {
			t.Errorf("record %d: header %q", i, got)
		}
	}
	if n := k.acks.n.Load(); n != 2 {
		t.Fatalf("%d records produced, want 2", n)
	}
	if n := store.calls.Swap(0); n != 2 {
		t.Errorf("%d store calls for the first call, want 2 (acquire, complete)", n)
	}
	if err := producer.ProduceOnce(ctx, k.cl, store, src, recs("a at 12:00", "b at 12:00"), prefix); err != nil {
		t.Errorf("replay: %v", err)
	}
	if n := store.calls.Swap(0); n != 1 {
		t.Errorf("%d store calls for a replay, want 1 (acquire)", n)
	}
	// Other routing: refused, loudly.
	for what, rs := range map[string][]*kgo.Record{
		"one record fewer": recs("a"),
		"one record more":  recs("a", "b", "c"),
		"another topic":    {first[0], {Topic: "audit", Key: []byte("k")}},
		"another key":      {first[0], {Topic: "out", Key: []byte("k2")}},
		"no key":           {first[0], {Topic: "out"}},
	} {
		if err := producer.ProduceOnce(ctx, k.cl, store, src, rs, prefix); !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("%s: %v, want idempotency.ErrPayloadMismatch", what, err)
		}
	}
	if n := k.acks.n.Load(); n != 2 {
		t.Fatalf("%d records produced, want still 2", n)
	}

	heldElsewhere(t, ctx, k, store, recs, prefix)

	// Not acknowledged (a topic the cluster does not have, until the deadline): the key is
	// released, for the retry.
	short, cancelShort := context.WithTimeout(ctx, time.Second)
	defer cancelShort()
	err = producer.ProduceOnce(short, k.cl, store, input("in", 2, 9), []*kgo.Record{{Topic: "missing", Value: []byte("x")}}, prefix)
	if !errors.Is(err, producer.ErrNotAcknowledged) {
		t.Errorf("missing topic: %v, want producer.ErrNotAcknowledged", err)
	}
	// Produce gave up a tenth of the second before the deadline, which may leave the release
	// less than the store's margin (idempotency.WithStoreDeadlineMargin): then the release is
	// retried in the background, the key held (its lease renewed) meanwhile. The retry comes
	// in a later invocation, after that release: the test waits on it, not on a clock.
	if !completion.Settle(store, 10*time.Second) {
		t.Fatal("the release of the failed Produce's key was not stored within 10 s")
	}
	ran := false
	if _, err := idempotency.Do(ctx, store, "kafkalambda-produce:in/2/9", nil, func(context.Context) (struct{}, error) {
		ran = true
		return struct{}{}, nil
	}, prefix); err != nil || !ran {
		t.Errorf("after a failed Produce the key is not free: ran %v, %v", ran, err)
	}
}

// heldElsewhere: the key is "kafkalambda-produce:topic/partition/offset": held elsewhere,
// ProduceOnce waits its turn (idempotency.ErrInProgress), and produces nothing.
func heldElsewhere(t *testing.T, ctx context.Context, k *tpKafka, store idempotency.Store, recs func(...string) []*kgo.Record, prefix idempotency.Option) {
	t.Helper()
	held, release := make(chan struct{}), make(chan struct{})
	done := make(chan error)
	go func() {
		_, err := idempotency.Do(ctx, store, "kafkalambda-produce:in/1/7", nil, func(context.Context) (struct{}, error) {
			close(held)
			<-release
			return struct{}{}, nil
		}, prefix)
		done <- err
	}()
	<-held
	if err := producer.ProduceOnce(ctx, k.cl, store, input("in", 1, 7), recs("c"), prefix); !errors.Is(err, idempotency.ErrInProgress) ||
		!strings.Contains(err.Error(), "ProduceOnce for in-1 at offset 7") {
		t.Errorf("held key: %v, want idempotency.ErrInProgress naming the input", err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if n := k.acks.n.Load(); n != 2 {
		t.Fatalf("%d records produced, want still 2", n)
	}
}
