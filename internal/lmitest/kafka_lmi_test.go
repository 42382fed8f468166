package lmitest_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/lambdalog"
	"github.com/kafkalambda/toolkit/metrics"
)

// ledger counts the side effects of the records a test's handlers applied, by record, in the
// order they were applied per partition and per key, and by invocation.
type ledger struct {
	mu      sync.Mutex
	applied map[string]int     // by "partition/offset"
	order   map[int32][]int64  // offsets in the order they were applied, by partition
	byKey   map[string][]int64 // the same, by record key
	perReq  map[string]int     // records applied, by request ID
}

func newLedger() *ledger {
	return &ledger{applied: map[string]int{}, order: map[int32][]int64{}, byKey: map[string][]int64{}, perReq: map[string]int{}}
}

func (l *ledger) apply(req string, r *kafkaevent.Record) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.applied[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]++
	l.order[r.Partition] = append(l.order[r.Partition], r.Offset)
	l.byKey[string(r.Key)] = append(l.byKey[string(r.Key)], r.Offset)
	l.perReq[req]++
}

// count is how many distinct records were applied.
func (l *ledger) count() int {
	l.mu.Lock()
	defer l.mu.Unlock()
	return len(l.applied)
}

// check: every record that should be applied was, once; none other was; offsets were applied
// in increasing order per partition and per key. It logs the counts.
func (l *ledger) check(t *testing.T, want map[string]bool) {
	t.Helper()
	l.checkOrder(t, want, true)
}

// checkKeys is check with the order kept per key only (the workers of a fan-out run a
// partition's keys in parallel).
func (l *ledger) checkKeys(t *testing.T, want map[string]bool) {
	t.Helper()
	l.checkOrder(t, want, false)
}

func (l *ledger) checkOrder(t *testing.T, want map[string]bool, perPartition bool) {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	lost, twice := 0, 0
	for id := range want {
		switch n := l.applied[id]; {
		case n == 0:
			lost++
		case n > 1:
			twice++
			t.Errorf("record %s applied %d times", id, n)
		}
	}
	for id := range l.applied {
		if !want[id] {
			t.Errorf("record %s applied, but it should have failed", id)
		}
	}
	for p, offs := range l.order {
		if perPartition && !slices.IsSorted(offs) {
			t.Errorf("partition %d applied out of order: %v", p, offs)
		}
	}
	for k, offs := range l.byKey {
		if !slices.IsSorted(offs) {
			t.Errorf("key %s applied out of order: %v", k, offs)
		}
	}
	t.Logf("applied: %d records of %d, %d lost, %d applied twice", len(l.applied), len(want), lost, twice)
	if lost > 0 {
		t.Errorf("%d records lost", lost)
	}
}

// meeting is a batch hook whose OnBatchStart holds each invocation until all of the round's
// are in flight: the invocations of a round run at once.
type meeting struct {
	t       *testing.T
	barrier atomic.Pointer[lmitest.Barrier]
}

func (m *meeting) OnBatchStart(ctx context.Context, _ *batch.BatchInfo) context.Context {
	if err := m.barrier.Load().Wait(ctx); err != nil {
		m.t.Errorf("invocations not in flight at once: %v", err)
	}
	return ctx
}

func (m *meeting) OnBatchEnd(context.Context, *batch.BatchInfo, *batch.BatchResult) {}

// kafkaMapping emulates a Kafka event source mapping over fixed partitions: per partition a
// committed offset, a batch from it delivered each round, dup times at once (a batch
// delivered again while its first delivery still runs, as a mapping does when the first
// invocation's timeout passed: on Lambda Managed Instances the function keeps running), and the
// committed offset moved to the first record any delivery reported (or past the batch).
type kafkaMapping struct {
	partitions, records, batchSize, dup int
	key                                 func(p, off int) string
	value                               func(p, off int) string
}

type roundStats struct{ rounds, invocations int }

