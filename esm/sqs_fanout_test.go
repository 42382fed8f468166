package esm

import (
	"bytes"
	"context"
	"fmt"
	"log/slog"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// TestSQSFanoutRoundTrip sends Kafka records with fanout.Dispatcher (binary header values,
// keys, a tombstone, non-UTF-8 values) to a standard and a FIFO queue, and runs
// fanout.WorkerHandler behind the mapping, as the function of "Using Lambda with Amazon
// SQS" (https://docs.aws.amazon.com/lambda/latest/dg/with-sqs.html: "Lambda polls the queue
// and invokes your Lambda function synchronously with an event that contains queue
// messages."): every record comes back whole, through the event the mapping builds and
// the worker's own parser (batch.SQSFunc), and per key in Kafka order on the FIFO queue.
func TestSQSFanoutRoundTrip(t *testing.T) {
	t.Parallel()
	env := newSQSEnv(t)
	b := kafkaeventtest.NewBuilder()
	for i := range 40 {
		key := []byte(fmt.Sprint("k", i%4))
		var value []byte
		switch i % 5 {
		case 0:
			value = nil // tombstone
		case 1:
			value = []byte{0xff, 0x00, 0xfe, byte(i)} // not UTF-8
		default:
			value = []byte(fmt.Sprintf(`{"n":%d,"s":"<&>"}`, i))
		}
		b.Add("orders", int32(i%3), value, kafkaeventtest.WithKey(key),
			kafkaeventtest.WithHeader("bin", []byte{0, 0x80, 0xff, byte(i)}), kafkaeventtest.WithHeader("text", []byte("v")))
	}
	ev := b.Event()
	var want []*kafkaevent.Record
	for _, p := range ev.Partitions {
		for i := range p.Records {
			want = append(want, &p.Records[i])
		}
	}
	for _, name := range []string{"fan", "fan.fifo"} {
		url, arn := env.queue(name, 5, nil)
		d, err := fanout.NewDispatcher(env.c, url)
		if err != nil {
			t.Fatal(err)
		}
		resp, err := d.Dispatch(context.Background(), ev)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("%s: dispatch: %v %+v", name, err, resp)
		}
		var mu sync.Mutex
		got := map[string][]*kafkaevent.Record{}
		worker := fanout.WorkerHandler(func(_ context.Context, r *kafkaevent.Record) error {
			mu.Lock()
			defer mu.Unlock()
			got[string(r.Key)] = append(got[string(r.Key)], r)
			return nil
		}, batch.WithLogger(slog.New(slog.DiscardHandler)))
		fn := InvokerFunc(func(ctx context.Context, payload []byte) (Response, error) {
			out, err := worker.Invoke(ctx, payload)
			if err != nil {
				return Response{Err: &InvokeError{Type: "errorString", Message: err.Error()}}, nil
			}
			return Response{Payload: out}, nil
		})
		m, stop := env.run(url, fn, WithName(name), WithQueueARN(arn), WithReportBatchItemFailures())
		waitFor(t, 15*time.Second, name+": 40 done", func() bool { return m.Counters().Succeeded.Load() == 40 })
		if err := stop(); err != nil {
			t.Fatal(err)
		}
		if s := m.Counters().Snapshot(); (s.ReportedFailed+s.ErrorFailed) != 0 || s.Errors != 0 {
			t.Errorf("%s: counters %+v", name, s)
		}
		n := 0
		for _, w := range want {
			var found *kafkaevent.Record
			for _, r := range got[string(w.Key)] {
				if r.Topic == w.Topic && r.Partition == w.Partition && r.Offset == w.Offset {
					found = r
				}
			}
			if found == nil {
				t.Errorf("%s: %s-%d@%d not delivered", name, w.Topic, w.Partition, w.Offset)
				continue
			}
			n++
			if !bytes.Equal(found.Value, w.Value) || (found.Value == nil) != (w.Value == nil) || len(found.Headers) != len(w.Headers) {
				t.Errorf("%s: %s-%d@%d: value %q headers %v, want %q %v", name, w.Topic, w.Partition, w.Offset, found.Value, found.Headers, w.Value, w.Headers)
				continue
			}
			for i, h := range w.Headers {
				if found.Headers[i].Key != h.Key || !bytes.Equal(found.Headers[i].Value, h.Value) {
					t.Errorf("%s: header %d: %+v, want %+v", name, i, found.Headers[i], h)
				}
			}
		}
		if name == "fan.fifo" {
			// Per key (the dispatcher's default group), Kafka order.
			for key, rs := range got {
				for i := 1; i < len(rs); i++ {
					if rs[i].Partition == rs[i-1].Partition && rs[i].Offset < rs[i-1].Offset {
						t.Errorf("%s: key %s out of order: %d after %d", name, key, rs[i].Offset, rs[i-1].Offset)
					}
				}
			}
		}
		t.Logf("%s: %d records round-tripped", name, n)
	}
}
