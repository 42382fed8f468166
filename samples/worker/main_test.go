package main

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/samples/internal/sampletest"
)

const table = "IdempotencyTable"

func TestOrders(t *testing.T) {
	endpoint, ddb := sampletest.DynamoDB(t, table)
	sqsEndpoint, sqsClient, urls := sampletest.SQS(t, "WorkerFailureQueue")
	sampletest.Env(t, "WorkerFunction", map[string]string{
		"IDEMPOTENCY_TABLE":         table,
		"FAILURE_QUEUE_URL":         urls["WorkerFailureQueue"],
		"AWS_ENDPOINT_URL_DYNAMODB": endpoint,
		"AWS_ENDPOINT_URL_SQS":      sqsEndpoint,
		"ORDERS_API_URL":            "", // only logged; samples/internal/orders tests the API
	})
	out := new(bytes.Buffer)
	h, err := newHandler(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	payload := sampletest.Fixture(t, "worker", "orders.json")
	resp, err := h.Invoke(sampletest.Context(t), payload)
	if err != nil {
		t.Fatal(err)
	}
	// The invalid order-3004 went to the failure queue, and the correction behind it in its
	// group went on: nothing is reported.
	sampletest.SameJSON(t, resp, "worker", "orders.response.json")

	lines := sampletest.Lines(t, out.Bytes())
	perKey := map[string][]string{}
	for _, l := range sampletest.WithMsg(lines, "order applied") {
		k := jsonText(l["orderId"])
		perKey[k] = append(perKey[k], l["status"].(string))
		if l["function_request_id"] != sampletest.RequestID || l["service"] != "orders" {
			t.Errorf("order line without the invocation's request ID or the service: %v", l)
		}
	}
	if n := sampletest.Metric(lines, "OrdersApplied"); n != 6 {
		t.Errorf("OrdersApplied: %d values, want 6 (one per applied order), with the service dimension:\n%s", n, out)
	}
	want := map[string][]string{"3001": {"placed", "paid"}, "3002": {"placed"}, "3003": {"placed"}, "3004": {"corrected"}, "3005": {"placed"}}
	if jsonText(perKey) != jsonText(want) {
		t.Errorf("orders applied, per order in order: %s, want %s", jsonText(perKey), jsonText(want))
	}
	if f := sampletest.WithMsg(lines, "record failed"); len(f) != 1 || f[0]["sentToSink"] != true || f[0]["reported"] != 0.0 {
		t.Errorf("'record failed' lines: %v", f)
	}
	failed := sampletest.Drain(t, sqsClient, urls["WorkerFailureQueue"], 1, 2*time.Second)
	if env, err := batch.ReadEnvelope([]byte(*failed[0].Body)); err != nil || !env.Permanent || env.Source != "sqs" || env.Message == nil {
		t.Errorf("failure queue message: %+v, %v", env, err)
	}
	// Six orders applied, and the invalid one completed as "sunk" when the failure queue took
	// it, so that a redelivery does not send it again.
	items, sunk := sampletest.Items(t, ddb, table), 0
	for _, it := range items {
		if sampletest.Sunk(it) {
			sunk++
		}
	}
	if len(items) != 7 || sunk != 1 {
		t.Errorf("%d idempotency records, %d of them sunk, want 7 and 1", len(items), sunk)
	}
	for _, it := range items {
		if it["status"] != "COMPLETED" || !strings.HasPrefix(it["id"], "WorkerFunction#") {
			t.Errorf("idempotency record %v", it)
		}
	}

	// The Kafka mapping retried the dispatcher's batch: the same records come again in
	// messages with other IDs. Nothing is applied twice; the invalid order still fails.
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	renamed := map[string]string{}
	for i := range ev.Records {
		renamed[ev.Records[i].MessageId] = "copy-" + ev.Records[i].MessageId
		ev.Records[i].MessageId = renamed[ev.Records[i].MessageId]
	}
	again, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	out.Reset()
	resp2, err := h.Invoke(sampletest.Context(t), again)
	if err != nil {
		t.Fatal(err)
	}
	for old, n := range renamed {
		resp = bytes.ReplaceAll(resp, []byte(`"`+old+`"`), []byte(`"`+n+`"`))
	}
	if !bytes.Equal(resp2, resp) {
		t.Errorf("response to the copies: %s, want %s", resp2, resp)
	}
	if n := len(sampletest.WithMsg(sampletest.Lines(t, out.Bytes()), "order applied")); n != 0 {
		t.Errorf("the copies applied %d orders again", n)
	}
}

func jsonText(v any) string {
	b, _ := json.Marshal(v)
	return string(b)
}

func TestStartUpFailsWithoutTheTable(t *testing.T) {
	sampletest.EnvUnchecked(t, "WorkerFunction", nil)
	sampletest.Unset(t, "IDEMPOTENCY_TABLE")
	if _, err := newHandler(t.Context(), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "IDEMPOTENCY_TABLE") {
		t.Errorf("newHandler without IDEMPOTENCY_TABLE: %v", err)
	}
}

func TestMain(m *testing.M) { sampletest.Main(m, main) }

// The function's process exits at start-up, before taking an invocation, saying what is missing.
func TestMainExitsWithoutItsConfiguration(t *testing.T) {
	sampletest.MainFails(t, "WorkerFunction", map[string]string{"FAILURE_QUEUE_URL": "http://127.0.0.1:1/q"}, "worker: environment variable IDEMPOTENCY_TABLE is required")
}
