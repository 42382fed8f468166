package fanout

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

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
			d := NewDispatcher(client, q, WithRetry(3, time.Millisecond), WithLogger(logs.logger()))
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

			got := drain(t, srv.Client(), q)
			dups := log.sameRecords(t, got, fifo)
			t.Logf("%d messages, %d duplicates", len(got), dups)
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
