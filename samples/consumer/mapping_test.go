package main

import (
	"bytes"
	"context"
	"fmt"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/samples/internal/sampletest"
)

// ordersAPI is an orders API that refuses the order whose Idempotency-Key is flaky with a 503
// on its first failures requests, and counts the orders it applied, by key.
type ordersAPI struct {
	flaky    string
	failures int

	mu      sync.Mutex
	calls   map[string]int
	applied map[string]int
}

func (a *ordersAPI) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	key := r.Header.Get("Idempotency-Key")
	a.mu.Lock()
	defer a.mu.Unlock()
	a.calls[key]++
	if key == a.flaky && a.calls[key] <= a.failures {
		http.Error(w, "try again", http.StatusServiceUnavailable)
		return
	}
	a.applied[key]++
	w.WriteHeader(http.StatusCreated)
}

// ConsumerFunction's handler behind the template's ConsumerSelfManagedMapping (BatchSize 100,
// a 1 s batching window, FilterCriteria on currency, ReportBatchItemFailures, 10 retries to
// KafkaOnFailureQueue), on one partition: a poison order (a negative total) among good ones
// goes to the function's failure queue and its partition moves on; an order the API refuses
// on every attempt of the first invocation is reported in the partial batch response with the
// record after it, so the mapping resumes from it, after the good records, and commits
// nothing past it until it succeeds; the GBP order is filtered out and committed; every order
// is applied once.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// the response names the failed records by partition and offset, and "If you return an empty
// valid JSON or null, the event source mapping will consider a batch as successfully
// processed."; (https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html) records that
// do not match the filter are not sent, and their offsets are committed.
//
// The same with the template's KeyConcurrency at 8 (KEY_CONCURRENCY: batch.WithKeyConcurrency):
// the same outcome, records of different customers at once.
func TestBehindTheTemplatesMapping(t *testing.T) {
	for _, kc := range []string{"0", "8"} {
		t.Run("KEY_CONCURRENCY="+kc, func(t *testing.T) { behindTheTemplatesMapping(t, kc) })
	}
}

