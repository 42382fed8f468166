// Package oteltrace records batch processing as OpenTelemetry spans: a [batch.Hook] that
// opens a span for the batch, one for each group processed in order (a Kafka partition or an
// SQS FIFO message group) and one for each record the handler is given, named and attributed
// after the OpenTelemetry semantic conventions for messaging (Kafka and Amazon SQS, semantic
// conventions 1.43.0).
//
// It depends on the OpenTelemetry API only (go.opentelemetry.io/otel and
// go.opentelemetry.io/otel/trace): the function brings its own SDK, exporter and
// TracerProvider, and passes it with [WithTracerProvider] or installs it globally with
// otel.SetTracerProvider before the first batch.
//
//	tp := sdktrace.NewTracerProvider(...) // the SDK and exporter of your choice
//	h := batch.KafkaHandler(handle, batch.WithHooks(oteltrace.New(oteltrace.WithTracerProvider(tp))))
//	lambda.Start(h)
//
// # Spans
//
// A batch is one span of kind consumer named "process", with messaging.system ("kafka" or
// "aws_sqs"), messaging.operation.type and messaging.operation.name ("process") and
// messaging.batch.message_count. Its status is Error when any record failed; the counts of
// the batch's summary line (batch.BatchResult) are attributes kafkalambda.batch.processed,
// .failed, .reported, .filtered, .sent_to_sink, .replayed and .not_recorded.
//
// Each Kafka partition is a span of kind internal named "partition TOPIC", with
// messaging.destination.name and messaging.destination.partition.id; each SQS FIFO message
// group is a span named "message group QUEUE" with messaging.destination.name and
// kafkalambda.sqs.message_group_id. Both carry messaging.batch.message_count and are Error
// when one of their records failed. A message of a standard queue is its own group; it has no
// group span, its record span stands for it.
//
// Each record the handler is given is a span of kind consumer named "process TOPIC" (or
// "process QUEUE"), the parent of the handler's context, when its group's span is recording
// (when it is not, because no SDK is installed or the batch was not sampled, the record's
// span would not be sampled either under the SDK's default parent-based sampler, and is not
// made: the handler's context carries the group's span), with messaging.destination.name,
// messaging.message.body.size and, for Kafka, messaging.destination.partition.id,
// messaging.kafka.offset and messaging.kafka.message.tombstone (for a record without a
// value), and for SQS messaging.message.id. A failed record's span has status Error, the
// error recorded as an exception event, and error.type (the error's Go type). Records that
// are filtered out, skipped after an earlier failure of their partition or group, or fail
// before their handler runs (a decode error, the filter's error, the deadline) have no span
// of their own; the last are exception events on their group's span (the batch's for a
// standard queue), with the record's partition and offset or message ID. Keys and payloads
// are never recorded.
//
// # The Lambda trace
//
// By default the batch's span is the child of the span in the handler's context, if any,
// else the root of a trace of its own. [WithLambdaParent] makes the trace Lambda started for
// the invocation (its X-Ray trace header, which aws-lambda-go puts in each invocation's
// context) the parent instead when the context has no span, so that the spans join the
// function's trace in X-Ray, each invocation its own even when several run at once in one
// process (Lambda Managed Instances). The trace ID is never read from _X_AMZN_TRACE_ID while
// the context has a header: under concurrency aws-lambda-go does not set it (aws-lambda-go
// #602).
//
// # Producing
//
// The hook is also a franz-go producer hook (kgo.HookProduceRecordBuffered and
// kgo.HookProduceRecordUnbuffered): given to kgo.WithHooks, or to the producer package's
// WithClientOptions, it makes a span of kind producer named "send TOPIC" for each record
// produced, the child of the span in the record's Context (kgo sets it to the context given to
// Produce when the record has none), and writes that span's context into the record's headers
// through the propagator: traceparent and tracestate for W3C Trace Context, X-Amzn-Trace-Id for
// an X-Ray propagator. Headers of the names the propagator writes (its Fields) that the record
// already has, compared without regard to case, are removed first, so that they are replaced,
// never duplicated, and a stale tracestate does not stay beside a new traceparent; the
// record's header slice is copied before it is changed, so a slice shared between records is
// left as it was. The span has messaging.system, messaging.destination.name,
// messaging.operation.type and messaging.operation.name ("send"), messaging.message.body.size
// and messaging.kafka.message.tombstone; it ends when kgo acknowledges the record, with
// messaging.destination.partition.id and messaging.kafka.offset, or fails it, with the error
// and status Error. The same hook value serves batch.WithHooks and kgo.WithHooks:
//
//	hook := oteltrace.New()
//	cl, err := producer.NewClient(producer.WithClientOptions(kgo.WithHooks(hook)))
//	...
//	lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(hook)))
//
// Without an SDK the span is the API's no-op one, and the headers still carry the caller's
// span context, if it has one.
//
// # Producer trace context
//
// A producer that traces writes its span context into the Kafka record's headers or the SQS
// message's attributes (traceparent and tracestate for W3C Trace Context). Each record span
// reads them through the configured propagator ([WithPropagator]; by default
// otel.GetTextMapPropagator, which propagates nothing until the function installs one, for
// example propagation.TraceContext{}). By default the record span stays in the function's
// trace, a child of its group, and links to the producer's span, as the messaging conventions
// recommend for records delivered in batches; [WithProducerParent] makes the producer's span
// the parent instead, so that each record continues its producer's trace. Baggage the
// propagator extracts is in the handler's context either way. On SQS the AWSTraceHeader
// system attribute is read under the key X-Amzn-Trace-Id, where an X-Ray propagator looks for
// it.
package oteltrace

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/aws/aws-lambda-go/events"
	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/baggage"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// ScopeName is the instrumentation scope of the tracer this package uses.
