package fanout

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// BenchmarkDispatch sends 1,000 records of about 200 bytes (8 partitions, 100 keys) to
// local-aws-sqs: impl=toolkit with Dispatch, impl=naive with the loop one writes first, one
// SendMessage per record, the same message each (entry's body and attributes), and
// impl=naive-parallel with that loop on 10 goroutines (sendParallel). Each iteration sends
// to a new queue. It reports records per second; the server runs on the same machine, so
// trust the ratio, not the figure.
func BenchmarkDispatch(b *testing.B) {
	srv := standintest.StartSQS(b)
	client := srv.Client()
	ev := benchEvent(8, 125, 100)
	n := ev.Len()
	queues := 0
	newQueue := func(b *testing.B, fifo bool) string {
		b.Helper()
		queues++
		name := fmt.Sprintf("bench-%d", queues)
		if fifo {
			name += ".fifo"
		}
		u, err := standin.CreateQueue(context.Background(), client, name, nil)
		if err != nil {
			b.Fatal(err)
		}
		return u
	}
	for _, fifo := range []bool{false, true} {
		queue := "standard"
		if fifo {
			queue = "fifo"
		}
		// run times what prepare returns, untimed, for a new queue each iteration, in records
		// per second.
		run := func(impl string, prepare func(b *testing.B, q string) func()) {
			b.Run("queue="+queue+"/impl="+impl, func(b *testing.B) {
				var took time.Duration
				for b.Loop() {
					b.StopTimer()
					send := prepare(b, newQueue(b, fifo))
					b.StartTimer()
					start := time.Now()
					send()
					took += time.Since(start)
				}
				b.ReportMetric(float64(n*b.N)/took.Seconds(), "records/s")
			})
		}
		run("naive", func(b *testing.B, q string) func() {
			return func() {
				for i := range ev.Partitions {
					for j := range ev.Partitions[i].Records {
						e, _, err := entry(&ev.Partitions[i].Records[j], fifo, nil)
						if err != nil {
							b.Fatal(err)
						}
						_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: e.MessageBody,
							MessageAttributes: e.MessageAttributes, MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId})
						if err != nil {
							b.Fatal(err)
						}
					}
				}
			}
		})
		run("naive-parallel", func(b *testing.B, q string) func() {
			return func() { sendParallel(b, client, q, ev, fifo) }
		})
		run("toolkit", func(b *testing.B, q string) func() {
			d := dispatcher(b, client, q, quiet())
			return func() {
				resp, err := d.Dispatch(context.Background(), ev)
				if err != nil || len(resp.BatchItemFailures) != 0 {
					b.Fatal(len(resp.BatchItemFailures), err)
				}
			}
		})
	}
}

// sendParallel is the naive loop made parallel as one who knows goroutines would: one
// SendMessage per record, 10 at once (as many as Dispatch's calls in flight), in any order on
// a standard queue. On a FIFO queue each message group's records go one after another, so
// that the group keeps its order: one goroutine per group, at most 10 running.
func sendParallel(b *testing.B, client *sqs.Client, q string, ev *kafkaevent.Event, fifo bool) {
	var groups [][]*kafkaevent.Record
	index := map[string]int{}
	for i := range ev.Partitions {
		for j := range ev.Partitions[i].Records {
			r := &ev.Partitions[i].Records[j]
			g := ""
			if fifo {
				g = groupByKey(r)
			}
			k, ok := index[g]
			if !ok || !fifo {
				k = len(groups)
				index[g] = k
				groups = append(groups, nil)
			}
			groups[k] = append(groups[k], r)
		}
	}
	slots := make(chan struct{}, 10)
	errs := make(chan error, len(groups))
	for _, recs := range groups {
		slots <- struct{}{}
		go func() {
			defer func() { <-slots }()
			for _, r := range recs {
				e, _, err := entry(r, fifo, nil)
				if err == nil {
					_, err = client.SendMessage(context.Background(), &sqs.SendMessageInput{QueueUrl: aws.String(q), MessageBody: e.MessageBody,
						MessageAttributes: e.MessageAttributes, MessageGroupId: e.MessageGroupId, MessageDeduplicationId: e.MessageDeduplicationId})
				}
				if err != nil {
					errs <- err
					return
				}
			}
			errs <- nil
		}()
	}
	for range groups {
		if err := <-errs; err != nil {
			b.Fatal(err)
		}
	}
}

func benchEvent(parts, perPart, keys int) *kafkaevent.Event {
	ev := &kafkaevent.Event{Source: kafkaevent.SourceMSK}
	ts := time.Now().Truncate(time.Millisecond).UTC()
	for p := range parts {
		part := kafkaevent.Partition{Topic: "orders", Number: int32(p)}
		for o := range perPart {
			key := fmt.Sprintf("customer-%d", (p*perPart+o)%keys)
			v := fmt.Sprintf(`{"order":%d,"customer":%q,"note":%q}`, p*perPart+o, key, strings.Repeat("x", 150))
			part.Records = append(part.Records, kafkaevent.Record{Topic: "orders", Partition: int32(p), Offset: int64(o), Timestamp: ts,
				TimestampType: kafkaevent.CreateTime, Key: []byte(key), Value: []byte(v)})
		}
		ev.Partitions = append(ev.Partitions, part)
	}
	return ev
}
