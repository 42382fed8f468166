package batch

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/idempotency"
)

// SQSRecordHandler handles one SQS message. Returning an error fails the message; wrap it
// with Permanent when retrying cannot help.
type SQSRecordHandler func(ctx context.Context, m *events.SQSMessage) error

// ProcessSQS runs h on every message of the batch and returns the partial-batch response
// (the event source mapping needs ReportBatchItemFailures).
//
// Messages of a standard queue are processed in parallel (WithConcurrency bounds how many at
// once, default 10). Messages of a FIFO queue (an ARN ending in ".fifo") are processed in
// order within each MessageGroupId, groups in parallel; when a message fails, it and every
// later message of its group are reported, so that they come back in order, and other groups
// go on. Retries, deadline, filter and idempotency work as in ProcessKafka.
func ProcessSQS(ctx context.Context, ev *events.SQSEvent, h SQSRecordHandler, opts ...Option) (events.SQSEventResponse, error) {
	cfg := newConfig(opts)
	cfg.outer = ctx
	stop := cfg.stopAt(ctx)
	hctx := ctx
	if !stop.IsZero() {
		var cancel context.CancelFunc
		hctx, cancel = context.WithDeadline(ctx, stop)
		defer cancel()
	}
	// Units of work: one message each (standard), or one message group each (FIFO).
	var units [][]int
	fifo := len(ev.Records) > 0 && strings.HasSuffix(ev.Records[0].EventSourceARN, ".fifo")
	if fifo {
		index := map[string]int{}
		for i := range ev.Records {
			g := ev.Records[i].Attributes["MessageGroupId"]
			u, ok := index[g]
			if !ok {
				u = len(units)
				index[g] = u
				units = append(units, nil)
			}
			units[u] = append(units[u], i)
		}
	} else {
		for i := range ev.Records {
			units = append(units, []int{i})
		}
		if cfg.concurrency == 0 {
			cfg.concurrency = 10
		}
	}
	info := &BatchInfo{Source: "sqs", Records: len(ev.Records), Groups: len(units)}
	hctx = cfg.hooks.batchStart(hctx, info)
	failed := make([]bool, len(ev.Records))
	forEach(len(units), cfg.concurrency, func(u int) {
		var l local
		defer cfg.st.merge(&l)
		gctx, g := hctx, (*GroupInfo)(nil)
		if len(cfg.hooks.group) > 0 {
			g = &GroupInfo{Source: "sqs", Messages: make([]*events.SQSMessage, len(units[u]))}
			for k, i := range units[u] {
				g.Messages[k] = &ev.Records[i]
			}
			if fifo {
				g.ID = g.Messages[0].Attributes["MessageGroupId"]
			} else {
				g.ID = g.Messages[0].MessageId
			}
			gctx = cfg.hooks.groupStart(hctx, g)
		}
		n := 0
		for k, i := range units[u] {
			if err := cfg.message(gctx, stop, &ev.Records[i], h, &l); err != nil {
				for _, j := range units[u][k:] {
					failed[j] = true
				}
				n = len(units[u]) - k
				break
			}
		}
		if g != nil {
			cfg.hooks.groupEnd(gctx, g, n)
		}
	})
	resp := events.SQSEventResponse{BatchItemFailures: []events.SQSBatchItemFailure{}}
	for i, f := range failed {
		if f {
			resp.BatchItemFailures = append(resp.BatchItemFailures, events.SQSBatchItemFailure{ItemIdentifier: ev.Records[i].MessageId})
		}
	}
	cfg.st.failed.Store(int64(len(resp.BatchItemFailures)))
	cfg.observe(ctx, "sqs", len(ev.Records))
	if len(cfg.hooks.batch) > 0 {
		cfg.hooks.batchEnd(hctx, info, cfg.st.result())
	}
	if cfg.errorOnAllFail && len(resp.BatchItemFailures) > 0 && len(resp.BatchItemFailures) == len(ev.Records) {
		return resp, ErrAllFailed
	}
	return resp, nil
}

func (c *config) message(ctx context.Context, stop time.Time, m *events.SQSMessage, h SQSRecordHandler, l *local) error {
	if !stop.IsZero() && !c.now().Before(stop) {
		return ErrDeadline
	}
	if ms, err := strconv.ParseInt(m.Attributes["SentTimestamp"], 10, 64); err == nil {
		l.seen(time.UnixMilli(ms))
	}
	var f *failure
	if c.criteria != nil {
		// A message the filter cannot decide on is a failed message, never a filtered one.
		pass, err := c.criteria.MatchSQS(m)
		if err == nil && !pass {
			l.filtered++
			return nil
		}
		if err != nil {
			now := c.now()
			f = &failure{err: err, permanent: true, first: now, last: now}
		}
	}
	if f == nil {
		run := func(ctx context.Context) error { return h(ctx, m) }
		if len(c.hooks.record) == 0 {
			f = c.handle(ctx, stop, idempotency.SQSKey(m), run, l)
		} else {
			it := &Item{SQS: m}
			rctx := c.hooks.recordStart(ctx, it)
			f = c.handle(rctx, stop, idempotency.SQSKey(m), run, l)
			c.hooks.recordEnd(rctx, it, f.error())
		}
	}
	if f == nil {
		return nil
	}
	if c.toSink(f) && c.send(ctx, sqsEnvelope(m, f), l) {
		return nil
	}
	return f.err
}

// SQSHandler returns a function for lambda.Start that processes each batch with ProcessSQS
// and h.
func SQSHandler(h SQSRecordHandler, opts ...Option) func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
	return func(ctx context.Context, ev events.SQSEvent) (events.SQSEventResponse, error) {
		return ProcessSQS(ctx, &ev, h, opts...)
	}
}