const ScopeName = "github.com/kafkalambda/toolkit/oteltrace"

// schemaURL is the schema of the semantic conventions the attributes follow.
const schemaURL = "https://opentelemetry.io/schemas/1.43.0"

// Attribute keys of the semantic conventions (1.43.0), declared here rather than imported
// from a semconv package, whose initialised variables would all be linked into the function.
const (
	keySystem         = attribute.Key("messaging.system")
	keyOperationName  = attribute.Key("messaging.operation.name")
	keyOperationType  = attribute.Key("messaging.operation.type")
	keyBatchCount     = attribute.Key("messaging.batch.message_count")
	keyDestination    = attribute.Key("messaging.destination.name")
	keyPartitionID    = attribute.Key("messaging.destination.partition.id")
	keyKafkaOffset    = attribute.Key("messaging.kafka.offset")
	keyKafkaTombstone = attribute.Key("messaging.kafka.message.tombstone")
	keyMessageID      = attribute.Key("messaging.message.id")
	keyBodySize       = attribute.Key("messaging.message.body.size")
	keyErrorType      = attribute.Key("error.type")

	keyMessageGroupID = attribute.Key("kafkalambda.sqs.message_group_id")
	keyProcessed      = attribute.Key("kafkalambda.batch.processed")
	keyFailed         = attribute.Key("kafkalambda.batch.failed")
	keyReported       = attribute.Key("kafkalambda.batch.reported")
	keyNotRecorded    = attribute.Key("kafkalambda.batch.not_recorded")
	keyFiltered       = attribute.Key("kafkalambda.batch.filtered")
	keySentToSink     = attribute.Key("kafkalambda.batch.sent_to_sink")
	keyReplayed       = attribute.Key("kafkalambda.batch.replayed")
)

var (
	process      = []attribute.KeyValue{keyOperationName.String("process"), keyOperationType.String("process")}
	systemKafka  = keySystem.String("kafka")
	systemSQS    = keySystem.String("aws_sqs")
	tombstone    = keyKafkaTombstone.Bool(true)
	consumerKind = trace.WithSpanKind(trace.SpanKindConsumer)
	internalKind = trace.WithSpanKind(trace.SpanKindInternal)
)

