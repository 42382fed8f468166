package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/samples/internal/sampletest"
)

const topic = "order-events"

// start runs kfake with the output topic (3 partitions), sets the environment as the
// template does (KAFKA_AUTH=plaintext, as make invoke sets it for a local broker), and
// returns the relay's handler as the runtime calls it, its output and the cluster's seeds.
func start(t *testing.T, outputTopic string) (lambda.Handler, *bytes.Buffer, []string) {
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(3, topic))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	sampletest.Env(t, "ProducerFunction", map[string]string{
		"OUTPUT_TOPIC":            outputTopic,
		"KAFKA_BOOTSTRAP_SERVERS": strings.Join(c.ListenAddrs(), ","),
		"KAFKA_AUTH":              "plaintext",
	})
	out := new(bytes.Buffer)
	rl, err := newRelay(out)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(rl.client.Close)
	return lambda.NewHandler(rl.handler()), out, c.ListenAddrs()
}

// consume reads every record of the topic, waiting up to 5 s for want of them and then 300 ms
// for any more, in each partition's order.
func consume(t *testing.T, seeds []string, want int) []*kgo.Record {
	cl, err := kgo.NewClient(kgo.SeedBrokers(seeds...), kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	var got []*kgo.Record
	poll := func(d time.Duration) {
		ctx, cancel := context.WithTimeout(context.Background(), d)
		defer cancel()
		fs := cl.PollFetches(ctx)
		for _, e := range fs.Errors() {
			if !errors.Is(e.Err, context.DeadlineExceeded) {
				t.Fatalf("consuming %s: %v", topic, e.Err)
			}
		}
		fs.EachRecord(func(r *kgo.Record) { got = append(got, r) })
	}
	for deadline := time.Now().Add(5 * time.Second); len(got) < want && time.Now().Before(deadline); {
		poll(time.Until(deadline))
	}
	poll(300 * time.Millisecond) // anything more than want
	return got
}

func header(r *kgo.Record, key string) string {
	for _, h := range r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	return ""
}

// inserts returns the outbox items of the fixture's INSERT records, in stream order: id,
// entityId, payload and the record's SequenceNumber.
func inserts(t *testing.T, payload []byte) [][4]string {
	var ev events.DynamoDBEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		t.Fatal(err)
	}
	var out [][4]string
	for _, r := range ev.Records {
		if r.EventName != "INSERT" {
			continue
		}
		img := r.Change.NewImage
		get := func(k string) string {
			if v, ok := img[k]; ok {
				return v.String()
			}
			return ""
		}
		out = append(out, [4]string{get("id"), get("entityId"), get("payload"), r.Change.SequenceNumber})
	}
	return out
}

// check compares the topic with the first n inserts of the fixture: each once, keyed by its
// entity, with its payload and headers, and each entity's events in stream order.
func check(t *testing.T, got []*kgo.Record, items [][4]string) {
	t.Helper()
	if len(got) != len(items) {
		t.Errorf("%d records in %s, want %d", len(got), topic, len(items))
	}
	byID := map[string]*kgo.Record{}
	perKey := map[string][]string{}
	for _, r := range got {
		byID[header(r, "outbox-id")] = r
		perKey[string(r.Key)] = append(perKey[string(r.Key)], header(r, "outbox-id"))
	}
	wantPerKey := map[string][]string{}
	for _, it := range items {
		wantPerKey[it[1]] = append(wantPerKey[it[1]], it[0])
		r := byID[it[0]]
		if r == nil {
			t.Errorf("outbox item %s is not in the topic", it[0])
			continue
		}
		if string(r.Key) != it[1] || string(r.Value) != it[2] || header(r, "outbox-sequence-number") != it[3] || header(r, "outbox-type") == "" ||
			header(r, "correlation-id") != it[0] {
			t.Errorf("outbox item %s produced as key %q value %s headers %v", it[0], r.Key, r.Value, r.Headers)
		}
	}
	if fmt.Sprint(perKey) != fmt.Sprint(wantPerKey) {
		t.Errorf("events per entity, in the topic's order: %v, want %v", perKey, wantPerKey)
	}
}

