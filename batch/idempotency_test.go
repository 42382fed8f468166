package batch_test

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/smithy-go/middleware"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// ddbCalls counts DynamoDB API calls by operation, once per call (not per HTTP attempt), with
// a middleware on the client's Initialize step.
type ddbCalls struct {
	mu  sync.Mutex
	ops map[string]int
}

func (c *ddbCalls) option(o *awsdynamodb.Options) {
	o.APIOptions = append(o.APIOptions, func(st *middleware.Stack) error {
		return st.Initialize.Add(middleware.InitializeMiddlewareFunc("batchTestCountCalls",
			func(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
				op := fmt.Sprintf("%T", in.Parameters)
				op = strings.TrimSuffix(strings.TrimPrefix(op, "*dynamodb."), "Input")
				c.mu.Lock()
				if c.ops == nil {
					c.ops = map[string]int{}
				}
				c.ops[op]++
				c.mu.Unlock()
				return next.HandleInitialize(ctx, in)
			}), middleware.After)
	})
}

// take returns the counts since the last take.
func (c *ddbCalls) take() map[string]int {
	c.mu.Lock()
	defer c.mu.Unlock()
	m := c.ops
	c.ops = nil
	return m
}

// writes is the number of write calls among ops.
func writes(ops map[string]int) int {
	return ops["PutItem"] + ops["UpdateItem"] + ops["DeleteItem"]
}

// show formats ops as "PutItem 2, GetItem 1", sorted.
func show(ops map[string]int) string {
	var parts []string
	for _, op := range slices.Sorted(maps.Keys(ops)) {
		parts = append(parts, fmt.Sprintf("%s %d", op, ops[op]))
	}
	if len(parts) == 0 {
		return "none"
	}
	return strings.Join(parts, ", ")
}

// countedStore is a store on a fresh dynalite table whose client counts its calls.
func (d *ddb) countedStore(t testing.TB) (*dynamodb.Store, *ddbCalls) {
	t.Helper()
	calls := &ddbCalls{}
	name := fmt.Sprintf("idem-%d", d.tables.Add(1))
	client := d.srv.Client(calls.option)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, client, dynamodb.TableInput(name)); err != nil {
		t.Fatal(err)
	}
	calls.take()
	s, err := dynamodb.NewStore(client, name)
	if err != nil {
		t.Fatal(err)
	}
	return s, calls
}

// DynamoDB calls per record under WithIdempotency, counted by a client middleware on dynalite:
// the retries of a record run inside one lease, so a record costs one write to acquire its key
// and one to complete it however many attempts it takes. The figures are in README.
func TestIdempotencyWriteCalls(t *testing.T) {
	db := startDDB(t)
	noSleep := batch.WithClock(time.Now, func(context.Context, time.Duration) error { return nil })
	for _, tc := range []struct {
		name       string
		failFirst  int // handler calls that fail before it succeeds
		replay     bool
		sink       bool // with a sink that takes what fails every attempt
		wantWrites int
		wantOK     bool
	}{
		{name: "success first time", wantWrites: 2, wantOK: true},
		{name: "success after two retries", failFirst: 2, wantWrites: 2, wantOK: true},
		{name: "replay", replay: true, wantWrites: 1, wantOK: true},
		{name: "fails every attempt", failFirst: 3, wantWrites: 2},
		{name: "fails, and the sink takes it", failFirst: 3, sink: true, wantWrites: 2, wantOK: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store, calls := db.countedStore(t)
			ev := kafkaParts("orders", []int32{0}, 1, 7)
			n := 0
			h := func(ctx context.Context, r *kafkaevent.Record) error {
				n++
				if n <= tc.failFirst {
					return errTransient
				}
				return nil
			}
			opts := silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithRetry(3, time.Millisecond), noSleep)
			if tc.sink {
				opts = append(opts, batch.WithSink(sinkFunc(func(context.Context, *batch.Envelope) error { return nil }), batch.SinkExhausted))
			}
			if tc.replay {
				if _, err := batch.ProcessKafka(context.Background(), ev, h, opts...); err != nil {
					t.Fatal(err)
				}
				calls.take()
				n = 0
			}
			resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
			if err != nil {
				t.Fatal(err)
			}
			ops := calls.take()
			t.Logf("%s: %d handler calls; DynamoDB: %s", tc.name, n, show(ops))
			if (kafkaJSON(t, resp) == wantKafka()) != tc.wantOK {
				t.Errorf("response %s", kafkaJSON(t, resp))
			}
			if writes(ops) != tc.wantWrites {
				t.Errorf("%d write calls (%s), want %d", writes(ops), show(ops), tc.wantWrites)
			}
			if tc.replay && n != 0 {
				t.Errorf("replay called the handler %d times", n)
			}
		})
	}
}