// Hook is the OpenTelemetry tracing hook. It implements batch.BatchHook, batch.GroupHook,
// batch.RecordHook and batch.FailureHook, and kgo.HookProduceRecordBuffered and
// kgo.HookProduceRecordUnbuffered (to trace produced records; see Producing), and is safe for
// concurrent use.
type Hook struct {
	tracer         trace.Tracer
	prop           propagation.TextMapPropagator
	producerParent bool
	lambdaParent   bool
}

// Option configures a [Hook].
type Option func(*Hook)

// WithTracerProvider sets the TracerProvider the spans come from. By default it is
// otel.GetTracerProvider(), the global one: spans go to the provider that
// otel.SetTracerProvider installs, even later, and nowhere until then.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return func(h *Hook) { h.tracer = tp.Tracer(ScopeName, trace.WithSchemaURL(schemaURL)) }
}

// WithPropagator sets the propagator that reads a producer's trace context from each Kafka
// record's headers or SQS message's attributes. By default it is
// otel.GetTextMapPropagator(), the global one, which reads nothing until
// otel.SetTextMapPropagator installs one.
func WithPropagator(p propagation.TextMapPropagator) Option {
	return func(h *Hook) { h.prop = p }
}

// WithProducerParent makes the span context a producer wrote into a record the parent of the
// record's span, which then links to its group's span; a record without one stays a child of
// its group. By default the record span is a child of its group and links to the producer's
// span.
func WithProducerParent() Option {
	return func(h *Hook) { h.producerParent = true }
}

// WithLambdaParent makes the trace Lambda started for the invocation the parent of the spans
// the hook starts in a context that has no span: the batch's span, and a produced record's
// "send" span outside a batch. Its trace ID, parent span ID and sampling decision are read
// from the invocation's X-Ray trace header, which aws-lambda-go puts in the handler's context
// ("Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1" is trace
// 5759e988bd862e3fe1be46a994272793, span 53995c3f42cd8ad8, sampled), so that the spans join the
// function's X-Ray trace, each invocation its own, even when several run at once in one process
// (Lambda Managed Instances), where aws-lambda-go does not set _X_AMZN_TRACE_ID
// (aws-lambda-go #602). The variable is read only when the context has no trace header at all
// (a handler called by something other than aws-lambda-go). With the SDK's default
// parent-based sampler the spans are then sampled as Lambda sampled the invocation (active
// tracing). A span already in the context (a wrapper of the function's own) stays the parent.
// By default a batch without a span in its context starts a trace of its own.
//
// The function wrapper of opentelemetry-go-contrib's otellambda with its xrayconfig reads the
// trace header from _X_AMZN_TRACE_ID, which under concurrency is unset: there, use this option
// instead of that wrapper's parent.
func WithLambdaParent() Option {
	return func(h *Hook) { h.lambdaParent = true }
}

// parent returns ctx, or, with WithLambdaParent and no span in ctx, ctx with the invocation's
// Lambda trace as its remote parent.
func (h *Hook) parent(ctx context.Context) context.Context {
	if !h.lambdaParent || trace.SpanContextFromContext(ctx).IsValid() {
		return ctx
	}
	if sc, ok := lambdaSpanContext(invocation.TraceHeader(ctx)); ok {
		return trace.ContextWithRemoteSpanContext(ctx, sc)
	}
	return ctx
}

// lambdaSpanContext reads an X-Ray trace header as a remote span context: Root
// "1-EEEEEEEE-UUUUUUUUUUUUUUUUUUUUUUUU" is the trace ID EEEEEEEEUUUUUUUUUUUUUUUUUUUUUUUU (as
// AWS's X-Ray propagators for OpenTelemetry read it), Parent the span ID, Sampled=1 the
// sampled flag. A header without a valid Root and Parent gives none.
func lambdaSpanContext(header string) (trace.SpanContext, bool) {
	var root, parent string
	sampled := false
	for part := range strings.SplitSeq(header, ";") {
		k, v, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = v
		case "Parent":
			parent = v
		case "Sampled":
			sampled = v == "1"
		}
	}
	if len(root) != 35 || root[:2] != "1-" || root[10] != '-' {
		return trace.SpanContext{}, false
	}
	tid, err := trace.TraceIDFromHex(root[2:10] + root[11:])
	if err != nil {
		return trace.SpanContext{}, false
	}
	sid, err := trace.SpanIDFromHex(parent)
	if err != nil {
		return trace.SpanContext{}, false
	}
	var flags trace.TraceFlags
	if sampled {
		flags = trace.FlagsSampled
	}
	return trace.NewSpanContext(trace.SpanContextConfig{TraceID: tid, SpanID: sid, TraceFlags: flags, Remote: true}), true
}

