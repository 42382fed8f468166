package funcrun

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"
)

// orderSink is the orders API the consumer applies orders to (ORDERS_API_URL). An order is
// applied when the sink answers it 2xx to a client still waiting, as an API that commits
// with its answer; it keeps the order of application per partition, by the request's
// Idempotency-Key (topic-partition-offset). The first request for hold is held for holdFor.
type orderSink struct {
	hold    string
	holdFor time.Duration

	applied *ledger // by Idempotency-Key

	mu      sync.Mutex
	seen    map[string]bool // keys requested at least once
	holding chan struct{}   // closed when the held request has come
	held    chan struct{}   // closed when the held request has ended
}

func (s *orderSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	// The order is read whole first, as an API reads its request before it commits; only
	// then does net/http watch the connection, so that a client giving up ends r.Context().
	if _, err := io.Copy(io.Discard, r.Body); err != nil {
		return
	}
	key := r.Header.Get("Idempotency-Key")
	s.mu.Lock()
	first := !s.seen[key]
	s.seen[key] = true
	s.mu.Unlock()
	if key == s.hold && first {
		close(s.holding)
		defer close(s.held)
		select {
		case <-time.After(s.holdFor):
		case <-r.Context().Done():
		}
	}
	if r.Context().Err() != nil {
		return // the client gave up: nothing is applied
	}
	if err := s.applied.add(key); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	w.WriteHeader(http.StatusCreated)
}

// TestConsumerAsLMIFunction is the concurrent-process test of issue 30: samples/consumer,
// built with -race, runs under the Runtime API stand-in as a Lambda Managed Instances
// function, 8 invocations at once per execution environment. Seven partitions are delivered
// at once, each batch after the last one's answer (resuming from the first failed offset, as
// the Kafka mapping does), so batches of different partitions overlap in one process; one
// order's API call is held past the function's timeout, so its batch is delivered again while
// the first delivery still runs. Every order is applied exactly once (0 lost, 0 twice), in
// offset order per partition, and the race detector reports nothing.
func TestConsumerAsLMIFunction(t *testing.T) {
	// The held call ends within the invocation's time; the batch is delivered again beside
	// its first delivery, as the mapping does after a timeout.
	runOrdersLMI(t, kafkaSource{value: consumerOrder}, consumerFunction, time.Second, true)
}

// TestConsumerAsLMIFunctionPastDeadline holds the call past the deadline margin: the batch
// reports that record failed at the margin, and the handler's context, which ends there,
// ends the call, so that an API that commits with its answer does not apply it; the
// redelivery applies it once. (LMI does not stop the function at its timeout: only the
// context stops the call.)
func TestConsumerAsLMIFunctionPastDeadline(t *testing.T) {
	runOrdersLMI(t, kafkaSource{value: consumerOrder}, consumerFunction, 5*time.Second, false)
}

// consumerFunction is samples/consumer as template.yaml's ConsumerFunction.
var consumerFunction = lmiFunction{pkg: "./samples/consumer", name: "ConsumerFunction"}

// runOrdersLMI runs the concurrent-process test of a sample that applies orders to the orders
// API (ORDERS_API_URL): orders-3-12's call is held for holdFor; with overlap, its batch is
// delivered a second time as soon as the held call has come. Every order is applied once.
func runOrdersLMI(t *testing.T, src lmiSource, fn lmiFunction, holdFor time.Duration, overlap bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	sink := newOrderSink(fmt.Sprintf("%s-3-12", lmiTopic), holdFor)
	d := &lmiDriver{t: t, ctx: ctx, src: src, holding: sink.holding}
	api := httptest.NewServer(sink)
	t.Cleanup(api.Close)
	fn.params = map[string]string{"OrdersApiUrl": api.URL}
	logs := d.start(fn)
	d.run(overlap)
	select {
	case <-sink.held:
	case <-ctx.Done():
		t.Fatal("the held request never ended")
	}
	d.finish(logs, sink.applied, "applied", false)
}

func newOrderSink(hold string, holdFor time.Duration) *orderSink {
	return &orderSink{hold: hold, holdFor: holdFor, applied: newLedger(), seen: map[string]bool{},
		holding: make(chan struct{}), held: make(chan struct{})}
}

// consumerOrder is the order at offset o of partition p, as samples/consumer reads it.
func consumerOrder(p int32, o int64) []byte {
	return fmt.Appendf(nil, `{"orderId":%d,"customer":"c%d","total":%d.5,"currency":"EUR","status":"placed"}`, int64(p)*1000+o+1, p, o)
}