// Between the attempts of a record its key stays held: another invocation that gets the same
// record meanwhile finds it in progress and does not run it.
func TestIdempotencyLeaseHeldBetweenAttempts(t *testing.T) {
	db := startDDB(t)
	store := db.store(t)
	ev := kafkaParts("orders", []int32{0}, 1, 0)
	var mu sync.Mutex
	var probes []error
	var duplicateRan bool
	sleep := func(ctx context.Context, d time.Duration) error {
		// Another invocation, with the same record, between two attempts.
		_, err := idempotency.Do(context.Background(), store, idempotency.KafkaKey(&ev.Partitions[0].Records[0]), nil,
			func(context.Context) (struct{}, error) {
				mu.Lock()
				duplicateRan = true
				mu.Unlock()
				return struct{}{}, nil
			}, idempotency.WithKeyPrefix(idemPrefix))
		mu.Lock()
		probes = append(probes, err)
		mu.Unlock()
		return nil
	}
	calls := 0
	resp, err := batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error {
		calls++
		if calls <= 2 {
			return errTransient
		}
		return nil
	}, silent(batch.WithIdempotency(store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithRetry(3, time.Millisecond),
		batch.WithClock(time.Now, sleep))...)
	if err != nil {
		t.Fatal(err)
	}
	if got := kafkaJSON(t, resp); got != wantKafka() || calls != 3 {
		t.Errorf("response %s after %d calls, want success after 3", got, calls)
	}
	if duplicateRan || len(probes) != 2 {
		t.Errorf("a duplicate ran between attempts: the lease was dropped (%d probes)", len(probes))
	}
	for i, err := range probes {
		if !errors.Is(err, idempotency.ErrInProgress) {
			t.Errorf("probe %d between attempts: %v, want idempotency.ErrInProgress", i+1, err)
		}
	}
}

// The README's two snippets together: WithIdempotency(store), and idempotency.Do with the
// same store and key inside the handler. The handler's context says the key is held by this
// invocation, so the nested Do runs its function instead of failing with ErrInProgress.
func TestIdempotencyNestedDo(t *testing.T) {
	db := startDDB(t)
	store, calls := db.countedStore(t)
	ev := kafkaParts("orders", []int32{0, 1}, 3, 0)
	var mu sync.Mutex
	charged := map[string]int{}
	h := func(ctx context.Context, r *kafkaevent.Record) error {
		receipt, err := idempotency.Do(ctx, store, idempotency.KafkaKey(r), string(r.Value),
			func(ctx context.Context) (string, error) {
				mu.Lock()
				defer mu.Unlock()
				charged[rid(r)]++
				return "receipt-" + rid(r), nil
			})
		if err != nil {
			return err
		}
		if receipt != "receipt-"+rid(r) {
			return fmt.Errorf("receipt %q", receipt)
		}
		return nil
	}
	var logs failureLog
	opts := []batch.Option{batch.WithIdempotency(store), batch.WithLogger(logs.logger())}
	resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if got := kafkaJSON(t, resp); got != wantKafka() {
		t.Fatalf("response %s, want full success; failures:\n%s", got, logs.String())
	}
	if len(charged) != 6 {
		t.Errorf("charged %v, want each of the 6 records once", charged)
	}
	for id, n := range charged {
		if n != 1 {
			t.Errorf("%s charged %d times", id, n)
		}
	}
	ops := calls.take()
	t.Logf("6 records, nested Do: DynamoDB %s", show(ops))
	if writes(ops) != 12 {
		t.Errorf("%d write calls (%s), want 2 per record", writes(ops), show(ops))
	}
	// Delivered again: nothing runs.
	resp, err = batch.ProcessKafka(context.Background(), ev, h, opts...)
	if err != nil || kafkaJSON(t, resp) != wantKafka() {
		t.Fatalf("replay: %s, %v", kafkaJSON(t, resp), err)
	}
	for id, n := range charged {
		if n != 1 {
			t.Errorf("after replay, %s charged %d times", id, n)
		}
	}
}

