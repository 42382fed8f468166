package oteltrace

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/trace"

	"github.com/kafkalambda/toolkit/internal/recheader"
)

// The hook is also a franz-go producer hook.
var (
	_ kgo.HookProduceRecordBuffered   = (*Hook)(nil)
	_ kgo.HookProduceRecordUnbuffered = (*Hook)(nil)
)

var (
	send         = []attribute.KeyValue{keyOperationName.String("send"), keyOperationType.String("send")}
	producerKind = trace.WithSpanKind(trace.SpanKindProducer)
)

// sendKey is the context key of a record's "send" span, in the record's Context while kgo
// holds the record.
type sendKey struct{ h *Hook }

// sending is a produced record's span and the Context the record had before.
type sending struct {
	span   trace.Span
	parent context.Context
}

// OnProduceRecordBuffered implements kgo.HookProduceRecordBuffered: a span of kind producer
// named "send TOPIC", the child of the span in the record's Context (which kgo sets to the
// context given to Produce when the record has none), and the propagator's headers written
// into the record (traceparent and tracestate for W3C Trace Context), replacing any headers
// of those names the record already has. The record's Context carries the span until kgo
// acknowledges the record or fails it.
func (h *Hook) OnProduceRecordBuffered(r *kgo.Record) {
	parent := r.Context
	if parent == nil {
		parent = context.Background()
	}
	sparent := h.parent(parent)
	attrs := make([]attribute.KeyValue, 0, 6)
	attrs = append(attrs, systemKafka, keyDestination.String(r.Topic), keyBodySize.Int(len(r.Value)))
	if r.Value == nil {
		attrs = append(attrs, tombstone)
	}
	attrs = append(attrs, send...)
	ctx, span := h.tracer.Start(sparent, "send "+r.Topic, producerKind, trace.WithAttributes(attrs...))
	c := &recordCarrier{r: r}
	if len(r.Headers) > 0 {
		// A header the propagator may write but does not this time (tracestate, baggage)
		// would otherwise pair a stale value with the new traceparent.
		for _, f := range h.prop.Fields() {
			c.remove(f)
		}
	}
	h.prop.Inject(ctx, c)
	r.Context = context.WithValue(ctx, sendKey{h}, &sending{span: span, parent: parent})
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered: the record's "send"
// span gets the partition and, once acknowledged, the offset, or the error with status
// Error, and ends; the record's Context is given back the value it had before
// OnProduceRecordBuffered, so that a record produced again gets a span of its own.
func (h *Hook) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if r.Context == nil {
		return
	}
	s, ok := r.Context.Value(sendKey{h}).(*sending)
	if !ok {
		return
	}
	r.Context = s.parent
	span := s.span
	if span.IsRecording() {
		if err != nil {
			span.RecordError(err)
			span.SetStatus(codes.Error, err.Error())
			span.SetAttributes(keyErrorType.String(fmt.Sprintf("%T", err)))
		} else {
			span.SetAttributes(keyPartitionID.String(strconv.Itoa(int(r.Partition))), keyKafkaOffset.Int64(r.Offset))
		}
	}
	span.End()
}

// recordCarrier writes a propagator's fields into a record's headers. The first change copies
// the headers, which the caller may share between records; a header of the same name (compared
// without regard to case) is replaced, and any further ones removed.
type recordCarrier struct {
	r      *kgo.Record
	copied bool
}

func (c *recordCarrier) Get(key string) string {
	for _, h := range c.r.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	for _, h := range c.r.Headers {
		if strings.EqualFold(h.Key, key) {
			return string(h.Value)
		}
	}
	return ""
}

func (c *recordCarrier) Set(key, value string) {
	c.own()
	c.r.Headers = recheader.Set(c.r.Headers, key, value)
}

// own copies the record's headers the first time they are written.
func (c *recordCarrier) own() {
	if !c.copied {
		hs := make([]kgo.RecordHeader, len(c.r.Headers), len(c.r.Headers)+2)
		copy(hs, c.r.Headers)
		c.r.Headers, c.copied = hs, true
	}
}

// remove removes the headers named key, compared without regard to case.
func (c *recordCarrier) remove(key string) {
	i := slices.IndexFunc(c.r.Headers, func(h kgo.RecordHeader) bool { return strings.EqualFold(h.Key, key) })
	if i < 0 {
		return
	}
	c.own()
	c.r.Headers = slices.DeleteFunc(c.r.Headers, func(h kgo.RecordHeader) bool { return strings.EqualFold(h.Key, key) })
}

func (c *recordCarrier) Keys() []string {
	keys := make([]string, len(c.r.Headers))
	for i, h := range c.r.Headers {
		keys[i] = h.Key
	}
	return keys
}
