package main

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/samples/internal/sampletest"
)

// criteria is the FilterCriteria of ConsumerFunction's MSK event in template.yaml, which the
// template also gives the function as FILTER_CRITERIA.
const criteria = `{"Filters":[{"Pattern":"{\"value\":{\"currency\":[\"EUR\",\"USD\"]}}"}]}`

const table = "IdempotencyTable"

// env is a consumer under test: its handler and output, and its side effects.
type env struct {
	h       lambda.Handler
	out     *bytes.Buffer
	items   func() []map[string]string
	failed  func(want int) []*batch.Envelope
	handler func() lambda.Handler
}

// start runs the local servers, sets the environment as the template does, and makes the
// handler.
func start(t *testing.T) *env {
	ddbEndpoint, ddb := sampletest.DynamoDB(t, table)
	sqsEndpoint, sqsClient, urls := sampletest.SQS(t, "ConsumerFailureQueue")
	sampletest.Env(t, "ConsumerFunction", map[string]string{
		"IDEMPOTENCY_TABLE":         table,
		"FAILURE_QUEUE_URL":         urls["ConsumerFailureQueue"],
		"FILTER_CRITERIA":           criteria,
		"ORDERS_API_URL":            "",            // only logged; samples/internal/orders tests the API
		"KEY_CONCURRENCY":           "0",           // the template's default: off (mapping_test.go runs it on)
		"KAFKA_BOOTSTRAP_SERVERS":   "127.0.0.1:1", // the template sets it; the consumer does not connect
		"KAFKA_AUTH":                "iam",
		"AWS_ENDPOINT_URL_DYNAMODB": ddbEndpoint,
		"AWS_ENDPOINT_URL_SQS":      sqsEndpoint,
	})
	e := &env{out: new(bytes.Buffer)}
	e.handler = func() lambda.Handler {
		h, err := newHandler(t.Context(), e.out)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	e.h = e.handler()
	e.items = func() []map[string]string { return sampletest.Items(t, ddb, table) }
	e.failed = func(want int) []*batch.Envelope {
		var out []*batch.Envelope
		for _, m := range sampletest.Drain(t, sqsClient, urls["ConsumerFailureQueue"], want, 2*time.Second) {
			env, err := batch.ReadEnvelope([]byte(*m.Body))
			if err != nil {
				t.Fatal(err)
			}
			out = append(out, env)
		}
		return out
	}
	return e
}

func TestOrders(t *testing.T) {
	e := start(t)
	resp, err := e.h.Invoke(sampletest.Context(t), sampletest.WithCorrelationIDs(t, sampletest.Fixture(t, "consumer", "orders.json")))
	if err != nil {
		t.Fatal(err)
	}
	sampletest.SameJSON(t, resp, "consumer", "orders.response.json")

	lines := sampletest.Lines(t, e.out.Bytes())
	var accepted []float64
	for _, l := range sampletest.WithMsg(lines, "order accepted") {
		accepted = append(accepted, l["orderId"].(float64))
		// lambdalog's keys: the invocation's request ID, the record's correlation ID (its
		// correlation-id header), the service of template.yaml's Globals.
		if want := fmt.Sprintf("corr-%v-%v", l["partition"].(string)[len("orders-"):], l["offset"]); l["correlation_id"] != want ||
			l["function_request_id"] != sampletest.RequestID || l["service"] != "orders" || l["cold_start"] == nil {
			t.Errorf("order line without the invocation's keys or with another correlation ID (want %s): %v", want, l)
		}
	}
	if n := sampletest.Metric(lines, "OrdersApplied"); n != 4 {
		t.Errorf("OrdersApplied: %v values, want 4 (one per accepted order), with the service dimension:\n%s", n, e.out)
	}
	// Partitions run in parallel: compare as a set; 2002 is in GBP, which the filter drops.
	if got := setOf(accepted); got != "2001 2003 2004 2005" {
		t.Errorf("orders accepted: %s, want 2001 2003 2004 2005", got)
	}
	sum := sampletest.WithMsg(lines, "batch processed")
	if len(sum) != 1 || sum[0]["processed"] != 4.0 || sum[0]["filtered"] != 1.0 || sum[0]["failed"] != 0.0 {
		t.Errorf("summary line: %v", sum)
	}
	if !emf(lines) {
		t.Errorf("no EMF metrics line in the output:\n%s", e.out)
	}

	items := e.items()
	if len(items) != 4 {
		t.Fatalf("%d idempotency records, want 4 (one per handled record, none for the filtered one): %v", len(items), items)
	}
	for _, it := range items {
		if it["status"] != "COMPLETED" || !strings.HasPrefix(it["id"], "ConsumerFunction#") || it["expiration"] == "" {
			t.Errorf("idempotency record %v", it)
		}
	}
	if f := e.failed(0); len(f) != 0 {
		t.Errorf("%d records in the failure queue, want none", len(f))
	}

	// The batch delivered again (its response lost): nothing runs twice, even in a new
	// execution environment.
	e.out.Reset()
	resp, err = e.handler().Invoke(sampletest.Context(t), sampletest.Fixture(t, "consumer", "orders.json"))
	if err != nil {
		t.Fatal(err)
	}
	sampletest.SameJSON(t, resp, "consumer", "orders.response.json")
	lines = sampletest.Lines(t, e.out.Bytes())
	if n := len(sampletest.WithMsg(lines, "order accepted")); n != 0 {
		t.Errorf("redelivery accepted %d orders again", n)
	}
	if sum := sampletest.WithMsg(lines, "batch processed"); len(sum) != 1 || sum[0]["replayed"] != 4.0 {
		t.Errorf("redelivery summary: %v", sum)
	}
	if n := len(e.items()); n != 4 {
		t.Errorf("%d idempotency records after the redelivery, want 4", n)
	}
}

func TestPoison(t *testing.T) {
	e := start(t)
	resp, err := e.h.Invoke(sampletest.Context(t), sampletest.Fixture(t, "consumer", "poison.json"))
	if err != nil {
		t.Fatal(err)
	}
	// Both poison records went to the failure queue, so their partitions moved on and the
	// response reports nothing.
	sampletest.SameJSON(t, resp, "consumer", "poison.response.json")

	lines := sampletest.Lines(t, e.out.Bytes())
	var accepted []float64
	for _, l := range sampletest.WithMsg(lines, "order accepted") {
		accepted = append(accepted, l["orderId"].(float64))
	}
	if got := setOf(accepted); got != "2101 2103" {
		t.Errorf("orders accepted: %s, want 2101 2103 (2103 after the poison record of its partition)", got)
	}
	if n := len(sampletest.WithMsg(lines, "record failed")); n != 2 {
		t.Errorf("%d 'record failed' lines, want 2", n)
	}

	f := e.failed(2)
	if len(f) != 2 {
		t.Fatalf("%d records in the failure queue, want 2", len(f))
	}
	got := map[string]string{}
	for _, env := range f {
		if !env.Permanent || env.Attempts != 1 || env.Topic != "orders" {
			t.Errorf("envelope %+v", env)
		}
		got[env.Record().PartitionID()+"@"+itoa(env.Offset)+" "+string(env.Key)] = env.Error
	}
	if e := got["orders-2@8 order-2102"]; !strings.Contains(e, "invalid order 2102") {
		t.Errorf("orders-2@8 in the failure queue with %q; all: %v", e, got)
	}
	if e := got["orders-3@3 order-2104"]; !strings.Contains(e, "cannot unmarshal") {
		t.Errorf("orders-3@3 in the failure queue with %q; all: %v", e, got)
	}
	// Records sent to the sink complete their keys with the outcome "sunk", so that a
	// redelivery skips them rather than sending them to the failure queue again.
	applied, sunk := 0, 0
	for _, it := range e.items() {
		switch {
		case sampletest.Sunk(it):
			sunk++
		case it["status"] == "COMPLETED":
			applied++
		}
	}
	if applied != 2 || sunk != 2 {
		t.Errorf("%d applied and %d sunk idempotency records, want 2 and 2", applied, sunk)
	}
}

func TestStartUpFailsWithoutItsVariables(t *testing.T) {
	for _, name := range []string{"IDEMPOTENCY_TABLE", "FAILURE_QUEUE_URL"} {
		t.Run(name, func(t *testing.T) {
			sampletest.EnvUnchecked(t, "ConsumerFunction", map[string]string{
				"IDEMPOTENCY_TABLE": table, "FAILURE_QUEUE_URL": "http://127.0.0.1:1/q"})
			sampletest.Unset(t, name)
			if _, err := newHandler(t.Context(), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("newHandler without %s: %v", name, err)
			}
		})
	}
	for _, bad := range []string{"-1", "many", "1.5"} {
		t.Run("KEY_CONCURRENCY="+bad, func(t *testing.T) {
			sampletest.EnvUnchecked(t, "ConsumerFunction", map[string]string{
				"IDEMPOTENCY_TABLE": table, "FAILURE_QUEUE_URL": "http://127.0.0.1:1/q", "KEY_CONCURRENCY": bad,
				"POWERTOOLS_METRICS_NAMESPACE": "KafkaOrders"})
			if _, err := newHandler(t.Context(), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "KEY_CONCURRENCY") {
				t.Errorf("newHandler with KEY_CONCURRENCY=%s: %v, want an error naming it", bad, err)
			}
		})
	}
	t.Run("bad FILTER_CRITERIA", func(t *testing.T) {
		sampletest.EnvUnchecked(t, "ConsumerFunction", map[string]string{
			"IDEMPOTENCY_TABLE": table, "FAILURE_QUEUE_URL": "http://127.0.0.1:1/q", "FILTER_CRITERIA": "",
			"POWERTOOLS_METRICS_NAMESPACE": "KafkaOrders"})
		if _, err := newHandler(t.Context(), new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), "FILTER_CRITERIA") {
			t.Errorf("newHandler with an empty FILTER_CRITERIA: %v", err)
		}
	})
}

func TestMain(m *testing.M) { sampletest.Main(m, main) }

// The function's process exits at start-up, before taking an invocation, saying what is missing.
func TestMainExitsWithoutItsConfiguration(t *testing.T) {
	sampletest.MainFails(t, "ConsumerFunction", map[string]string{"FAILURE_QUEUE_URL": "http://127.0.0.1:1/q"}, "consumer: environment variable IDEMPOTENCY_TABLE is required")
}
