package xraytrace_test

// The producer side: the hook as a franz-go hook writes the X-Ray trace header into the
// records it produces, against kfake in process; batch reads it back from the fetched records
// onto each partition's subsegment.

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/kfaketest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/kafkalambda/toolkit/xraytrace"
)

// consumerTraceID is the consumer function's trace, another than the producer's (traceID).
const consumerTraceID = "1-5759e988-000000000000000000000002"

func cluster(t *testing.T) *kfake.Cluster { return kfaketest.Cluster(t, "orders", 2) }

func client(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	return kfaketest.Client(t, c, opts...)
}

func fetch(t *testing.T, c *kfake.Cluster, n int) *kafkaevent.Event {
	return kfaketest.Event(t, c, "orders", n)
}

// receiveAll reads segment documents until done says so (or 3 s passed), and returns every
// (sub)segment received, nested ones included, in the order received.
func receiveAll(t *testing.T, pc net.PacketConn, done func([]map[string]any) bool) []map[string]any {
	t.Helper()
	var all []map[string]any
	var walk func(doc map[string]any, traceID string)
	walk = func(doc map[string]any, traceID string) {
		if _, ok := doc["trace_id"]; !ok {
			doc["trace_id"] = traceID
		}
		all = append(all, doc)
		subs, _ := doc["subsegments"].([]any)
		for _, s := range subs {
			if m, ok := s.(map[string]any); ok {
				m["parent_id"] = doc["id"]
				walk(m, doc["trace_id"].(string))
			}
		}
	}
	buf := make([]byte, 64<<10)
	_ = pc.SetReadDeadline(time.Now().Add(3 * time.Second))
	for !done(all) {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			t.Fatalf("waiting for segments: %v (got %d)", err, len(all))
		}
		_, body, ok := strings.Cut(string(buf[:n]), "\n")
		var doc map[string]any
		if !ok || json.Unmarshal([]byte(body), &doc) != nil {
			continue
		}
		walk(doc, "")
	}
	return all
}

func named(docs []map[string]any, name string) []map[string]any {
	var out []map[string]any
	for _, d := range docs {
		if d["name"] == name {
			out = append(out, d)
		}
	}
	return out
}

func count(name string, n int) func([]map[string]any) bool {
	return func(docs []map[string]any) bool { return len(named(docs, name)) >= n }
}

func headerValues(r *kafkaevent.Record, key string) []string {
	var vs []string
	for _, h := range r.Headers {
		if strings.EqualFold(h.Key, key) {
			vs = append(vs, h.Key+"="+string(h.Value))
		}
	}
	return vs
}

// Records produced in a traced function carry the X-Ray trace header of the (sub)segment
// they were produced in; a consumer's partition subsegments, in the consumer's own trace, name
// the producer's trace (annotation producer_trace_id, metadata producer_traces).
//
// The records go through a plain kgo client with the hook (kgo.WithHooks), or through package
// producer's client and Produce (producer.WithClientOptions(kgo.WithHooks(hook))).
func TestProduceThenProcess(t *testing.T) {
	for _, via := range []string{"kgo", "producer"} {
		t.Run("via="+via, func(t *testing.T) { produceThenProcess(t, via) })
	}
}

