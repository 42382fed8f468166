// Package xraytrace records batch processing as AWS X-Ray subsegments through
// aws-xray-sdk-go: a [batch.Hook] that opens a subsegment for the batch and one for each group
// processed in order (a Kafka partition, an SQS FIFO message group, or a message of a standard
// queue), so that the handler's own subsegments and instrumented AWS calls nest under the
// group they belong to.
//
//	lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(xraytrace.New())))
//
// In Lambda with active tracing the subsegments join the invocation's trace: aws-lambda-go
// puts each invocation's trace header in its context, and the hook reads it from there, never
// from the process-wide _X_AMZN_TRACE_ID, which aws-lambda-go does not set when invocations
// run at once in one process (AWS_LAMBDA_MAX_CONCURRENCY > 1, Lambda Managed Instances;
// aws-lambda-go #602) and which could then only name another invocation's trace. The variable
// is read only when the context has no header at all (a handler called by something other
// than aws-lambda-go). Without a trace (no header, or an empty one), nothing is recorded and
// the hook costs a context lookup per batch and group.
//
// # Subsegments
//
// The batch is a subsegment named "kafka batch" or "sqs batch", annotated with records,
// groups, and the counts of the batch's summary line (batch.BatchResult): processed, failed,
// reported, filtered, sent_to_sink, replayed and not_recorded.
//
// A Kafka partition is a subsegment "partition TOPIC-N" annotated with topic, partition,
// records, first_offset and last_offset (strings: offsets exceed what an annotation number
// keeps exactly) and reported (its records in the response). An SQS FIFO message group is "group ID", and a message of a
// standard queue "message ID" (characters X-Ray does not allow in a name become "_"),
// annotated with queue, message_group_id or message_id, messages and reported. The error of each
// record that failed (its handler's last error, a panic, a decode error...) is added to its
// group's subsegment, which X-Ray then shows as a fault with the errors as its cause. Keys and payloads are never recorded.
//
// # Producing
//
// [ProducerHook] is the franz-go producer hook (kgo.HookProduceRecordBuffered): given to
// kgo.WithHooks, or to the producer package's WithClientOptions, it writes the header
// X-Amzn-Trace-Id ([TraceHeader]), "Root=TRACE_ID;Parent=ID;Sampled=1", into each record
// produced in a traced context (kgo sets the record's Context to the context given to Produce
// when it has none), in place of any it has: ID is the (sub)segment in the context (the
// partition's, when a batch handler produces), else the function's segment that the Lambda
// trace header names. It makes no subsegment per record (see
// ProducerHook.OnProduceRecordBuffered). A function that consumes and produces uses both:
//
//	cl, err := producer.NewClient(producer.WithClientOptions(kgo.WithHooks(xraytrace.NewProducerHook())))
//	...
//	lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(xraytrace.New())))
//
// # Producer traces, and what X-Ray shows of them
//
// A Lambda function's trace is started by Lambda, before the function runs: its records cannot
// continue their producers' traces, as a child continues its parent's, and the Go SDK writes no
// span links (X-Ray links a producer's trace to its consumer's only for SQS messages, through
// their AWSTraceHeader attribute, not for Kafka records). So each partition's subsegment names
// the traces that produced its records, read from their X-Amzn-Trace-Id headers:
//   - annotation producer_trace_id, the trace of the partition's first record that has one
//     (annotations are indexed: the filter expression
//     annotation.producer_trace_id = "1-5759e988-bd862e3fe1be46a994272793" finds the consumer's
//     traces from the producer's trace ID), and producer_traces, how many distinct traces;
//   - metadata producer_traces, a list of the first 20 distinct traces with trace_id,
//     parent_id (the producer's segment or subsegment), records, first_offset and last_offset,
//     shown in the console's subsegment details but not searchable;
//   - annotation producer_trace_headers_invalid, the number of records whose header is not a
//     valid X-Ray trace header, when there are.
//
// X-Ray therefore shows the consumer's trace with the producer's trace ID on each partition,
// and finds one from the other by search; it does not draw an edge between the two traces on
// the trace map, nor show them as one timeline. For that, trace with OpenTelemetry (package
// oteltrace), whose record spans link to their producers' spans, or with its
// WithProducerParent continue them.
//
// # What importing this package does
//
// Package batch links no tracing SDK; importing this package links aws-xray-sdk-go and,
// through it, gRPC, fasthttp and golang.org/x/net/trace (about 5 MB on a linux/arm64 function,
// see the table in docs/performance.md#tracing). It also links franz-go's Kafka client (about
// 3 MB more), even in a function that never produces: the hook's producer methods name kgo's
// record type, and the SDK's dependencies use reflection in a way (text/template calls
// reflect's Method) that makes the Go linker keep every exported method of the hook, and from
// the record type, the client. With them comes their package initialisation, which runs
// whether or not the hook is used:
//   - a malformed AWS_XRAY_DAEMON_ADDRESS makes the function panic at start-up, before main
//     (the SDK parses it while initialising its package);
//   - golang.org/x/net/trace registers /debug/requests and /debug/events on
//     http.DefaultServeMux, which a function that serves that mux would expose;
//   - in Lambda (LAMBDA_TASK_ROOT set) the SDK creates /tmp/.aws-xray/initialized.
//
// The OpenTelemetry adapter, package oteltrace, does none of this, and links no Kafka client
// unless the function makes one.
package xraytrace

import (
	"context"
	"strconv"
	"strings"
	"unicode"

	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/invocation"
)

// Hook is the X-Ray tracing hook. It implements batch.BatchHook, batch.GroupHook and
// batch.FailureHook (to add failed records' errors to their group), and is safe for
// concurrent use. Producing has its own hook, [ProducerHook].
type Hook struct{}