func TestOutbox(t *testing.T) {
	h, out, seeds := start(t, topic)
	payload := sampletest.Fixture(t, "producer", "outbox.json")
	resp, err := h.Invoke(sampletest.Context(t), payload)
	if err != nil {
		t.Fatal(err)
	}
	sampletest.SameJSON(t, resp, "producer", "outbox.response.json")
	items := inserts(t, payload)
	check(t, consume(t, seeds, len(items)), items) // the REMOVE (a TTL clean-up) is not relayed
	lines := sampletest.Lines(t, out.Bytes())
	if l := sampletest.WithMsg(lines, "outbox batch relayed"); len(l) != 1 || l[0]["produced"] != 6.0 || l[0]["skipped"] != 1.0 ||
		l[0]["function_request_id"] != sampletest.RequestID {
		t.Errorf("summary (with the invocation's request ID): %v", l)
	}
	if n := sampletest.Metric(lines, "OutboxItemsRelayed"); n != 1 {
		t.Errorf("OutboxItemsRelayed: %d values, want 1 (6), with the service dimension:\n%s", n, out)
	}
}

func TestMalformedItemStopsTheShard(t *testing.T) {
	h, out, seeds := start(t, topic)
	payload := sampletest.Fixture(t, "producer", "malformed.json")
	resp, err := h.Invoke(sampletest.Context(t), payload)
	if err != nil {
		t.Fatal(err)
	}
	// The third item has no entityId: the response names its SequenceNumber, the stream
	// retries from there, and the items after it wait rather than overtake it.
	sampletest.SameJSON(t, resp, "producer", "malformed.response.json")
	check(t, consume(t, seeds, 2), inserts(t, payload)[:2])
	l := sampletest.WithMsg(sampletest.Lines(t, out.Bytes()), "outbox item not relayed")
	if len(l) != 1 || !strings.Contains(fmt.Sprint(l[0]["error"]), "entityId") {
		t.Errorf("'outbox item not relayed' lines: %v", l)
	}
}

func TestKafkaFailureReportsTheFirstRecord(t *testing.T) {
	// A topic the cluster does not have: every produce fails, and the response names the first
	// record so that the stream retries the whole batch, in order.
	h, _, _ := start(t, "no-such-topic")
	payload := sampletest.Fixture(t, "producer", "outbox.json")
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := h.Invoke(ctx, payload)
	if err != nil {
		t.Fatal(err)
	}
	want := fmt.Sprintf(`{"batchItemFailures":[{"itemIdentifier":%q}]}`, inserts(t, payload)[0][3])
	if string(resp) != want {
		t.Errorf("response %s, want %s", resp, want)
	}
}

func TestStartUpFails(t *testing.T) {
	for _, name := range []string{"OUTPUT_TOPIC", "KAFKA_BOOTSTRAP_SERVERS", "KAFKA_AUTH"} {
		t.Run(name, func(t *testing.T) {
			sampletest.EnvUnchecked(t, "ProducerFunction", map[string]string{
				"OUTPUT_TOPIC": topic, "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092", "KAFKA_AUTH": "plaintext"})
			sampletest.Unset(t, name)
			if _, err := newRelay(new(bytes.Buffer)); err == nil || !strings.Contains(err.Error(), name) {
				t.Errorf("newRelay without %s: %v", name, err)
			}
		})
	}
}

func TestMain(m *testing.M) { sampletest.Main(m, main) }

// The function's process exits at start-up, before taking an invocation, saying what is missing.
func TestMainExitsWithoutItsConfiguration(t *testing.T) {
	sampletest.MainFails(t, "ProducerFunction", map[string]string{"OUTPUT_TOPIC": "t", "KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"}, "outbox relay: producer: invalid option KAFKA_AUTH")
}
