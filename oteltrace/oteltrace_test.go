package oteltrace_test

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/oteltrace"
)

// A producer's span context, as W3C Trace Context headers.
const (
	producerTrace = "4bf92f3577b34da6a3ce929d0e0e4736"
	producerSpan  = "00f067aa0ba902b7"
	traceparent   = "00-" + producerTrace + "-" + producerSpan + "-01"
)

func recorder(t *testing.T) (*sdktrace.TracerProvider, *tracetest.InMemoryExporter) {
	t.Helper()
	exp := tracetest.NewInMemoryExporter()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// spans indexes the exported spans by name; names that repeat get " #2", " #3"... in the
// order the spans started.
func spans(exp *tracetest.InMemoryExporter) map[string]tracetest.SpanStub {
	all := exp.GetSpans()
	sort.SliceStable(all, func(i, j int) bool { return all[i].StartTime.Before(all[j].StartTime) })
	out := map[string]tracetest.SpanStub{}
	for _, s := range all {
		name := s.Name
		for n := 2; ; n++ {
			if _, dup := out[name]; !dup {
				break
			}
			name = fmt.Sprintf("%s #%d", s.Name, n)
		}
		out[name] = s
	}
	return out
}

func attrs(s tracetest.SpanStub) map[attribute.Key]any {
	m := map[attribute.Key]any{}
	for _, kv := range s.Attributes {
		m[kv.Key] = kv.Value.AsInterface()
	}
	return m
}

func wantAttrs(t *testing.T, s tracetest.SpanStub, want map[attribute.Key]any) {
	t.Helper()
	got := attrs(s)
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s: %s = %#v, want %#v (all: %v)", s.Name, k, got[k], v, got)
		}
	}
}

func childOf(t *testing.T, child, parent tracetest.SpanStub) {
	t.Helper()
	if child.Parent.SpanID() != parent.SpanContext.SpanID() || child.SpanContext.TraceID() != parent.SpanContext.TraceID() {
		t.Errorf("%s: parent %s, want %s (%s)", child.Name, child.Parent.SpanID(), parent.SpanContext.SpanID(), parent.Name)
	}
}

var errBoom = errors.New("boom")

// Two partitions; orders-1's second record fails, so its third is skipped; the first record of
// orders-0 carries a producer's trace context.
func kafkaEvent() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	b.Add("orders", 0, []byte("a"), kafkaeventtest.WithHeader("traceparent", []byte(traceparent)),
		kafkaeventtest.WithHeader("baggage", []byte("tenant=acme")))
	b.Add("orders", 0, nil)
	b.Add("orders", 1, []byte("bb"))
	b.Add("orders", 1, []byte("fail"))
	b.Add("orders", 1, []byte("skipped"))
	return b.Event()
}