func produceThenProcess(t *testing.T, via string) {
	ctx, pc := daemon(t)
	hook, producerHook := xraytrace.New(), xraytrace.NewProducerHook()
	c := cluster(t)
	produce := func(ctx context.Context, recs ...*kgo.Record) error {
		return client(t, c, kgo.WithHooks(producerHook)).ProduceSync(ctx, recs...).FirstErr()
	}
	if via == "producer" {
		cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext(),
			producer.WithClientOptions(kgo.WithHooks(producerHook)))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(cl.Close)
		produce = func(ctx context.Context, recs ...*kgo.Record) error {
			return producer.Produce(ctx, cl, recs...).Err()
		}
	}
	shared := []kgo.RecordHeader{{Key: "content-type", Value: []byte("text/plain")},
		{Key: "x-amzn-trace-id", Value: []byte("Root=1-00000000-000000000000000000000000;Sampled=1")}}
	recs := []*kgo.Record{
		{Topic: "orders", Key: []byte("a"), Value: []byte("v1"), Headers: shared},
		{Topic: "orders", Key: []byte("b"), Value: []byte("v2"), Headers: shared},
	}
	// Two records in the function's segment, the one the Lambda trace header names...
	if err := produce(ctx, recs...); err != nil {
		t.Fatal(err)
	}
	// ... and one in a subsegment of the handler's.
	sctx, seg := xray.BeginSubsegment(ctx, "handler")
	third := &kgo.Record{Topic: "orders", Key: []byte("c"), Value: []byte("v3")}
	if err := produce(sctx, third); err != nil {
		t.Fatal(err)
	}
	seg.Close(nil)
	if string(shared[1].Value) != "Root=1-00000000-000000000000000000000000;Sampled=1" {
		t.Errorf("the caller's header slice was changed: %q", shared)
	}
	parents := map[string]string{} // by key
	for _, r := range append(recs, third) {
		parents[string(r.Key)] = "53995c3f42cd8ad8"
	}
	parents["c"] = seg.ID
	receiveAll(t, pc, count("handler", 1))

	ev := fetch(t, c, 3)
	firstParent := map[int32]string{}
	for _, p := range ev.Partitions {
		for i := range p.Records {
			r := &p.Records[i]
			want := fmt.Sprintf("X-Amzn-Trace-Id=Root=%s;Parent=%s;Sampled=1", traceID, parents[string(r.Key)])
			if got := headerValues(r, xraytrace.TraceHeader); len(got) != 1 || got[0] != want {
				t.Errorf("record %d/%d: trace headers %q, want [%s]", r.Partition, r.Offset, got, want)
			}
			if _, ok := firstParent[r.Partition]; !ok {
				firstParent[r.Partition] = parents[string(r.Key)]
			}
		}
	}

	//lint:ignore SA1029 the key is the SDK's own.
	cctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey, "Root="+consumerTraceID+";Parent=1111111111111111;Sampled=1")
	_, err := batch.ProcessKafka(cctx, ev, func(context.Context, *kafkaevent.Record) error { return nil }, batch.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	docs := receiveAll(t, pc, func(docs []map[string]any) bool {
		for _, p := range ev.Partitions {
			if len(named(docs, "partition "+p.ID())) == 0 {
				return false
			}
		}
		return true
	})
	for _, p := range ev.Partitions {
		d := named(docs, "partition "+p.ID())[0]
		if d["trace_id"] != consumerTraceID {
			t.Errorf("%s: trace_id %v, want the consumer's %s", p.ID(), d["trace_id"], consumerTraceID)
		}
		a, _ := d["annotations"].(map[string]any)
		if a["producer_trace_id"] != traceID || a["producer_traces"] != 1.0 {
			t.Errorf("%s: annotations %v, want producer_trace_id %s, producer_traces 1", p.ID(), a, traceID)
		}
		md, _ := d["metadata"].(map[string]any)
		def, _ := md["default"].(map[string]any)
		list, _ := def["producer_traces"].([]any)
		want := map[string]any{"trace_id": traceID, "parent_id": firstParent[p.Number], "records": float64(len(p.Records)),
			"first_offset": fmt.Sprint(p.Records[0].Offset), "last_offset": fmt.Sprint(p.Records[len(p.Records)-1].Offset)}
		if len(list) != 1 || fmt.Sprint(list[0]) != fmt.Sprint(want) {
			t.Errorf("%s: metadata producer_traces %v, want [%v]", p.ID(), list, want)
		}
	}
}

// A partition whose records came from many traces lists the first 20 and counts them all;
// headers that are not an X-Ray trace header are counted apart.
func TestManyProducerTraces(t *testing.T) {
	ctx, pc := daemon(t)
	b := kafkaeventtest.NewBuilder()
	for i := range 25 {
		b.Add("orders", 0, []byte("v"), kafkaeventtest.WithHeader("X-Amzn-Trace-Id",
			fmt.Appendf(nil, "Root=1-5759e988-%024x;Parent=%016x;Sampled=1", i, i)))
	}
	b.Add("orders", 0, []byte("v"), kafkaeventtest.WithHeader("X-Amzn-Trace-Id", fmt.Appendf(nil, "Root=1-5759e988-%024x", 3)))
	b.Add("orders", 0, []byte("v"), kafkaeventtest.WithHeader("X-Amzn-Trace-Id", []byte("Root=not-a-trace-id")))
	b.Add("orders", 0, []byte("v"), kafkaeventtest.WithHeader("traceparent", []byte("00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01")))
	_, err := batch.ProcessKafka(ctx, b.Event(), func(context.Context, *kafkaevent.Record) error { return nil },
		batch.WithHooks(xraytrace.New()))
	if err != nil {
		t.Fatal(err)
	}
	d := named(receiveAll(t, pc, count("partition orders-0", 1)), "partition orders-0")[0]
	a, _ := d["annotations"].(map[string]any)
	if a["producer_trace_id"] != "1-5759e988-000000000000000000000000" || a["producer_traces"] != 25.0 ||
		a["producer_trace_headers_invalid"] != 1.0 {
		t.Errorf("annotations %v, want the first trace, 25 traces, 1 invalid header", a)
	}
	list, _ := d["metadata"].(map[string]any)["default"].(map[string]any)["producer_traces"].([]any)
	if len(list) != 20 {
		t.Fatalf("metadata lists %d traces, want 20", len(list))
	}
	if fourth := list[3].(map[string]any); fourth["records"] != 2.0 || fourth["last_offset"] != "25" {
		t.Errorf("4th trace %v: want 2 records, the last at offset 25", fourth)
	}
}

// Without a trace in the context, producing leaves the records' headers alone.
func TestProduceUntraced(t *testing.T) {
	c := cluster(t)
	cl := client(t, c, kgo.WithHooks(xraytrace.NewProducerHook()))
	r := &kgo.Record{Topic: "orders", Value: []byte("v"), Headers: []kgo.RecordHeader{{Key: "k", Value: []byte("v")}}}
	if err := cl.ProduceSync(context.Background(), r).FirstErr(); err != nil {
		t.Fatal(err)
	}
	if len(r.Headers) != 1 {
		t.Errorf("untraced record has headers %q", r.Headers)
	}
}
