package main

import (
	"bytes"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/samples/internal/sampletest"
)

var update = flag.Bool("update", false, "write testdata/events/worker/orders.json from what the dispatcher sends")

// workerARN is the work queue's ARN in the worker's fixture.
const workerARN = "arn:aws:sqs:us-east-1:123456789012:WorkQueue.fifo"

func TestOrders(t *testing.T) {
	endpoint, client, urls := sampletest.SQS(t, "WorkQueue.fifo")
	sampletest.Env(t, "DispatcherFunction", map[string]string{
		"WORK_QUEUE_URL":          urls["WorkQueue.fifo"],
		"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:1", // the template sets it; the dispatcher does not connect
		"KAFKA_AUTH":              "iam",
		"AWS_ENDPOINT_URL_SQS":    endpoint,
	})
	out := new(bytes.Buffer)
	h, err := newHandler(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	payload := sampletest.Fixture(t, "dispatcher", "orders.json")
	resp, err := h.Invoke(sampletest.Context(t), payload)
	if err != nil {
		t.Fatal(err)
	}
	sampletest.SameJSON(t, resp, "dispatcher", "orders.response.json")
	lines := sampletest.Lines(t, out.Bytes())
	if l := sampletest.WithMsg(lines, "records dispatched"); len(l) != 1 || l[0]["function_request_id"] != sampletest.RequestID {
		t.Errorf("'records dispatched' lines (with the invocation's request ID): %v\n%s", l, out)
	}
	if n := sampletest.Metric(lines, "ColdStart"); n != 1 {
		t.Errorf("ColdStart: %d values, want 1:\n%s", n, out)
	}

	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		t.Fatal(err)
	}
	msgs := sampletest.Drain(t, client, urls["WorkQueue.fifo"], ev.Len(), 2*time.Second)
	if len(msgs) != ev.Len() {
		t.Fatalf("%d messages in the work queue, want %d", len(msgs), ev.Len())
	}
	data, err := sampletest.LambdaSQSEvent(workerARN, msgs)
	if err != nil {
		t.Fatal(err)
	}
	var sqsEvent events.SQSEvent
	if err := json.Unmarshal(data, &sqsEvent); err != nil {
		t.Fatal(err)
	}
	// Each record arrives whole, in the message group of its key, and each key's records in
	// Kafka order.
	want := map[string]*kafkaevent.Record{}
	for r := range ev.All() {
		want[fmt.Sprintf("%s@%d", r.PartitionID(), r.Offset)] = r
	}
	last := map[string]int64{}
	for _, m := range sqsEvent.Records {
		r, err := fanout.ReadRecord(&m)
		if err != nil {
			t.Fatal(err)
		}
		w := want[fmt.Sprintf("%s@%d", r.PartitionID(), r.Offset)]
		if w == nil || !bytes.Equal(w.Key, r.Key) || !bytes.Equal(w.Value, r.Value) || !w.Timestamp.Equal(r.Timestamp) {
			t.Errorf("message %s carries %s@%d key %q, not a record of the event", m.MessageId, r.PartitionID(), r.Offset, r.Key)
			continue
		}
		if g := m.Attributes["MessageGroupId"]; g != string(r.Key) {
			t.Errorf("%s@%d in group %q, want its key %q", r.PartitionID(), r.Offset, g, r.Key)
		}
		if o, ok := last[string(r.Key)]; ok && o > r.Offset {
			t.Errorf("key %s: offset %d after %d", r.Key, r.Offset, o)
		}
		last[string(r.Key)] = r.Offset
	}

	// The worker's fixture is what this dispatcher sends for this event.
	fixture := filepath.Join(sampletest.Events, "worker", "orders.json")
	if *update {
		if err := os.WriteFile(fixture, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	var worker events.SQSEvent
	if err := json.Unmarshal(sampletest.Fixture(t, "worker", "orders.json"), &worker); err != nil {
		t.Fatal(err)
	}
	sent := map[string]events.SQSMessage{}
	for _, m := range sqsEvent.Records {
		sent[m.Attributes["MessageDeduplicationId"]] = m
	}
	if len(worker.Records) != len(sent) {
		t.Errorf("the worker fixture has %d messages, the dispatcher sent %d", len(worker.Records), len(sent))
	}
	for _, m := range worker.Records {
		s, ok := sent[m.Attributes["MessageDeduplicationId"]]
		switch {
		case !ok:
			t.Errorf("worker fixture message %s: the dispatcher sent no message with its deduplication ID", m.MessageId)
		case s.Body != m.Body || s.Attributes["MessageGroupId"] != m.Attributes["MessageGroupId"] || !sameAttributes(s.MessageAttributes, m.MessageAttributes):
			t.Errorf("worker fixture message %s differs from what the dispatcher sends:\n got %+v\nwant %+v", m.MessageId, m, s)
		}
	}
}

func sameAttributes(a, b map[string]events.SQSMessageAttribute) bool {
	if len(a) != len(b) {
		return false
	}
	for k, x := range a {
		y, ok := b[k]
		if !ok || aws.ToString(x.StringValue) != aws.ToString(y.StringValue) || !bytes.Equal(x.BinaryValue, y.BinaryValue) || x.DataType != y.DataType {
			return false
		}
	}
	return true
}

func TestStartUpFailsWithoutTheQueue(t *testing.T) {
	sampletest.EnvUnchecked(t, "DispatcherFunction", nil)
	sampletest.Unset(t, "WORK_QUEUE_URL")
	if _, err := newHandler(t.Context(), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "WORK_QUEUE_URL") {
		t.Errorf("newHandler without WORK_QUEUE_URL: %v", err)
	}
}

func TestMain(m *testing.M) { sampletest.Main(m, main) }

// The function's process exits at start-up, before taking an invocation, saying what is missing.
func TestMainExitsWithoutItsConfiguration(t *testing.T) {
	sampletest.MainFails(t, "DispatcherFunction", nil, "dispatcher: environment variable WORK_QUEUE_URL is required")
}