func behindTheTemplatesMapping(t *testing.T, keyConcurrency string) {
	ddbEndpoint, ddb := sampletest.DynamoDB(t, table)
	sqsEndpoint, sqsClient, urls := sampletest.SQS(t, "ConsumerFailureQueue", "KafkaOnFailureQueue")
	// Offset 4 fails its three attempts (batch's default WithRetry) in the first invocation.
	api := &ordersAPI{flaky: "orders-0-4", failures: 3, calls: map[string]int{}, applied: map[string]int{}}
	srv := httptest.NewServer(api)
	t.Cleanup(srv.Close)
	sampletest.Env(t, "ConsumerFunction", map[string]string{
		"IDEMPOTENCY_TABLE":         table,
		"FAILURE_QUEUE_URL":         urls["ConsumerFailureQueue"],
		"FILTER_CRITERIA":           criteria,
		"ORDERS_API_URL":            srv.URL,
		"KEY_CONCURRENCY":           keyConcurrency, // the template's KeyConcurrency
		"KAFKA_BOOTSTRAP_SERVERS":   "127.0.0.1:1",  // the template sets it; the consumer does not connect
		"KAFKA_AUTH":                "iam",
		"AWS_ENDPOINT_URL_DYNAMODB": ddbEndpoint,
		"AWS_ENDPOINT_URL_SQS":      sqsEndpoint,
	})
	out := new(bytes.Buffer)
	h, err := newHandler(t.Context(), out)
	if err != nil {
		t.Fatal(err)
	}
	m, err := esmtest.ReadMapping(sampletest.Template, "ConsumerSelfManagedMapping",
		esmtest.TemplateEnv{SQS: sqsClient, QueueURLs: map[string]string{"KafkaOnFailureQueue": urls["KafkaOnFailureQueue"]}})
	if err != nil {
		t.Fatal(err)
	}

	// What is committed while the reported record is retried: read in its invocation.
	var mapping atomic.Pointer[esmtest.Kafka]
	committedDuringRetry := int64(-1)
	var n atomic.Int32
	k := esmtest.NewKafka(t, handlerFunc(func(ctx context.Context, event []byte) ([]byte, error) {
		if n.Add(1) == 2 {
			atomic.StoreInt64(&committedDuringRetry, mapping.Load().Committed()[0])
		}
		return h.Invoke(ctx, event)
	}), *m.Kafka, m.Options()...)
	mapping.Store(k)
	orders := []string{
		`{"orderId":1,"customer":"c-1","total":10,"currency":"EUR"}`,
		`{"orderId":2,"customer":"c-2","total":20,"currency":"USD"}`,
		`{"orderId":3,"customer":"c-3","total":-5,"currency":"EUR"}`, // poison: never valid
		`{"orderId":4,"customer":"c-4","total":40,"currency":"EUR"}`,
		`{"orderId":5,"customer":"c-5","total":50,"currency":"EUR"}`, // the API refuses it at first
		`{"orderId":6,"customer":"c-6","total":60,"currency":"USD"}`,
		`{"orderId":7,"customer":"c-7","total":70,"currency":"GBP"}`, // filtered out
	}
	var recs []*kgo.Record
	for i, o := range orders {
		recs = append(recs, &kgo.Record{Key: fmt.Appendf(nil, "order-%d", i+1), Value: []byte(o)})
	}
	k.ProduceTo(0, recs...)
	if err := k.WaitIdle(30 * time.Second); err != nil {
		t.Fatal(err)
	}

	invs := k.Invocations()
	if len(invs) != 2 {
		t.Fatalf("%d invocations, want 2: the batch, then the records from the reported one", len(invs))
	}
	if got := invs[0].Offsets(0); !slices.Equal(got, []int64{0, 1, 2, 3, 4, 5}) {
		t.Errorf("first invocation: offsets %v, want 0-5 (6, GBP, filtered out)", got)
	}
	if r := string(invs[0].Response); !strings.Contains(r, `"offset":4`) || !strings.Contains(r, `"offset":5`) || strings.Contains(r, `"offset":2`) {
		t.Errorf("first response %s: want offsets 4 and 5 reported, not the poison record (in the failure queue)", r)
	}
	if got := invs[1].Offsets(0); !slices.Equal(got, []int64{4, 5}) {
		t.Errorf("second invocation: offsets %v, want 4 5: the partition resumes from the reported record", got)
	}
	if c := atomic.LoadInt64(&committedDuringRetry); c < 0 || c > 4 {
		t.Errorf("committed %d while offset 4 was being retried, want at most 4", c)
	}
	if got := k.Committed()[0]; got != 7 {
		t.Errorf("committed %d, want 7 (the filtered record too)", got)
	}

	api.mu.Lock()
	applied := maps.Clone(api.applied)
	api.mu.Unlock()
	for _, key := range []string{"orders-0-0", "orders-0-1", "orders-0-3", "orders-0-4", "orders-0-5"} {
		if applied[key] != 1 {
			t.Errorf("%s applied %d times, want once (all: %v)", key, applied[key], applied)
		}
	}
	if len(applied) != 5 {
		t.Errorf("orders applied: %v, want 5 (not the poison one, not the filtered one)", applied)
	}
	failed := sampletest.Drain(t, sqsClient, urls["ConsumerFailureQueue"], 1, 2*time.Second)
	if len(failed) != 1 {
		t.Fatalf("%d records in the failure queue, want the poison one", len(failed))
	}
	env, err := batch.ReadEnvelope([]byte(*failed[0].Body))
	if err != nil {
		t.Fatal(err)
	}
	if env.Offset != 2 || !env.Permanent || !strings.Contains(env.Error, "invalid order 3") {
		t.Errorf("failure queue: %+v", env)
	}
	if f := k.OnFailure(); len(f) != 0 {
		t.Errorf("%d records given up to KafkaOnFailureQueue, want none", len(f))
	}
	// The invalid order went to the failure queue: its key is completed as "sunk".
	completed, sunk := 0, 0
	for _, it := range sampletest.Items(t, ddb, table) {
		switch {
		case sampletest.Sunk(it):
			sunk++
		case it["status"] == "COMPLETED":
			completed++
		}
	}
	if completed != 5 || sunk != 1 {
		t.Errorf("%d completed and %d sunk idempotency records, want 5 and 1", completed, sunk)
	}
}

// handlerFunc adapts a function to lambda.Handler.
type handlerFunc func(ctx context.Context, event []byte) ([]byte, error)

func (f handlerFunc) Invoke(ctx context.Context, event []byte) ([]byte, error) { return f(ctx, event) }