func (m *kafkaMapping) run(t *testing.T, h lmitest.Handler, meet *meeting) roundStats {
	t.Helper()
	committed := make([]int, m.partitions)
	var st roundStats
	for st.rounds = 1; ; st.rounds++ {
		var invs []lmitest.Invocation
		var parts []int
		for p := range m.partitions {
			if committed[p] >= m.records {
				continue
			}
			b := kafkaeventtest.NewBuilder()
			for off := committed[p]; off < min(committed[p]+m.batchSize, m.records); off++ {
				b.Add("orders", int32(p), []byte(m.value(p, off)), kafkaeventtest.WithOffset(int64(off)),
					kafkaeventtest.WithKey([]byte(m.key(p, off))))
			}
			payload, err := json.Marshal(b.Event())
			if err != nil {
				t.Fatal(err)
			}
			for range m.dup {
				n := st.invocations + len(invs)
				invs = append(invs, lmitest.Invocation{RequestID: fmt.Sprintf("req-%d", n), TraceID: lmitest.TraceHeader(n),
					Payload: payload, Timeout: 20 * time.Second})
				parts = append(parts, p)
			}
		}
		if len(invs) == 0 {
			return st
		}
		if st.rounds > 3*m.records/m.batchSize {
			t.Fatalf("round %d: partitions still behind (committed %v)", st.rounds, committed)
		}
		meet.barrier.Store(lmitest.NewBarrier(len(invs)))
		next := slices.Clone(committed)
		for i := range next {
			next[i] = m.records
		}
		for i, r := range lmitest.Run(h, len(invs), invs) {
			p := parts[i]
			end := min(committed[p]+m.batchSize, m.records)
			if r.Err != nil {
				t.Fatalf("%s: %v", r.RequestID, r.Err)
			}
			var resp batch.KafkaResponse
			if err := json.Unmarshal(r.Response, &resp); err != nil {
				t.Fatalf("%s: response %s: %v", r.RequestID, r.Response, err)
			}
			for _, f := range resp.BatchItemFailures {
				end = min(end, int(f.ItemIdentifier.Offset))
			}
			next[p] = min(next[p], end)
		}
		for p := range committed {
			if committed[p] < m.records {
				committed[p] = next[p]
			}
		}
		st.invocations += len(invs)
	}
}

// Kafka batches of 4 partitions, each batch delivered twice at once, 8 invocations in flight in
// one process (AWS_LAMBDA_MAX_CONCURRENCY=8), with idempotency on dynalite, a failure sink on
// local-aws-sqs, lambdalog and metrics: every record applied once (or, for the poison ones,
// sent to the sink once), in order per partition and per key, and each invocation's log lines
// and metrics carry its own request ID and trace.
func TestLMIKafkaIdempotencySink(t *testing.T) {
	const partitions, records, batchSize = 4, 48, 12
	t.Run(fmt.Sprintf("partitions=%d_records=%d_batch=%d_each_batch_twice_at_once_concurrency=%d",
		partitions, partitions*records, batchSize, 2*partitions), func(t *testing.T) {
		kafkaIdempotencySink(t, partitions, records, batchSize)
	})
}

func kafkaIdempotencySink(t *testing.T, partitions, records, batchSize int) {
	db, q := standintest.StartDynamoDB(t), standintest.StartSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, db.Client(), dynamodb.TableInput("lmi")); err != nil {
		t.Fatal(err)
	}
	store, err := dynamodb.NewStore(db.Client(), "lmi")
	if err != nil {
		t.Fatal(err)
	}
	sqsClient := q.Client()
	queue, err := standin.CreateQueue(ctx, sqsClient, "lmi-failures", nil)
	if err != nil {
		t.Fatal(err)
	}
	poison := func(p, off int) bool { return off%16 == 5 }
	var logs, docs lmitest.Output
	m, err := metrics.New(metrics.WithNamespace("LMITest"), metrics.WithService("lmi"), metrics.WithOutput(&docs))
	if err != nil {
		t.Fatal(err)
	}
	logger := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(&logs, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	l := newLedger()
	meet := &meeting{t: t}
	process := func(ctx context.Context, r *kafkaevent.Record) error {
		lc, _ := lambdacontext.FromContext(ctx)
		if string(r.Value) == "poison" {
			return batch.Permanent(errors.New("poison record"))
		}
		l.apply(lc.AwsRequestID, r)
		logger.InfoContext(ctx, "applied", "ctx_request", lc.AwsRequestID)
		return metrics.Add(ctx, "Applied", metrics.Count, 1)
	}
	h := m.Wrap(lambdalog.WrapHandler(batch.KafkaHandler(process, batch.WithIdempotency(store),
		batch.WithSink(sqssink.New(sqsClient, queue), batch.SinkPermanent), batch.WithLogger(logger),
		batch.WithHooks(meet), batch.WithMetrics(&docs))))
	mapping := &kafkaMapping{partitions: partitions, records: records, batchSize: batchSize, dup: 2,
		key: func(p, off int) string { return fmt.Sprintf("p%d-k%d", p, off%3) },
		value: func(p, off int) string {
			if poison(p, off) {
				return "poison"
			}
			return "ok"
		}}
	st := mapping.run(t, h, meet)
	t.Logf("%d invocations in %d rounds, up to %d at once", st.invocations, st.rounds, 2*partitions)

	want, sunk := map[string]bool{}, map[string]bool{}
	for p := range partitions {
		for off := range records {
			id := fmt.Sprintf("%d/%d", p, off)
			if poison(p, off) {
				sunk[id] = true
			} else {
				want[id] = true
			}
		}
	}
	l.check(t, want)
	checkSink(t, sqsClient, queue, sunk)
	checkLines(t, &logs, &docs, l, st.invocations)
}
