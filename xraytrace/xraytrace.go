// Package xraytrace records batch processing as AWS X-Ray subsegments through
// aws-xray-sdk-go: a [batch.Hook] that opens a subsegment for the batch and one for each
// partition (or SQS message group), so that the handler's own subsegments and instrumented
// AWS calls nest under the partition they belong to.
//
//	lambda.Start(batch.KafkaHandler(handle, batch.WithHooks(xraytrace.New())))
//
// In Lambda with active tracing the subsegments join the function's trace; without a trace in
// the context, nothing is recorded. Importing this package links aws-xray-sdk-go; package
// batch alone does not.
package xraytrace

import (
	"context"
	"strconv"

	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/kafkalambda/toolkit/batch"
)

// Hook is the X-Ray tracing hook. It implements batch.BatchHook and batch.GroupHook.
type Hook struct{}

// New returns the X-Ray tracing hook.
func New() *Hook { return &Hook{} }

type segKey struct{}

// OnBatchStart implements batch.BatchHook: a subsegment "kafka batch" or "sqs batch".
func (h *Hook) OnBatchStart(ctx context.Context, b *batch.BatchInfo) context.Context {
	return begin(ctx, b.Source+" batch")
}

// OnBatchEnd implements batch.BatchHook.
func (h *Hook) OnBatchEnd(ctx context.Context, b *batch.BatchInfo, r *batch.BatchResult) {
	if seg := own(ctx); seg != nil {
		_ = seg.AddAnnotation("records", b.Records)
		_ = seg.AddAnnotation("failed", r.Failed)
		seg.Close(nil)
	}
}

// OnGroupStart implements batch.GroupHook: a subsegment "partition topic-N" or
// "group ID".
func (h *Hook) OnGroupStart(ctx context.Context, g *batch.GroupInfo) context.Context {
	name := "group " + g.ID
	if g.Partition != nil {
		name = "partition " + g.ID
	}
	return begin(ctx, name)
}

// OnGroupEnd implements batch.GroupHook: the subsegment is annotated with the topic,
// partition, first and last offset, and the count of failed records.
func (h *Hook) OnGroupEnd(ctx context.Context, g *batch.GroupInfo, failed int) {
	seg := own(ctx)
	if seg == nil {
		return
	}
	if p := g.Partition; p != nil {
		_ = seg.AddAnnotation("topic", p.Topic)
		_ = seg.AddAnnotation("partition", int(p.Number))
		if n := len(p.Records); n > 0 {
			_ = seg.AddAnnotation("first_offset", strconv.FormatInt(p.Records[0].Offset, 10))
			_ = seg.AddAnnotation("last_offset", strconv.FormatInt(p.Records[n-1].Offset, 10))
		}
	} else {
		_ = seg.AddAnnotation("messages", len(g.Messages))
	}
	_ = seg.AddAnnotation("failed", failed)
	seg.Close(nil)
}

// begin opens a subsegment, or does nothing when there is no trace in ctx.
func begin(ctx context.Context, name string) context.Context {
	if ctx.Value(xray.LambdaTraceHeaderKey) == nil && xray.GetSegment(ctx) == nil {
		return ctx
	}
	sctx, seg := xray.BeginSubsegment(ctx, name)
	if seg == nil {
		return ctx
	}
	return context.WithValue(sctx, segKey{}, seg)
}

// own returns the subsegment this hook opened for ctx, if any.
func own(ctx context.Context) *xray.Segment {
	seg, _ := ctx.Value(segKey{}).(*xray.Segment)
	return seg
}
