package fanout

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestDispatchReplayedFailures is the test: 10,000 records over 8 partitions and 500
// keys, through local-aws-sqs, with entries failed inside real calls and calls throttled
// whole, replayed as the Kafka event source mapping replays partial-batch responses: every
// record reaches the queue, unchanged, and on a FIFO queue each key's records are in the
// queue once each, in Kafka order.
func TestDispatchReplayedFailures(t *testing.T) {
	for _, fifo := range []bool{false, true} {
		name := "standard"
		if fifo {
			name = "fifo"
		}
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			log := newTopicLog("orders", 10_000, 8, 500, 7)
			rng := rand.New(rand.NewPCG(11, 13))
			f := &faults{
				entry: func(*kafkaevent.Record) *types.BatchResultErrorEntry {
					if rng.IntN(100) < 20 {
						return &types.BatchResultErrorEntry{Code: aws.String("InternalError"), Message: aws.String("injected"), SenderFault: false}
					}
					return nil
				},
				call: func([]*kafkaevent.Record) error {
					if rng.IntN(100) < 5 {
						return throttled()
					}
					return nil
				},
			}
			srv, client := dispServer(t, f)
			q := dispQueue(t, srv, "work")
			if fifo {
				q = dispQueue(t, srv, "work.fifo")
			}
			logs := &logBuffer{}
			// Three attempts: 0.8% of the records fail all three and are reported.
			d := dispatcher(t, client, q, WithSendRetry(3, time.Millisecond), WithBatchOptions(batch.WithLogger(logs.logger())))
			rounds := log.esm(t, 400, 100, d.Dispatch)

			failed := logs.lines(t, "record not dispatched")
			summaries := logs.lines(t, "records dispatched")
			if len(summaries) != rounds {
				t.Errorf("%d summary lines for %d invocations", len(summaries), rounds)
			}
			for _, l := range failed {
				if l["partition"] == nil || l["offset"] == nil || l["error"] == nil {
					t.Fatalf("failure line without partition, offset or error: %v", l)
				}
				if _, ok := l["value"]; ok {
					t.Fatalf("failure line with a payload: %v", l)
				}
			}
			t.Logf("%d invocations, %d records reported at least once", rounds, len(failed))

			got, msgs := drainAll(t, srv.Client(), q)
			dups := log.sameRecords(t, got, fifo)
			t.Logf("%d messages, %d duplicates", len(got), dups)
			workAll(t, log, msgs, fifo)
			if len(failed) == 0 {
				t.Fatalf("no record failed for good: the replay path was not exercised")
			}
			if !fifo {
				return
			}
			want, have := log.keyOrder(), keyOrder(got)
			for _, k := range sortedKeys(want) {
				if !slices.Equal(want[k], have[k]) {
					t.Fatalf("key %s: offsets in the queue %v, in Kafka %v", k, have[k], want[k])
				}
			}
		})
	}
}

// workAll hands the messages to workers, ten at a time in queue order as the SQS event source
// mapping delivers them, with idempotency on dynalite keyed on each message's Kafka record:
// every record of the log is applied exactly once, however many copies the queue held, and on
// a FIFO queue each key's records are applied in Kafka order.
func workAll(t *testing.T, log *topicLog, msgs []types.Message, fifo bool) {
	t.Helper()
	store := wStore(t, standintest.StartDynamoDB(t), "applied")
	arn := "arn:aws:sqs:us-east-1:000000000000:work"
	if fifo {
		arn += ".fifo"
	}
	var mu sync.Mutex
	applied := map[string]int{}
	order := map[string][]int64{}
	w := WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		mu.Lock()
		defer mu.Unlock()
		applied[idempotency.KafkaKey(r)]++
		order[string(r.Key)] = append(order[string(r.Key)], r.Offset)
		return nil
	}, wQuiet(batch.WithIdempotency(store))...)
	for start := 0; start < len(msgs); start += 10 {
		ev := &events.SQSEvent{}
		for _, m := range msgs[start:min(start+10, len(msgs))] {
			sm := dispMessage(m)
			sm.EventSourceARN, sm.EventSource = arn, "aws:sqs"
			ev.Records = append(ev.Records, sm)
		}
		resp, err := w(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("worker batch at message %d: %v, %d failures", start, err, len(resp.BatchItemFailures))
		}
	}
	n := 0
	for p := range log.parts {
		for i := range log.parts[p] {
			r := &log.parts[p][i]
			if c := applied[idempotency.KafkaKey(r)]; c != 1 {
				t.Fatalf("record %s applied %d times, want once", idempotency.KafkaKey(r), c)
			}
			n++
		}
	}
	if len(applied) != n {
		t.Fatalf("%d records applied, the log has %d", len(applied), n)
	}
	if fifo {
		want := log.keyOrder()
		for _, k := range sortedKeys(want) {
			if !slices.Equal(want[k], order[k]) {
				t.Fatalf("key %s: applied in order %v, Kafka order %v", k, order[k], want[k])
			}
		}
	}
	t.Logf("%d messages applied as %d records, once each", len(msgs), n)
}