// New returns the OpenTelemetry tracing hook, to pass to batch.WithHooks, kgo.WithHooks, or both.
func New(opts ...Option) *Hook {
	h := &Hook{}
	for _, o := range opts {
		o(h)
	}
	if h.tracer == nil {
		WithTracerProvider(otel.GetTracerProvider())(h)
	}
	if h.prop == nil {
		h.prop = otel.GetTextMapPropagator()
	}
	return h
}

// Context keys of the spans this hook opened, so that each End finds its own span even when
// other hooks wrap the context in between.
type (
	batchKey  struct{ h *Hook }
	groupKey  struct{ h *Hook }
	recordKey struct{ h *Hook }
)

func (h *Hook) start(ctx context.Context, key any, name string, opts ...trace.SpanStartOption) context.Context {
	ctx, span := h.tracer.Start(ctx, name, opts...)
	return context.WithValue(ctx, key, span)
}

func own(ctx context.Context, key any) trace.Span {
	switch s := ctx.Value(key).(type) {
	case trace.Span:
		return s
	case *group:
		return s.span
	}
	return nil
}

// group is what a group's context holds: its span, and for a Kafka partition the name of its
// records' spans, made once.
type group struct {
	span              trace.Span
	topic, recordName string
}

func system(source string) attribute.KeyValue {
	if source == "sqs" {
		return systemSQS
	}
	return systemKafka
}

// OnBatchStart implements batch.BatchHook: the batch's "process" span.
func (h *Hook) OnBatchStart(ctx context.Context, b *batch.BatchInfo) context.Context {
	attrs := append([]attribute.KeyValue{system(b.Source), keyBatchCount.Int(b.Records)}, process...)
	return h.start(h.parent(ctx), batchKey{h}, "process", consumerKind, trace.WithAttributes(attrs...))
}

// OnBatchEnd implements batch.BatchHook: the batch's counts, and status Error when a record
// failed.
func (h *Hook) OnBatchEnd(ctx context.Context, b *batch.BatchInfo, r *batch.BatchResult) {
	span := own(ctx, batchKey{h})
	if span == nil {
		return
	}
	if span.IsRecording() {
		span.SetAttributes(keyProcessed.Int(r.Processed), keyFailed.Int(r.Failed), keyFiltered.Int(r.Filtered),
			keySentToSink.Int(r.SentToSink), keyReplayed.Int(r.Replayed), keyReported.Int(r.Reported),
			keyNotRecorded.Int(r.NotRecorded))
		if r.Failed > 0 {
			span.SetStatus(codes.Error, fmt.Sprintf("%d of %d records failed", r.Failed, b.Records))
		}
	}
	span.End()
}

// OnGroupStart implements batch.GroupHook: a span for a Kafka partition or an SQS FIFO
// message group; none for a message of a standard queue.
func (h *Hook) OnGroupStart(ctx context.Context, g *batch.GroupInfo) context.Context {
	if p := g.Partition; p != nil {
		ctx, span := h.tracer.Start(ctx, "partition "+p.Topic, internalKind, trace.WithAttributes(
			systemKafka, keyDestination.String(p.Topic), keyPartitionID.String(strconv.Itoa(int(p.Number))),
			keyBatchCount.Int(len(p.Records))))
		return context.WithValue(ctx, groupKey{h}, &group{span: span, topic: p.Topic, recordName: "process " + p.Topic})
	}
	if len(g.Messages) == 0 || !strings.HasSuffix(g.Messages[0].EventSourceARN, ".fifo") {
		return ctx
	}
	queue := queueName(g.Messages[0].EventSourceARN)
	return h.start(ctx, groupKey{h}, "message group "+queue, internalKind, trace.WithAttributes(
		systemSQS, keyDestination.String(queue), keyMessageGroupID.String(g.ID), keyBatchCount.Int(len(g.Messages))))
}

