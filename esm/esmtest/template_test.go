package esmtest_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The repository's template.yaml: ConsumerSelfManagedMapping's properties hold in the mapping
// ReadMapping makes (BatchSize 100, MaximumBatchingWindowInSeconds 1, FilterCriteria on
// currency, ReportBatchItemFailures, the on-failure queue KafkaOnFailureQueue, the function's
// Timeout 60 s).
func TestReadMappingOfTheTemplate(t *testing.T) {
	srv := standintest.StartSQS(t)
	client := srv.Client()
	url, err := standin.CreateQueue(t.Context(), client, "KafkaOnFailureQueue", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := esmtest.ReadMapping("../../template.yaml", "ConsumerSelfManagedMapping",
		esmtest.TemplateEnv{SQS: client, QueueURLs: map[string]string{"KafkaOnFailureQueue": url}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Function != "ConsumerFunction" || m.Kafka == nil || m.Kafka.Topics[0] != "orders" || m.FunctionTimeout != 60*time.Second ||
		m.Kafka.DestinationConfig == nil || !strings.Contains(m.Kafka.DestinationConfig.OnFailure.Destination, "KafkaOnFailureQueue") {
		t.Fatalf("mapping %+v", m)
	}

	h := counted(t, func(_ context.Context, n int, ev *kafkaevent.Event) ([]byte, error) {
		for r := range ev.All() {
			if r.Offset == 120 && n == 2 { // the second batch starts at 100
				return fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":%d}}]}`, r.Offset), nil
			}
		}
		return []byte(`{"batchItemFailures":[]}`), nil
	})
	k := esmtest.NewKafka(t, h, *m.Kafka, m.Options()...)
	var recs []*kgo.Record
	for i := range 150 {
		cur := "EUR"
		if i == 110 {
			cur = "GBP" // the filter drops it
		}
		recs = append(recs, kgo.StringRecord(fmt.Sprintf(`{"orderId":%d,"currency":%q}`, i+1, cur)))
	}
	k.Produce(recs...)
	waitIdle(t, k)

	invs := k.Invocations()
	if len(invs) < 3 {
		t.Fatalf("%d invocations, want at least 3 (batches of 100, one retried)", len(invs))
	}
	if n := len(invs[0].Records); n != 100 {
		t.Errorf("first batch of %d records, want 100 (BatchSize)", n)
	}
	d := deliveries(invs)
	if d[110] != 0 {
		t.Errorf("the GBP record delivered %d times; the filter drops it", d[110])
	}
	if first := invs[2].Offsets(0); len(first) == 0 || first[0] != 120 {
		t.Errorf("after the partial batch response, offsets %v, want from 120", first)
	}
	for o := range int64(150) {
		want := 1
		switch {
		case o == 110:
			want = 0
		case o >= 120:
			want = 2
		}
		if d[o] != want {
			t.Errorf("offset %d delivered %d times, want %d", o, d[o], want)
		}
	}
	if got := k.Committed()[0]; got != 150 {
		t.Errorf("committed %d, want 150", got)
	}
	if f := k.OnFailure(); len(f) != 0 {
		t.Errorf("%d on-failure records, want none", len(f))
	}
	for _, inv := range invs {
		if !strings.Contains(string(inv.Event), `"eventSource":"SelfManagedKafka"`) {
			t.Errorf("invocation %d: not a self-managed Kafka event: %.200s", inv.N, inv.Event)
			break
		}
	}
}

func TestReadMappingErrors(t *testing.T) {
	_, err := esmtest.ReadMapping("../../template.yaml", "ConsumerMSKMapping", esmtest.TemplateEnv{})
	if err == nil || !strings.Contains(err.Error(), "ConsumerSelfManagedMapping") {
		t.Errorf("a mapping whose condition is false: %v, want the list of those that hold", err)
	}
	_, err = esmtest.ReadMapping("../../template.yaml", "ConsumerSelfManagedMapping", esmtest.TemplateEnv{})
	if err == nil || !strings.Contains(err.Error(), "KafkaOnFailureQueue") {
		t.Errorf("an on-failure queue without its URL: %v", err)
	}
	_, err = esmtest.ReadMapping("../../template.yaml", "WorkerFunction.Work", esmtest.TemplateEnv{})
	if err == nil || !strings.Contains(err.Error(), "WorkQueue") {
		t.Errorf("an SQS mapping without its queue: %v", err)
	}
}

// The template's WorkerFunction.Work SQS event (BatchSize 10, ReportBatchItemFailures,
// MaximumConcurrency 50) on the queue the test made for WorkQueue: the events carry the queue's
// local ARN, and each message is delivered once.
func TestReadMappingOfTheTemplateSQS(t *testing.T) {
	srv := standintest.StartSQS(t)
	client := srv.Client()
	url, err := standin.CreateQueue(t.Context(), client, "WorkQueue.fifo", nil)
	if err != nil {
		t.Fatal(err)
	}
	m, err := esmtest.ReadMapping("../../template.yaml", "WorkerFunction.Work",
		esmtest.TemplateEnv{SQS: client, QueueURLs: map[string]string{"WorkQueue": url}})
	if err != nil {
		t.Fatal(err)
	}
	if m.Function != "WorkerFunction" || m.Queue != "WorkQueue" || m.SQS == nil || m.SQS.ScalingConfig == nil {
		t.Fatalf("mapping %+v", m)
	}
	h := handler(func(context.Context, []byte) ([]byte, error) { return []byte(`{"batchItemFailures":[]}`), nil })
	q := esmtest.NewSQS(t, h, *m.SQS, m.Options()...)
	q.Send("a", "b", "c")
	waitIdle(t, q)
	seen := map[string]int{}
	for _, inv := range q.Invocations() {
		if !strings.Contains(string(inv.Event), `"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:WorkQueue.fifo"`) {
			t.Errorf("invocation %d: not an event of WorkQueue.fifo: %.300s", inv.N, inv.Event)
		}
		for _, r := range inv.Records {
			seen[r.MessageID]++
		}
	}
	if len(seen) != 3 {
		t.Errorf("%d messages delivered, want 3: %v", len(seen), seen)
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("message %s delivered %d times", id, n)
		}
	}
}