func TestKafkaSpans(t *testing.T) {
	tp, exp := recorder(t)
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(
		propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})))
	handlerSpans := map[int64]trace.SpanContext{}
	var tenant string
	_, err := batch.ProcessKafka(context.Background(), kafkaEvent(), func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 0 {
			handlerSpans[r.Offset] = trace.SpanContextFromContext(ctx)
			if r.Offset == 0 {
				tenant = baggage.FromContext(ctx).Member("tenant").Value()
			}
		}
		if string(r.Value) == "fail" {
			return batch.Permanent(errBoom)
		}
		return nil
	}, batch.WithHooks(hook), batch.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	got := spans(exp)
	if len(got) != 7 {
		t.Fatalf("%d spans, want 7 (batch, 2 partitions, 4 records): %v", len(got), keys(got))
	}
	b := got["process"]
	if b.SpanKind != trace.SpanKindConsumer || b.Parent.IsValid() {
		t.Errorf("batch span: kind %v, parent %v", b.SpanKind, b.Parent)
	}
	wantAttrs(t, b, map[attribute.Key]any{
		"messaging.system": "kafka", "messaging.operation.type": "process", "messaging.operation.name": "process",
		"messaging.batch.message_count": int64(5), "kafkalambda.batch.failed": int64(1),
		"kafkalambda.batch.reported": int64(2), "kafkalambda.batch.processed": int64(3), "kafkalambda.batch.not_recorded": int64(0),
	})
	if b.Status.Code != codes.Error {
		t.Errorf("batch status %v, want Error", b.Status)
	}
	p0, p1 := got["partition orders"], got["partition orders #2"]
	if attrs(p0)["messaging.destination.partition.id"] != "0" {
		p0, p1 = p1, p0
	}
	for i, p := range []tracetest.SpanStub{p0, p1} {
		childOf(t, p, b)
		if p.SpanKind != trace.SpanKindInternal {
			t.Errorf("partition span kind %v", p.SpanKind)
		}
		wantAttrs(t, p, map[attribute.Key]any{"messaging.system": "kafka", "messaging.destination.name": "orders",
			"messaging.destination.partition.id": fmt.Sprint(i), "messaging.batch.message_count": int64(2 + i)})
	}
	if p0.Status.Code != codes.Unset || p1.Status.Code != codes.Error {
		t.Errorf("partition status %v, %v; want Unset, Error", p0.Status, p1.Status)
	}

	recs := map[string]tracetest.SpanStub{}
	for name, s := range got {
		if s.Name == "process orders" {
			a := attrs(s)
			recs[fmt.Sprintf("%v/%v", a["messaging.destination.partition.id"], a["messaging.kafka.offset"])] = s
			_ = name
		}
	}
	if len(recs) != 4 {
		t.Fatalf("record spans %v, want 0/0 0/1 1/0 1/1", keys(recs))
	}
	for id, s := range recs {
		parent := p0
		if id[0] == '1' {
			parent = p1
		}
		childOf(t, s, parent)
		if s.SpanKind != trace.SpanKindConsumer {
			t.Errorf("%s: kind %v", id, s.SpanKind)
		}
		wantAttrs(t, s, map[attribute.Key]any{"messaging.system": "kafka", "messaging.operation.type": "process",
			"messaging.destination.name": "orders"})
	}
	wantAttrs(t, recs["0/0"], map[attribute.Key]any{"messaging.message.body.size": int64(1)})
	wantAttrs(t, recs["0/1"], map[attribute.Key]any{"messaging.kafka.message.tombstone": true, "messaging.message.body.size": int64(0)})
	if _, ok := attrs(recs["0/0"])["messaging.kafka.message.tombstone"]; ok {
		t.Error("a record with a value is marked a tombstone")
	}
	// The handler's context carries its record's span.
	for off, sc := range handlerSpans {
		if s := recs[fmt.Sprintf("0/%d", off)]; sc.SpanID() != s.SpanContext.SpanID() {
			t.Errorf("handler of 0/%d ran in span %s, want its record's %s", off, sc.SpanID(), s.SpanContext.SpanID())
		}
	}
	// The producer's context is a link, and its baggage reaches the handler.
	if l := recs["0/0"].Links; len(l) != 1 || l[0].SpanContext.TraceID().String() != producerTrace ||
		l[0].SpanContext.SpanID().String() != producerSpan || !l[0].SpanContext.IsRemote() {
		t.Errorf("record 0/0 links %+v, want the producer's span", l)
	}
	if len(recs["0/1"].Links) != 0 {
		t.Errorf("record 0/1 without trace headers has links %+v", recs["0/1"].Links)
	}
	if tenant != "acme" {
		t.Errorf("baggage tenant = %q in the handler, want acme", tenant)
	}
	// The failed record: status, exception event and error.type.
	f := recs["1/1"]
	if f.Status.Code != codes.Error || f.Status.Description != "boom" {
		t.Errorf("failed record status %+v", f.Status)
	}
	if len(f.Events) != 1 || f.Events[0].Name != "exception" {
		t.Errorf("failed record events %+v, want one exception", f.Events)
	}
	if et := attrs(f)["error.type"]; et == nil || et == "" {
		t.Error("failed record has no error.type")
	}
	if recs["1/0"].Status.Code != codes.Unset {
		t.Errorf("successful record status %+v", recs["1/0"].Status)
	}
}

// A record that fails before its handler runs (a decode error) has no span: it is an
// exception event on its partition's span.
func TestKafkaDecodeError(t *testing.T) {
	tp, exp := recorder(t)
	ev := kafkaEvent()
	ev.Partitions[0].Records[1].Err = errors.New("value: illegal base64 data at input byte 3")
	if _, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error { return nil },
		batch.WithHooks(oteltrace.New(oteltrace.WithTracerProvider(tp)))); err != nil {
		t.Fatal(err)
	}
	for _, s := range exp.GetSpans() {
		if s.Name != "partition orders" || attrs(s)["messaging.destination.partition.id"] != "0" {
			continue
		}
		if s.Status.Code != codes.Error || len(s.Events) != 1 || s.Events[0].Name != "exception" {
			t.Fatalf("partition 0: status %v, events %+v; want Error and one exception", s.Status, s.Events)
		}
		ev := map[attribute.Key]any{}
		for _, kv := range s.Events[0].Attributes {
			ev[kv.Key] = kv.Value.AsInterface()
		}
		if msg, _ := ev["exception.message"].(string); !strings.Contains(msg, "illegal base64") || ev["messaging.kafka.offset"] != int64(1) {
			t.Errorf("exception event %v", ev)
		}
		return
	}
	t.Fatal("no span for partition 0")
}