// OnGroupEnd implements batch.GroupHook: status Error when the group has records in the
// response (a failed record, and those after it).
func (h *Hook) OnGroupEnd(ctx context.Context, g *batch.GroupInfo, reported int) {
	span := own(ctx, groupKey{h})
	if span == nil {
		return
	}
	if reported > 0 && span.IsRecording() {
		span.SetStatus(codes.Error, fmt.Sprintf("%d records failed or were skipped after a failure", reported))
	}
	span.End()
}

// OnRecordStart implements batch.RecordHook: the record's "process" span, linked to (or, with
// WithProducerParent, continuing) the trace context its producer wrote.
func (h *Hook) OnRecordStart(ctx context.Context, it *batch.Item) context.Context {
	carrier := carrierOf(it)
	if !h.producerParent && !h.recording(ctx) {
		// The record's span would not be sampled either: keep only the baggage.
		if carrier != nil {
			if bag := baggage.FromContext(h.prop.Extract(context.Background(), carrier)); bag.Len() > 0 {
				ctx = baggage.ContextWithBaggage(ctx, bag)
			}
		}
		return ctx
	}
	var (
		name  string
		attrs []attribute.KeyValue
	)
	switch {
	case it.Kafka != nil:
		r := it.Kafka
		if g, ok := ctx.Value(groupKey{h}).(*group); ok && g.topic == r.Topic {
			name = g.recordName
		} else {
			name = "process " + r.Topic
		}
		attrs = make([]attribute.KeyValue, 0, 8)
		attrs = append(attrs, systemKafka, keyDestination.String(r.Topic),
			keyPartitionID.String(strconv.Itoa(int(r.Partition))), keyKafkaOffset.Int64(r.Offset),
			keyBodySize.Int(len(r.Value)))
		if r.Value == nil {
			attrs = append(attrs, tombstone)
		}
	case it.SQS != nil:
		m := it.SQS
		queue := queueName(m.EventSourceARN)
		name = "process " + queue
		attrs = make([]attribute.KeyValue, 0, 7)
		attrs = append(attrs, systemSQS, keyDestination.String(queue), keyMessageID.String(m.MessageId),
			keyBodySize.Int(len(m.Body)))
	default:
		return ctx
	}
	attrs = append(attrs, process...)
	opts := make([]trace.SpanStartOption, 2, 3)
	opts[0], opts[1] = consumerKind, trace.WithAttributes(attrs...)

	parent := ctx
	if carrier != nil {
		pctx := h.prop.Extract(context.Background(), carrier)
		if bag := baggage.FromContext(pctx); bag.Len() > 0 {
			ctx = baggage.ContextWithBaggage(ctx, bag)
			parent = ctx
		}
		if sc := trace.SpanContextFromContext(pctx); sc.IsValid() {
			if h.producerParent {
				opts = append(opts, trace.WithLinks(trace.LinkFromContext(ctx)))
				parent = trace.ContextWithRemoteSpanContext(ctx, sc)
			} else {
				opts = append(opts, trace.WithLinks(trace.Link{SpanContext: sc}))
			}
		}
	}
	rctx, span := h.tracer.Start(parent, name, opts...)
	return context.WithValue(rctx, recordKey{h}, span)
}

// carrierOf returns the carrier of a record's trace context, or nil when it carries none.
func carrierOf(it *batch.Item) propagation.TextMapCarrier {
	switch {
	case it.Kafka != nil && len(it.Kafka.Headers) > 0:
		return (*kafkaCarrier)(it.Kafka)
	case it.SQS != nil && (len(it.SQS.MessageAttributes) > 0 || it.SQS.Attributes["AWSTraceHeader"] != ""):
		return (*sqsCarrier)(it.SQS)
	}
	return nil
}

// recording reports whether the span this hook opened around ctx (the group's, else the
// batch's) is recording.
func (h *Hook) recording(ctx context.Context) bool {
	span := own(ctx, groupKey{h})
	if span == nil {
		span = own(ctx, batchKey{h})
	}
	return span != nil && span.IsRecording()
}

