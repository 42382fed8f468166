package batch

import (
	"context"
	"strconv"

	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// WithTracing records the batch and each partition (or FIFO message group) as X-Ray
// subsegments, through aws-xray-sdk-go, and passes the partition's trace context to the
// handler, so that the handler's own subsegments and instrumented AWS calls nest under it.
// Partition subsegments are annotated with the topic, partition, first and last offset, and
// the count of failed records. In Lambda with active tracing the subsegments join the
// function's trace; without a trace in the context, nothing is recorded.
func WithTracing() Option { return func(c *config) { c.tracing = true } }

// span begins a subsegment, or does nothing when tracing is off or there is no trace.
func (c *config) span(ctx context.Context, name string) (context.Context, *xray.Segment) {
	if !c.tracing || ctx.Value(xray.LambdaTraceHeaderKey) == nil && xray.GetSegment(ctx) == nil {
		return ctx, nil
	}
	sctx, seg := xray.BeginSubsegment(ctx, name)
	if seg == nil {
		return ctx, nil
	}
	return sctx, seg
}

func annotatePartition(seg *xray.Segment, p *kafkaevent.Partition, failed int) {
	if seg == nil {
		return
	}
	_ = seg.AddAnnotation("topic", p.Topic)
	_ = seg.AddAnnotation("partition", int(p.Number))
	if n := len(p.Records); n > 0 {
		_ = seg.AddAnnotation("first_offset", strconv.FormatInt(p.Records[0].Offset, 10))
		_ = seg.AddAnnotation("last_offset", strconv.FormatInt(p.Records[n-1].Offset, 10))
	}
	_ = seg.AddAnnotation("failed", failed)
}

func closeSpan(seg *xray.Segment) {
	if seg != nil {
		seg.Close(nil)
	}
}