// New returns the X-Ray tracing hook, to pass to batch.WithHooks. It has no options: the
// daemon's address, sampling and the rest are the SDK's (xray.Configure and the AWS_XRAY_*
// environment variables).
func New() *Hook { return &Hook{} }

type (
	batchKey struct{}
	groupKey struct{}
)

// OnBatchStart implements batch.BatchHook: a subsegment "kafka batch" or "sqs batch".
func (h *Hook) OnBatchStart(ctx context.Context, b *batch.BatchInfo) context.Context {
	return begin(ctx, batchKey{}, b.Source+" batch")
}

// OnBatchEnd implements batch.BatchHook: the batch's counts as annotations.
func (h *Hook) OnBatchEnd(ctx context.Context, b *batch.BatchInfo, r *batch.BatchResult) {
	seg := own(ctx, batchKey{})
	if seg == nil {
		return
	}
	_ = seg.AddAnnotation("records", b.Records)
	_ = seg.AddAnnotation("groups", b.Groups)
	_ = seg.AddAnnotation("processed", r.Processed)
	_ = seg.AddAnnotation("failed", r.Failed)
	_ = seg.AddAnnotation("reported", r.Reported)
	_ = seg.AddAnnotation("filtered", r.Filtered)
	_ = seg.AddAnnotation("sent_to_sink", r.SentToSink)
	_ = seg.AddAnnotation("replayed", r.Replayed)
	_ = seg.AddAnnotation("not_recorded", r.NotRecorded)
	seg.Close(nil)
}

// OnGroupStart implements batch.GroupHook: a subsegment "partition TOPIC-N", "group ID" (an
// SQS FIFO message group) or "message ID" (a message of a standard queue).
func (h *Hook) OnGroupStart(ctx context.Context, g *batch.GroupInfo) context.Context {
	name := "partition " + g.ID
	if g.Partition == nil {
		name = "message " + g.ID
		if len(g.Messages) > 0 && strings.HasSuffix(g.Messages[0].EventSourceARN, ".fifo") {
			name = "group " + g.ID
		}
	}
	return begin(ctx, groupKey{}, segmentName(name))
}

// OnGroupEnd implements batch.GroupHook: the group's annotations.
func (h *Hook) OnGroupEnd(ctx context.Context, g *batch.GroupInfo, reported int) {
	seg := own(ctx, groupKey{})
	if seg == nil {
		return
	}
	if p := g.Partition; p != nil {
		_ = seg.AddAnnotation("topic", p.Topic)
		_ = seg.AddAnnotation("partition", int(p.Number))
		_ = seg.AddAnnotation("records", len(p.Records))
		if n := len(p.Records); n > 0 {
			_ = seg.AddAnnotation("first_offset", strconv.FormatInt(p.Records[0].Offset, 10))
			_ = seg.AddAnnotation("last_offset", strconv.FormatInt(p.Records[n-1].Offset, 10))
		}
		if traces, distinct, invalid := producerTraces(p.Records); distinct > 0 || invalid > 0 {
			if distinct > 0 {
				_ = seg.AddAnnotation("producer_trace_id", traces[0].TraceID)
				_ = seg.AddAnnotation("producer_traces", distinct)
				_ = seg.AddMetadata("producer_traces", traces)
			}
			if invalid > 0 {
				_ = seg.AddAnnotation("producer_trace_headers_invalid", invalid)
			}
		}
	} else if len(g.Messages) > 0 {
		arn := g.Messages[0].EventSourceARN
		_ = seg.AddAnnotation("queue", arn[strings.LastIndexByte(arn, ':')+1:])
		if strings.HasSuffix(arn, ".fifo") {
			_ = seg.AddAnnotation("message_group_id", g.ID)
		} else {
			_ = seg.AddAnnotation("message_id", g.ID)
		}
		_ = seg.AddAnnotation("messages", len(g.Messages))
	}
	_ = seg.AddAnnotation("reported", reported)
	seg.Close(nil)
}

// OnFailure implements batch.FailureHook: the error of a failed record (after its last
// attempt, or before its handler ran: a decode error, the filter's error, the deadline) is
// added to its group's subsegment.
func (h *Hook) OnFailure(ctx context.Context, f *batch.Failure) {
	if seg := own(ctx, groupKey{}); seg != nil {
		_ = seg.AddError(f.Err)
	}
}

// begin opens a subsegment, or does nothing when there is no trace in ctx.
func begin(ctx context.Context, key any, name string) context.Context {
	sctx := ctx
	if xray.GetSegment(ctx) == nil {
		h, inCtx := ctx.Value(xray.LambdaTraceHeaderKey).(string)
		if !inCtx {
			h = invocation.TraceHeader(ctx) // no header in ctx: the environment's, if any
		}
		if h == "" {
			return ctx
		}
		if !inCtx { // the SDK reads the header only from the context
			//lint:ignore SA1029 the key is the SDK's own (aws-lambda-go's string key)
			sctx = context.WithValue(ctx, xray.LambdaTraceHeaderKey, h)
		}
	}
	sctx, seg := xray.BeginSubsegment(sctx, name)
	if seg == nil {
		return ctx
	}
	return context.WithValue(sctx, key, seg)
}

// own returns the subsegment this hook opened under key, if any.
func own(ctx context.Context, key any) *xray.Segment {
	seg, _ := ctx.Value(key).(*xray.Segment)
	return seg
}

// segmentName replaces the characters X-Ray does not allow in a (sub)segment name: it keeps
// letters, digits, white space and _ . : / % & # = + \ - @.
func segmentName(s string) string {
	return strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.IsSpace(r) || strings.ContainsRune(`_.:/%&#=+\-@`, r) {
			return r
		}
		return '_'
	}, s)
}