// OnRecordEnd implements batch.RecordHook: a failed record's span records the error and has
// status Error.
func (h *Hook) OnRecordEnd(ctx context.Context, it *batch.Item, err error) {
	span := own(ctx, recordKey{h})
	if span == nil {
		return
	}
	if err != nil && span.IsRecording() {
		span.RecordError(err)
		span.SetStatus(codes.Error, err.Error())
		span.SetAttributes(keyErrorType.String(fmt.Sprintf("%T", err)))
	}
	span.End()
}

// OnFailure implements batch.FailureHook: a record that failed before its handler ran (a
// decode error, the filter's error, the deadline), and so has no span of its own, is an
// exception event on its group's span, or on the batch's for a standard queue.
func (h *Hook) OnFailure(ctx context.Context, f *batch.Failure) {
	if f.Attempts > 0 {
		return // the record's own span has the error
	}
	span := own(ctx, groupKey{h})
	if span == nil {
		span = own(ctx, batchKey{h})
	}
	if span == nil || !span.IsRecording() {
		return
	}
	var attrs []attribute.KeyValue
	switch {
	case f.Kafka != nil:
		attrs = []attribute.KeyValue{keyPartitionID.String(strconv.Itoa(int(f.Kafka.Partition))), keyKafkaOffset.Int64(f.Kafka.Offset)}
	case f.SQS != nil:
		attrs = []attribute.KeyValue{keyMessageID.String(f.SQS.MessageId)}
	}
	span.RecordError(f.Err, trace.WithAttributes(append(attrs, keyErrorType.String(fmt.Sprintf("%T", f.Err)))...))
}

// queueName is the last field of an SQS queue ARN (arn:aws:sqs:REGION:ACCOUNT:NAME).
func queueName(arn string) string {
	return arn[strings.LastIndexByte(arn, ':')+1:]
}

// kafkaCarrier reads a record's headers for a propagator. Header names are compared exactly
// first, then without regard to case; the first header of a name wins.
type kafkaCarrier kafkaevent.Record

func (c *kafkaCarrier) Get(key string) string {
	for _, h := range c.Headers {
		if h.Key == key {
			return string(h.Value)
		}
	}
	for _, h := range c.Headers {
		if strings.EqualFold(h.Key, key) {
			return string(h.Value)
		}
	}
	return ""
}

// Set does nothing: the record is read, never written.
func (c *kafkaCarrier) Set(key, value string) {}

func (c *kafkaCarrier) Keys() []string {
	keys := make([]string, len(c.Headers))
	for i, h := range c.Headers {
		keys[i] = h.Key
	}
	return keys
}

// xrayHeader is the key under which X-Ray propagators look for a trace header; on SQS it
// comes from the AWSTraceHeader system attribute.
const xrayHeader = "X-Amzn-Trace-Id"

// sqsCarrier reads a message's string and number attributes for a propagator, names compared
// exactly first, then without regard to case.
type sqsCarrier events.SQSMessage

func (c *sqsCarrier) Get(key string) string {
	if a, ok := c.MessageAttributes[key]; ok {
		return attrString(a)
	}
	for k, a := range c.MessageAttributes {
		if strings.EqualFold(k, key) {
			return attrString(a)
		}
	}
	if strings.EqualFold(key, xrayHeader) {
		return c.Attributes["AWSTraceHeader"]
	}
	return ""
}

func attrString(a events.SQSMessageAttribute) string {
	if a.StringValue == nil {
		return ""
	}
	return *a.StringValue
}

// Set does nothing: the message is read, never written.
func (c *sqsCarrier) Set(key, value string) {}

func (c *sqsCarrier) Keys() []string {
	keys := make([]string, 0, len(c.MessageAttributes)+1)
	for k := range c.MessageAttributes {
		keys = append(keys, k)
	}
	if _, ok := c.Attributes["AWSTraceHeader"]; ok {
		keys = append(keys, xrayHeader)
	}
	return keys
}
