package oteltrace_test

// The producer side: the hook as a franz-go hook writes the trace context into the records it
// produces, against kfake in process; batch reads it back from the fetched records.

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/kfaketest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/oteltrace"
	"github.com/kafkalambda/toolkit/producer"
)

func cluster(t *testing.T) *kfake.Cluster { return kfaketest.Cluster(t, "orders", 2) }

func client(t *testing.T, c *kfake.Cluster, opts ...kgo.Opt) *kgo.Client {
	return kfaketest.Client(t, c, opts...)
}

func fetch(t *testing.T, c *kfake.Cluster, n int) *kafkaevent.Event {
	return kfaketest.Event(t, c, "orders", n)
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

// Records produced under a span carry its trace context in their headers, each through a
// "send orders" span of its own; batch's record spans link to (or, with WithProducerParent,
// continue) the span that sent their record.
//
// The records go through a plain kgo client with the hook (kgo.WithHooks), or through package
// producer's client and Produce (producer.WithClientOptions(kgo.WithHooks(hook))).
func TestProduceThenProcess(t *testing.T) {
	for _, tc := range []struct {
		producerParent bool
		via            string
	}{{false, "kgo"}, {true, "kgo"}, {false, "producer"}} {
		producerParent := tc.producerParent
		t.Run(fmt.Sprintf("producerParent=%v/via=%s", producerParent, tc.via), func(t *testing.T) {
			tp, exp := recorder(t)
			prop := propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
			opts := []oteltrace.Option{oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(prop)}
			if producerParent {
				opts = append(opts, oteltrace.WithProducerParent())
			}
			hook := oteltrace.New(opts...)
			c := cluster(t)
			produce := func(ctx context.Context, recs ...*kgo.Record) error {
				return client(t, c, kgo.WithHooks(hook)).ProduceSync(ctx, recs...).FirstErr()
			}
			if tc.via == "producer" {
				cl, err := producer.NewClient(producer.WithBootstrapServers(c.ListenAddrs()...), producer.WithPlaintext(),
					producer.WithClientOptions(kgo.WithHooks(hook)))
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(cl.Close)
				produce = func(ctx context.Context, recs ...*kgo.Record) error {
					return producer.Produce(ctx, cl, recs...).Err()
				}
			}

			ctx, parent := tp.Tracer("test").Start(context.Background(), "handle request")
			shared := []kgo.RecordHeader{{Key: "content-type", Value: []byte("text/plain")},
				{Key: "Traceparent", Value: []byte("00-" + producerTrace + "-" + producerSpan + "-01")}}
			recs := []*kgo.Record{
				{Topic: "orders", Key: []byte("a"), Value: []byte("v1"), Headers: shared},
				{Topic: "orders", Key: []byte("b"), Value: []byte("v2"), Headers: shared},
				{Topic: "orders", Key: []byte("c"), Value: nil},
			}
			if err := produce(ctx, recs...); err != nil {
				t.Fatal(err)
			}
			parent.End()
			if len(shared) != 2 || string(shared[1].Value) != "00-"+producerTrace+"-"+producerSpan+"-01" {
				t.Errorf("the caller's header slice was changed: %q", shared)
			}
			for i, r := range recs {
				if r.Context != ctx {
					t.Errorf("record %d: Context is not the one given to Produce after the record was acknowledged", i)
				}
			}

			sends := sendSpans(t, exp, parent)
			if len(sends) != 3 {
				t.Fatalf("%d send spans with distinct partition/offset, want 3: %v", len(sends), keys(sends))
			}

			exp.Reset()
			ev := fetch(t, c, 3)
			linked := 0
			_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
				tps := headerValues(r, "traceparent")
				send, ok := sends[fmt.Sprintf("%d/%d", r.Partition, r.Offset)]
				if !ok {
					return fmt.Errorf("no send span for %d/%d", r.Partition, r.Offset)
				}
				want := fmt.Sprintf("traceparent=00-%s-%s-01", send.SpanContext.TraceID(), send.SpanContext.SpanID())
				if len(tps) != 1 || tps[0] != want {
					t.Errorf("record %d/%d: traceparent headers %q, want [%s]", r.Partition, r.Offset, tps, want)
				}
				if string(r.Key) != "c" {
					if ct, _ := r.Header("content-type"); string(ct) != "text/plain" {
						t.Errorf("record %d/%d: content-type %q lost", r.Partition, r.Offset, ct)
					}
				}
				return nil
			}, batch.WithHooks(hook))
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range exp.GetSpans() {
				if s.Name != "process orders" {
					continue
				}
				a := attrs(s)
				send := sends[fmt.Sprintf("%v/%v", a["messaging.destination.partition.id"], a["messaging.kafka.offset"])]
				if producerParent {
					if s.Parent.SpanID() != send.SpanContext.SpanID() || s.SpanContext.TraceID() != send.SpanContext.TraceID() {
						t.Errorf("record span %v: parent %s in trace %s, want the send span %s in %s", a, s.Parent.SpanID(),
							s.SpanContext.TraceID(), send.SpanContext.SpanID(), send.SpanContext.TraceID())
					}
				} else {
					if len(s.Links) != 1 || s.Links[0].SpanContext.SpanID() != send.SpanContext.SpanID() ||
						s.Links[0].SpanContext.TraceID() != parent.SpanContext().TraceID() {
						t.Errorf("record span %v: links %+v, want the send span %s of trace %s", a, s.Links,
							send.SpanContext.SpanID(), parent.SpanContext().TraceID())
					}
					if s.SpanContext.TraceID() == parent.SpanContext().TraceID() {
						t.Errorf("record span %v is in the producer's trace: want it in the function's, linked", a)
					}
				}
				linked++
			}
			if linked != 3 {
				t.Errorf("%d record spans, want 3", linked)
			}
		})
	}
}