// failingStore is an in-memory store whose Acquire or Complete fails.
type failingStore struct {
	*idempotencytest.Store
	acquireErr, completeErr error
}

func (s *failingStore) Acquire(ctx context.Context, r *idempotency.Entry, now time.Time) (*idempotency.Entry, error) {
	if s.acquireErr != nil {
		return nil, s.acquireErr
	}
	return s.Store.Acquire(ctx, r, now)
}

func (s *failingStore) Complete(ctx context.Context, r *idempotency.Entry) error {
	if s.completeErr != nil {
		return s.completeErr
	}
	return s.Store.Complete(ctx, r)
}

// A store that fails before the handler runs fails the record (fail closed): it is reported,
// and logged, never sent to the sink (the record did nothing wrong) nor acknowledged.
func TestIdempotencyStoreFails(t *testing.T) {
	errStore := errors.New("throttled")
	for _, tc := range []struct {
		name      string
		store     *failingStore
		wantCalls int
		wantErr   string
	}{
		{"acquire", &failingStore{Store: idempotencytest.NewStore(), acquireErr: errStore}, 0, "acquire"},
		// (A failed completion is a success: TestNotRecorded.)
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs failureLog
			hook := &failureHook{}
			sink := &memSink{}
			calls := 0
			resp, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 2, 0),
				func(context.Context, *kafkaevent.Record) error { calls++; return nil },
				batch.WithIdempotency(tc.store), batch.WithSink(sink, batch.SinkExhausted), batch.WithLogger(logs.logger()), batch.WithHooks(hook))
			if err != nil {
				t.Fatal(err)
			}
			if got := kafkaJSON(t, resp); got != wantKafka("orders-0@0", "orders-0@1") || calls != tc.wantCalls {
				t.Errorf("response %s after %d calls", got, calls)
			}
			if len(sink.got) != 0 {
				t.Errorf("sent to the sink: %+v", sink.got)
			}
			lines := logs.lines(t, "record failed")
			if len(lines) != 1 || lines[0]["attempts"] != float64(tc.wantCalls) || lines[0]["reported"] != float64(2) ||
				!strings.Contains(fmt.Sprint(lines[0]["error"]), tc.wantErr) || !strings.Contains(fmt.Sprint(lines[0]["error"]), "throttled") {
				t.Errorf("failure lines %v", lines)
			}
			var pe *idempotency.PersistenceError
			if len(hook.got) != 1 || !errors.As(hook.got[0].Err, &pe) || !errors.Is(hook.got[0].Err, errStore) {
				t.Errorf("hook got %+v", hook.got)
			}
		})
	}
}

// WithIdempotency stores the key, status and expiry of each record, and no result.
func TestIdempotencyStoresNoResult(t *testing.T) {
	store := idempotencytest.NewStore()
	if _, err := batch.ProcessKafka(context.Background(), kafkaParts("orders", []int32{0}, 2, 0),
		func(context.Context, *kafkaevent.Record) error { return nil }, silent(batch.WithIdempotency(store))...); err != nil {
		t.Fatal(err)
	}
	recs := store.Records()
	if len(recs) != 2 {
		t.Fatalf("%d records, want 2", len(recs))
	}
	for _, r := range recs {
		if r.Status != idempotency.StatusCompleted || r.Data != "" || r.Validation != "" || r.Expiration.IsZero() ||
			!strings.HasPrefix(r.ID, "idempotency#") {
			t.Errorf("record %+v", r)
		}
	}
}