// With WithProducerParent the record continues its producer's trace and links its partition.
func TestKafkaProducerParent(t *testing.T) {
	tp, exp := recorder(t)
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{}),
		oteltrace.WithProducerParent())
	if _, err := batch.ProcessKafka(context.Background(), kafkaEvent(), func(ctx context.Context, r *kafkaevent.Record) error {
		return nil
	}, batch.WithHooks(hook)); err != nil {
		t.Fatal(err)
	}
	var traced, plain int
	for _, s := range exp.GetSpans() {
		if s.Name != "process orders" {
			continue
		}
		if attrs(s)["messaging.kafka.offset"] == int64(0) && attrs(s)["messaging.destination.partition.id"] == "0" {
			traced++
			if s.SpanContext.TraceID().String() != producerTrace || s.Parent.SpanID().String() != producerSpan {
				t.Errorf("record span in trace %s under %s, want the producer's", s.SpanContext.TraceID(), s.Parent.SpanID())
			}
			if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() == producerTrace {
				t.Errorf("record span links %+v, want its partition's span", s.Links)
			}
		} else {
			plain++
			if s.SpanContext.TraceID().String() == producerTrace || !s.Parent.IsValid() || len(s.Links) != 0 {
				t.Errorf("record without trace headers: trace %s, parent %s, links %d", s.SpanContext.TraceID(), s.Parent.SpanID(), len(s.Links))
			}
		}
	}
	if traced != 1 || plain != 4 {
		t.Errorf("%d traced and %d plain record spans, want 1 and 4", traced, plain)
	}
}

func str(s string) *string { return &s }

func sqsMessage(queue, id, group, body string, attrs map[string]events.SQSMessageAttribute) events.SQSMessage {
	m := events.SQSMessage{MessageId: id, Body: body, EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:" + queue,
		Attributes: map[string]string{}, MessageAttributes: attrs}
	if group != "" {
		m.Attributes["MessageGroupId"] = group
	}
	return m
}

func TestSQSFIFOSpans(t *testing.T) {
	tp, exp := recorder(t)
	hook := oteltrace.New(oteltrace.WithTracerProvider(tp), oteltrace.WithPropagator(propagation.TraceContext{}))
	tpAttr := map[string]events.SQSMessageAttribute{"traceparent": {DataType: "String", StringValue: str(traceparent)}}
	ev := &events.SQSEvent{Records: []events.SQSMessage{
		sqsMessage("jobs.fifo", "m1", "g1", "one", tpAttr),
		sqsMessage("jobs.fifo", "m2", "g2", "fail", nil),
		sqsMessage("jobs.fifo", "m3", "g1", "three", nil),
		sqsMessage("jobs.fifo", "m4", "g2", "skipped", nil),
	}}
	_, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error {
		if m.Body == "fail" {
			return batch.Permanent(errBoom)
		}
		return nil
	}, batch.WithHooks(hook))
	if err != nil {
		t.Fatal(err)
	}
	got := spans(exp)
	if len(got) != 6 {
		t.Fatalf("%d spans %v, want 6 (batch, 2 groups, 3 messages)", len(got), keys(got))
	}
	b := got["process"]
	wantAttrs(t, b, map[attribute.Key]any{"messaging.system": "aws_sqs", "messaging.batch.message_count": int64(4),
		"kafkalambda.batch.failed": int64(1), "kafkalambda.batch.reported": int64(2)})
	groups := map[any]tracetest.SpanStub{}
	for _, name := range []string{"message group jobs.fifo", "message group jobs.fifo #2"} {
		g := got[name]
		childOf(t, g, b)
		wantAttrs(t, g, map[attribute.Key]any{"messaging.system": "aws_sqs", "messaging.destination.name": "jobs.fifo",
			"messaging.batch.message_count": int64(2)})
		groups[attrs(g)["kafkalambda.sqs.message_group_id"]] = g
	}
	if groups["g1"].Status.Code != codes.Unset || groups["g2"].Status.Code != codes.Error {
		t.Errorf("group statuses g1 %v, g2 %v", groups["g1"].Status, groups["g2"].Status)
	}
	n := 0
	for _, s := range got {
		if s.Name != "process jobs.fifo" {
			continue
		}
		n++
		a := attrs(s)
		g := groups["g1"]
		if a["messaging.message.id"] == "m2" {
			g = groups["g2"]
			if s.Status.Code != codes.Error {
				t.Errorf("failed message status %v", s.Status)
			}
		}
		childOf(t, s, g)
		wantAttrs(t, s, map[attribute.Key]any{"messaging.system": "aws_sqs", "messaging.destination.name": "jobs.fifo"})
		if a["messaging.message.id"] == "m1" {
			wantAttrs(t, s, map[attribute.Key]any{"messaging.message.body.size": int64(3)})
			if len(s.Links) != 1 || s.Links[0].SpanContext.TraceID().String() != producerTrace {
				t.Errorf("m1 links %+v, want the producer's span", s.Links)
			}
		}
	}
	if n != 3 {
		t.Errorf("%d message spans, want 3 (m4 is skipped after m2 failed)", n)
	}
}

