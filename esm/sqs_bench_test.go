package esm

import (
	"context"
	"encoding/json"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/internal/standintest"
)

// sqsSlowFunction is the demo's worker: perMessage per message, the messages of one group
// one after another, the groups of a batch in parallel.
func sqsSlowFunction(perMessage time.Duration) InvokerFunc {
	return func(ctx context.Context, payload []byte) (Response, error) {
		var ev events.SQSEvent
		if err := json.Unmarshal(payload, &ev); err != nil {
			return Response{}, err
		}
		groups := map[string]int{}
		for _, r := range ev.Records {
			groups[r.Attributes["MessageGroupId"]]++
		}
		var wg sync.WaitGroup
		for _, n := range groups {
			wg.Go(func() {
				select {
				case <-time.After(time.Duration(n) * perMessage):
				case <-ctx.Done():
				}
			})
		}
		wg.Wait()
		return Response{}, nil
	}
}

// BenchmarkSQSFIFOThroughput runs the demo's second stage: a FIFO queue holding total
// messages over groups message groups, MaximumConcurrency 50, batches of 10, a function
// taking 300 ms per message (groups in parallel). It reports messages/s from the start of
// Run to the last delete; impl=naive is the loop one writes first (receive 10, invoke,
// delete, repeat), for the ratio.
//
//	go test -run '^$' -bench SQSFIFOThroughput -benchtime 1x -count 6 ./esm/
func BenchmarkSQSFIFOThroughput(b *testing.B) {
	const total, perMessage = 3000, 300 * time.Millisecond
	for _, groups := range []int{100, 300} {
		for _, impl := range []string{"esm", "naive"} {
			b.Run(fmt.Sprintf("groups=%d/impl=%s", groups, impl), func(b *testing.B) {
				n := total
				if impl == "naive" {
					n = 100 // 33 messages/s: a few seconds are enough to measure it
				}
				env := newSQSEnv(b)
				var rate float64
				for i := range b.N {
					url, arn := env.queue(fmt.Sprintf("tp%d.fifo", i), 180, nil)
					bodies := make([]string, n)
					for j := range bodies {
						bodies[j] = fmt.Sprint(j)
					}
					env.send(url, bodies, func(j int) string { return fmt.Sprint("g", j%groups) })
					fn := sqsSlowFunction(perMessage)
					b.ResetTimer()
					start := time.Now()
					if impl == "esm" {
						m, stop := env.run(url, fn, WithName("tp"), WithQueueARN(arn), WithBatchSize(10), WithMaximumConcurrency(50))
						waitFor(b, 120*time.Second, "all done", func() bool { return m.Counters().Succeeded.Load() == int64(n) })
						if err := stop(); err != nil {
							b.Fatal(err)
						}
					} else {
						sqsNaive(b, env.c, url, n, fn)
					}
					rate = float64(n) / time.Since(start).Seconds()
					b.StopTimer()
				}
				b.ReportMetric(rate, "msgs/s")
			})
		}
	}
}

// sqsNaive receives 10 messages, invokes, deletes, until n are done.
func sqsNaive(b *testing.B, c *sqs.Client, url string, n int, fn Invoker) {
	done := 0
	for done < n {
		msgs, err := standintest.Receive(context.Background(), c, url, 10, 50*time.Millisecond)
		if err != nil {
			b.Fatal(err)
		}
		if len(msgs) == 0 {
			continue
		}
		var recs [][]byte
		for _, msg := range msgs {
			rec, err := sqsRecordJSON(msg, "arn:aws:sqs:us-east-1:123456789012:x", "us-east-1")
			if err != nil {
				b.Fatal(err)
			}
			recs = append(recs, rec)
		}
		payload := append([]byte(`{"Records":[`), joinJSON(recs)...)
		payload = append(payload, "]}"...)
		if _, err := fn.Invoke(context.Background(), payload); err != nil {
			b.Fatal(err)
		}
		var del []types.DeleteMessageBatchRequestEntry
		for i, msg := range msgs {
			del = append(del, types.DeleteMessageBatchRequestEntry{Id: aws.String(fmt.Sprint(i)), ReceiptHandle: msg.ReceiptHandle})
		}
		if _, err := c.DeleteMessageBatch(context.Background(), &sqs.DeleteMessageBatchInput{QueueUrl: aws.String(url), Entries: del}); err != nil {
			b.Fatal(err)
		}
		done += len(msgs)
	}
}

func joinJSON(recs [][]byte) []byte {
	var out []byte
	for i, r := range recs {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, r...)
	}
	return out
}
