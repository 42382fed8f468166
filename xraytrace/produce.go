package xraytrace

import (
	"context"
	"strconv"
	"strings"

	"github.com/aws/aws-xray-sdk-go/v2/xray"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The hook is also a franz-go producer hook.
var (
	_ kgo.HookProduceRecordBuffered   = (*Hook)(nil)
	_ kgo.HookProduceRecordUnbuffered = (*Hook)(nil)
)

// TraceHeader is the name of the record header that carries the X-Ray trace header,
// "Root=TRACE_ID;Parent=SEGMENT_ID;Sampled=1", as HTTP requests and SQS messages
// (AWSTraceHeader) carry it.
const TraceHeader = "X-Amzn-Trace-Id"

// sendKey is the context key of a produced record's subsegment, in the record's Context while
// kgo holds the record.
type sendKey struct{}

// sending is a produced record's subsegment and the Context the record had before.
type sending struct {
	seg    *xray.Segment
	parent context.Context
}

// OnProduceRecordBuffered implements kgo.HookProduceRecordBuffered: when the record's Context
// (kgo sets it to the context given to Produce when the record has none) is traced, a
// subsegment "send TOPIC" in namespace remote is opened for the record, and the header
// X-Amzn-Trace-Id, "Root=TRACE_ID;Parent=SUBSEGMENT_ID;Sampled=1" (or 0), is written into the
// record, in place of any header of that name (compared without regard to case) it already
// has. The record's header slice is copied first, so a slice shared between records is left as
// it was. Without a trace, the record is left alone.
func (h *Hook) OnProduceRecordBuffered(r *kgo.Record) {
	parent := r.Context
	if parent == nil || (parent.Value(xray.LambdaTraceHeaderKey) == nil && xray.GetSegment(parent) == nil) {
		return
	}
	ctx, seg := xray.BeginSubsegment(parent, segmentName("send "+r.Topic))
	if seg == nil {
		return
	}
	if seg.ParentSegment != nil {
		hdr := seg.DownstreamHeader().String()
		seg.Lock()
		seg.Namespace = "remote"
		seg.Unlock()
		if hdr != "" {
			hs := make([]kgo.RecordHeader, len(r.Headers), len(r.Headers)+1)
			copy(hs, r.Headers)
			r.Headers = setHeader(hs, TraceHeader, hdr)
		}
	}
	r.Context = context.WithValue(ctx, sendKey{}, &sending{seg: seg, parent: parent})
}

// OnProduceRecordUnbuffered implements kgo.HookProduceRecordUnbuffered: the record's
// subsegment is annotated with topic and, once acknowledged, partition and offset (a string),
// and closed with kgo's error, which X-Ray shows as a fault; the record's Context is given back
// the value it had before OnProduceRecordBuffered.
func (h *Hook) OnProduceRecordUnbuffered(r *kgo.Record, err error) {
	if r.Context == nil {
		return
	}
	s, ok := r.Context.Value(sendKey{}).(*sending)
	if !ok {
		return
	}
	r.Context = s.parent
	_ = s.seg.AddAnnotation("topic", r.Topic)
	if err == nil {
		_ = s.seg.AddAnnotation("partition", int(r.Partition))
		_ = s.seg.AddAnnotation("offset", strconv.FormatInt(r.Offset, 10))
	}
	s.seg.Close(err)
}

// setHeader sets header key of hs to value, in place of the first header of that name
// (compared without regard to case), and removes the others of that name; without one, it
// appends it.
func setHeader(hs []kgo.RecordHeader, key, value string) []kgo.RecordHeader {
	out, found := hs[:0], false
	for _, h := range hs {
		if strings.EqualFold(h.Key, key) {
			if found {
				continue
			}
			h, found = kgo.RecordHeader{Key: key, Value: []byte(value)}, true
		}
		out = append(out, h)
	}
	if !found {
		return append(out, kgo.RecordHeader{Key: key, Value: []byte(value)})
	}
	clear(hs[len(out):]) // the removed duplicates' places
	return out
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