// sendSpans are the "send orders" spans exp holds, by partition/offset, each checked to be a
// producer span under parent.
func sendSpans(t *testing.T, exp *tracetest.InMemoryExporter, parent trace.Span) map[string]tracetest.SpanStub {
	t.Helper()
	sends := map[string]tracetest.SpanStub{} // by partition/offset
	for _, s := range exp.GetSpans() {
		if s.Name != "send orders" {
			continue
		}
		a := attrs(s)
		if s.SpanKind != trace.SpanKindProducer || s.Parent.SpanID() != parent.SpanContext().SpanID() ||
			s.SpanContext.TraceID() != parent.SpanContext().TraceID() {
			t.Errorf("send span: kind %v, parent %s, trace %s; want producer, %s, %s", s.SpanKind,
				s.Parent.SpanID(), s.SpanContext.TraceID(), parent.SpanContext().SpanID(), parent.SpanContext().TraceID())
		}
		wantAttrs(t, s, map[attribute.Key]any{"messaging.system": "kafka", "messaging.operation.type": "send",
			"messaging.operation.name": "send", "messaging.destination.name": "orders"})
		sends[fmt.Sprintf("%v/%v", a["messaging.destination.partition.id"], a["messaging.kafka.offset"])] = s
	}
	return sends
}

// A record kgo fails ends its send span with the error; the record's Context is the one
// given to Produce again.
func TestProduceFailure(t *testing.T) {
	tp, exp := recorder(t)
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{}))
	c := cluster(t)
	producer := client(t, c, kgo.WithHooks(hook), kgo.UnknownTopicRetries(0))
	ctx, parent := tp.Tracer("test").Start(context.Background(), "handle request")
	r := &kgo.Record{Topic: "no-such-topic", Value: []byte("v")}
	err := producer.ProduceSync(ctx, r).FirstErr()
	parent.End()
	if err == nil {
		t.Fatal("producing to a topic that does not exist succeeded")
	}
	if r.Context != ctx {
		t.Error("the failed record's Context is not the one given to Produce")
	}
	var send *tracetest.SpanStub
	for _, s := range exp.GetSpans() {
		if s.Name == "send no-such-topic" {
			send = &s
		}
	}
	if send == nil {
		t.Fatalf("no span send no-such-topic: %v", keys(spans(exp)))
	}
	if send.Status.Code != codes.Error || len(send.Events) == 0 || send.Events[0].Name != "exception" {
		t.Errorf("send span: status %v, events %v; want Error and the exception", send.Status, send.Events)
	}
	if _, ok := attrs(*send)["messaging.kafka.offset"]; ok {
		t.Errorf("a failed record's span has an offset: %v", attrs(*send))
	}
}

// Without an SDK (the no-op provider), the trace context of the caller still travels: the
// headers carry the span context found in the record's Context, here one a request brought,
// and the stale ones are gone: a tracestate of another trace too, though this context has none.
func TestProduceWithoutSDK(t *testing.T) {
	hook := oteltrace.New(oteltrace.WithTracerProvider(noop.NewTracerProvider()), oteltrace.WithPropagator(propagation.TraceContext{}))
	tid, _ := trace.TraceIDFromHex(producerTrace)
	sid, _ := trace.SpanIDFromHex(producerSpan)
	ctx := trace.ContextWithRemoteSpanContext(context.Background(), trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: tid, SpanID: sid, TraceFlags: trace.FlagsSampled, Remote: true}))
	r := &kgo.Record{Topic: "orders", Context: ctx, Headers: []kgo.RecordHeader{
		{Key: "TRACEPARENT", Value: []byte("stale")}, {Key: "tracestate", Value: []byte("vendor=stale")},
		{Key: "x", Value: []byte("1")}, {Key: "traceparent", Value: []byte("stale too")}}}
	hook.OnProduceRecordBuffered(r)
	want := []kgo.RecordHeader{{Key: "x", Value: []byte("1")}, {Key: "traceparent", Value: []byte(traceparent)}}
	if fmt.Sprint(r.Headers) != fmt.Sprint(want) {
		t.Errorf("headers %q, want %q", r.Headers, want)
	}
	hook.OnProduceRecordUnbuffered(r, errors.New("boom"))
	if r.Context != ctx {
		t.Error("Context not given back")
	}
}