// A standard queue's messages have no group span: the record span stands for it. The trace
// context comes from the global propagator and the spans go to the global provider by default,
// and an X-Ray trace header (AWSTraceHeader) reaches a propagator under X-Amzn-Trace-Id.
func TestSQSStandardDefaults(t *testing.T) {
	tp, exp := recorder(t)
	otel.SetTracerProvider(tp)
	otel.SetTextMapPropagator(propagation.TraceContext{})
	hook := oteltrace.New()
	ev := &events.SQSEvent{Records: []events.SQSMessage{
		sqsMessage("jobs", "m1", "", "one", map[string]events.SQSMessageAttribute{
			"TraceParent": {DataType: "String", StringValue: str(traceparent)}}),
		sqsMessage("jobs", "m2", "", "two", nil),
	}}
	ev.Records[1].Attributes["AWSTraceHeader"] = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"
	var seen string
	probe := propagation.TextMapPropagator(probeProp{&seen})
	if _, err := batch.ProcessSQS(context.Background(), ev, func(ctx context.Context, m *events.SQSMessage) error { return nil },
		batch.WithHooks(hook, oteltrace.New(oteltrace.WithTracerProvider(noop.NewTracerProvider()), oteltrace.WithPropagator(probe))),
		batch.WithConcurrency(1)); err != nil {
		t.Fatal(err)
	}
	got := spans(exp)
	if len(got) != 3 {
		t.Fatalf("spans %v, want the batch and two messages", keys(got))
	}
	for _, name := range []string{"process jobs", "process jobs #2"} {
		childOf(t, got[name], got["process"])
	}
	m1 := got["process jobs"]
	if attrs(m1)["messaging.message.id"] != "m1" {
		m1 = got["process jobs #2"]
	}
	if len(m1.Links) != 1 || m1.Links[0].SpanContext.TraceID().String() != producerTrace {
		t.Errorf("m1 links %+v: the attribute TraceParent was not read as traceparent", m1.Links)
	}
	if seen != ev.Records[1].Attributes["AWSTraceHeader"] {
		t.Errorf("X-Amzn-Trace-Id read as %q", seen)
	}
}

// probeProp records what a propagator reads under X-Amzn-Trace-Id.
type probeProp struct{ seen *string }

func (p probeProp) Inject(context.Context, propagation.TextMapCarrier) {}
func (p probeProp) Extract(ctx context.Context, c propagation.TextMapCarrier) context.Context {
	if v := c.Get("X-Amzn-Trace-Id"); v != "" {
		*p.seen = v
	}
	return ctx
}
func (p probeProp) Fields() []string { return []string{"X-Amzn-Trace-Id"} }

// Without a provider set, the default global one records nothing; the handler still runs, with
// the baggage its producer sent.
func TestNoProvider(t *testing.T) {
	otel.SetTracerProvider(noop.NewTracerProvider())
	otel.SetTextMapPropagator(propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{}))
	ran := 0
	var tenant string
	if _, err := batch.ProcessKafka(context.Background(), kafkaEvent(), func(ctx context.Context, r *kafkaevent.Record) error {
		ran++
		if trace.SpanContextFromContext(ctx).IsValid() {
			t.Error("a span context without a provider")
		}
		if r.Partition == 0 && r.Offset == 0 {
			tenant = baggage.FromContext(ctx).Member("tenant").Value()
		}
		return nil
	}, batch.WithHooks(oteltrace.New()), batch.WithConcurrency(1)); err != nil {
		t.Fatal(err)
	}
	if ran != 5 {
		t.Errorf("handler ran %d times, want 5", ran)
	}
	if tenant != "acme" {
		t.Errorf("baggage tenant = %q without a provider, want acme", tenant)
	}
}

func keys[V any](m map[string]V) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
