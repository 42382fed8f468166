package stackrun

import (
	"context"
	"io"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// The output topics' consumer reads each record's source header into an effect of the
// input record it names; a record without one is unattributed; an on-failure record
// produced to a kafka:// destination names its range's records. settle returns once every
// record the topics held is read.
func TestTopicsObserved(t *testing.T) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "out", "failures"))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	withSource := &kgo.Record{Topic: "out", Value: []byte("enriched")}
	if err := producer.SetSource(withSource, &kafkaevent.Record{Topic: "orders", Partition: 1, Offset: 12}, 0); err != nil {
		t.Fatal(err)
	}
	ofd := `{"requestContext":{"condition":"RetryAttemptsExhausted","functionArn":"arn:aws:lambda:us-east-1:123456789012:function:Enricher"},` +
		`"KafkaBatchInfo":{"recordsInfo":{"orders-0":{"firstRecordOffset":"3","lastRecordOffset":"3"}}}}`
	if err := cl.ProduceSync(ctx, withSource, &kgo.Record{Topic: "out", Value: []byte("anonymous")},
		&kgo.Record{Topic: "failures", Value: []byte(ofd)}).FirstErr(); err != nil {
		t.Fatal(err)
	}
	l := ledger.New()
	o, err := startObservation(ctx, observationConfig{Ledger: l, Kafka: c, Brokers: c.ListenAddrs(),
		OutputTopics: map[string]string{"out": "Enricher", "failures": ""}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	if err := o.settle(ctx); err != nil {
		t.Fatal(err)
	}
	es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 1, Offset: 12}, "out")
	if len(es) != 1 || es[0].Via != ledger.ViaSourceHeader || es[0].Function != "Enricher" || es[0].Body != "enriched" {
		t.Errorf("source header: %+v", es)
	}
	if es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 0, Offset: 3}, "failures"); len(es) != 1 || es[0].Via != ledger.ViaOnFailure || es[0].Failure != "RetryAttemptsExhausted" {
		t.Errorf("on-failure record: %+v", es)
	}
	if u := l.UnattributedEffects(); len(u) != 1 || u[0].Resource != "out" {
		t.Errorf("unattributed: %+v", u)
	}
}

// The HTTP sink records each request as an effect of the record its Idempotency-Key names,
// under the caller its path names; a repeat of a key is answered as the first time and
// recorded as a Repeat; failFirst answers the first request for a record 503 and records
// nothing; a request without a key is applied and unattributed.
func TestHTTPSink(t *testing.T) {
	l := ledger.New()
	s, err := startHTTPSink(l, "OrdersApiUrl", 10*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	defer s.close()
	post := func(fn, key, body string) (int, string) {
		req, err := http.NewRequest(http.MethodPost, s.URL(fn), strings.NewReader(body))
		if err != nil {
			t.Fatal(err)
		}
		if key != "" {
			req.Header.Set("Idempotency-Key", key)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(b)
	}
	s.failFirst(ledger.RecordID{Topic: "orders", Partition: 0, Offset: 2})
	if st, _ := post("Worker", "orders-0-1", `{"orderId":1}`); st != http.StatusCreated {
		t.Fatalf("first request: %d", st)
	}
	if st, _ := post("Worker", "orders-0-1", `{"orderId":1}`); st != http.StatusCreated {
		t.Fatalf("repeat: %d, want the first answer", st)
	}
	if st, _ := post("Worker", "orders-0-2", `{"orderId":2}`); st != http.StatusServiceUnavailable {
		t.Fatalf("transient fault: %d", st)
	}
	if st, _ := post("Worker", "orders-0-2", `{"orderId":2}`); st != http.StatusCreated {
		t.Fatalf("retry after the transient fault: %d", st)
	}
	if st, _ := post("Worker", "", `{}`); st != http.StatusCreated {
		t.Fatalf("no key: %d", st)
	}
	es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 0, Offset: 1}, "OrdersApiUrl")
	if len(es) != 2 || es[0].Repeat || !es[1].Repeat || es[0].Function != "Worker" || es[0].Via != ledger.ViaIdempotencyHeader ||
		!strings.Contains(es[0].Body, `{"orderId":1}`) {
		t.Errorf("record 1: %+v", es)
	}
	if es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 0, Offset: 2}, "OrdersApiUrl"); len(es) != 1 || es[0].Repeat {
		t.Errorf("record 2: %+v", es)
	}
	if n := s.attemptsOf("Worker", "orders-0-2"); n != 2 {
		t.Errorf("attempts of record 2: %d", n)
	}
	if u := l.UnattributedEffects(); len(u) != 1 || !strings.Contains(u[0].Why, "no Idempotency-Key") {
		t.Errorf("unattributed: %+v", u)
	}
}
