package xraytrace

import (
	"context"
	"strconv"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-xray-sdk-go/v2/header"
	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/recheader"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

var _ kgo.HookProduceRecordBuffered = (*ProducerHook)(nil)

// ProducerHook is the X-Ray hook of a franz-go client: it writes the trace header into each
// record produced. It is a type of its own, apart from [Hook], so that a function that only
// consumes does not link it: the X-Ray SDK's dependencies make the linker keep every exported
// method of a hook that is linked, and through this one's kgo.Record, franz-go's whole client
// (3 MB on linux/arm64). It is safe for concurrent use.
type ProducerHook struct {
	lambda atomic.Pointer[lambdaHeader] // the last Lambda trace header produced under
}

// NewProducerHook returns the X-Ray producer hook, to pass to kgo.WithHooks (directly, or
// through the producer package's WithClientOptions). Like [New], it has no options.
func NewProducerHook() *ProducerHook { return &ProducerHook{} }

// TraceHeader is the name of the record header that carries the X-Ray trace header,
// "Root=TRACE_ID;Parent=SEGMENT_ID;Sampled=1", as HTTP requests and SQS messages
// (AWSTraceHeader) carry it.
const TraceHeader = "X-Amzn-Trace-Id"

// OnProduceRecordBuffered implements kgo.HookProduceRecordBuffered: when the record's Context
// (kgo sets it to the context given to Produce when the record has none) is traced, the header
// X-Amzn-Trace-Id is written into the record, in place of any header of that name (compared
// without regard to case) it already has: "Root=TRACE_ID;Parent=ID;Sampled=1" (or 0), where
// ID is the (sub)segment in the context, or, when there is none, the function's segment that
// the Lambda trace header names. The record's header slice is copied first, so a slice shared
// between records is left as it was. Without a trace, the record is left alone.
//
// No subsegment is made for the record: one per record, each sent to the daemon, would cost
// about ten times the producing itself (BenchmarkProduceTracing in package oteltrace). Wrap a
// Produce call in a subsegment of your own (xray.Capture) to see it on the timeline; the
// records then name that subsegment as their parent.
func (h *ProducerHook) OnProduceRecordBuffered(r *kgo.Record) {
	if r.Context == nil {
		return
	}
	v := h.downstreamHeader(r.Context)
	if v == "" {
		return
	}
	hs := make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+1)
	copy(hs, r.Headers)
	r.Headers = recheader.Set(hs, TraceHeader, v)
}

// lambdaHeader is a Lambda trace header and the header written for it.
type lambdaHeader struct{ in, out string }

// downstreamHeader returns the trace header of ctx's (sub)segment, or of the Lambda
// invocation's segment, for a downstream call; "" when ctx is not traced. The header written
// for the last Lambda trace header is kept, keyed by that header: an invocation produces its
// records under one, and invocations running at once each find their own (the cache is
// checked against the input, so they only replace each other's entry).
func (h *ProducerHook) downstreamHeader(ctx context.Context) string {
	if xray.SdkDisabled() {
		return ""
	}
	if seg := xray.GetSegment(ctx); seg != nil {
		if seg.ParentSegment == nil { // a segment of the disabled SDK
			return ""
		}
		return format(seg.DownstreamHeader())
	}
	s := invocation.TraceHeader(ctx) // the invocation's, from ctx: never another's
	if s == "" {
		return ""
	}
	if last := h.lambda.Load(); last != nil && last.in == s {
		return last.out
	}
	out := format(header.FromString(s))
	h.lambda.Store(&lambdaHeader{in: s, out: out})
	return out
}

// format writes Root, Parent and Sampled of a trace header; "" without a trace ID.
func format(h *header.Header) string {
	if h.TraceID == "" {
		return ""
	}
	v := "Root=" + h.TraceID
	if h.ParentID != "" {
		v += ";Parent=" + h.ParentID
	}
	if h.SamplingDecision != header.Unknown {
		v += ";" + string(h.SamplingDecision)
	}
	return v
}

// maxProducerTraces is how many producer traces a partition's subsegment lists: X-Ray itself
// links a segment to at most 20 traces, and a segment document must stay under 64 kB.
const maxProducerTraces = 20

// producerTrace is a trace that produced records of a partition, as its subsegment's metadata
// lists it.
type producerTrace struct {
	TraceID     string `json:"trace_id"`
	ParentID    string `json:"parent_id,omitempty"`
	Records     int    `json:"records"`
	FirstOffset string `json:"first_offset"`
	LastOffset  string `json:"last_offset"`
}

// producerTraces reads the X-Ray trace header of each record: the traces that produced them,
// in the order of their first record (at most maxProducerTraces), how many distinct traces
// there were, and how many headers were not a valid trace header.
func producerTraces(records []kafkaevent.Record) (traces []*producerTrace, distinct, invalid int) {
	var seen map[string]*producerTrace
	for i := range records {
		r := &records[i]
		v, ok := traceHeader(r)
		if !ok {
			continue
		}
		root, parent, ok := parseTraceHeader(v)
		if !ok {
			invalid++
			continue
		}
		off := strconv.FormatInt(r.Offset, 10)
		if p, ok := seen[root]; ok {
			if p != nil {
				p.Records++
				p.LastOffset = off
			}
			continue
		}
		if seen == nil {
			seen = make(map[string]*producerTrace)
		}
		distinct++
		if len(traces) == maxProducerTraces {
			seen[root] = nil // counted, not listed
			continue
		}
		p := &producerTrace{TraceID: root, ParentID: parent, Records: 1, FirstOffset: off, LastOffset: off}
		seen[root] = p
		traces = append(traces, p)
	}
	return traces, distinct, invalid
}

// traceHeader returns the value of the record's first X-Amzn-Trace-Id header, the name
// compared without regard to case.
func traceHeader(r *kafkaevent.Record) (string, bool) {
	for _, h := range r.Headers {
		if strings.EqualFold(h.Key, TraceHeader) {
			return string(h.Value), true
		}
	}
	return "", false
}

// parseTraceHeader reads Root and Parent from an X-Ray trace header. The trace ID must be
// "1-" then 8 and 24 hexadecimal digits; a Parent, when there is one, 16.
func parseTraceHeader(v string) (root, parent string, ok bool) {
	for part := range strings.SplitSeq(v, ";") {
		k, val, _ := strings.Cut(strings.TrimSpace(part), "=")
		switch k {
		case "Root":
			root = val
		case "Parent":
			parent = val
		}
	}
	if len(root) != 35 || root[:2] != "1-" || root[10] != '-' || !isHex(root[2:10]) || !isHex(root[11:]) {
		return "", "", false
	}
	if parent != "" && (len(parent) != 16 || !isHex(parent)) {
		return "", "", false
	}
	return root, parent, true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if (c < '0' || c > '9') && (c < 'a' || c > 'f') && (c < 'A' || c > 'F') {
			return false
		}
	}
	return true
}
