package fanout

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/correlation"
	"github.com/kafkalambda/toolkit/internal/recovered"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/metrics"
)

// finish builds the response, logs each record not accepted and the summary line, and
// writes the metrics.
func (r *run) finish(ctx context.Context) batch.KafkaResponse {
	resp := batch.KafkaResponse{BatchItemFailures: []batch.KafkaItemFailure{}}
	for p := range r.ev.Partitions {
		part := &r.ev.Partitions[p]
		items := r.items[p]
		first := -1
		for i := range items {
			it := &items[i]
			switch it.state {
			case stateAccepted:
				continue
			case stateSunk:
				r.logFailure(ctx, part.ID(), it, 0)
				continue
			case statePending, stateInFlight, stateSinking: // not sent, or a retry not made
				it.err = r.notSent(it)
			}
			if first < 0 {
				first = i
				r.logFailure(ctx, part.ID(), it, len(items)-i)
			} else if it.state == stateFailed {
				r.logFailure(ctx, part.ID(), it, 0)
			}
		}
		if first < 0 {
			continue
		}
		for i := first; i < len(items); i++ {
			resp.BatchItemFailures = append(resp.BatchItemFailures, batch.KafkaItemFailure{
				ItemIdentifier: batch.KafkaItemIdentifier{Partition: part.ID(), Offset: items[i].rec.Offset}})
		}
	}
	r.st.reported = len(resp.BatchItemFailures)
	r.observe(ctx)
	return resp
}

// notSent is the error of an item that was not sent, or not sent again.
func (r *run) notSent(it *item) error {
	why := batch.ErrDeadline
	if r.d.fifo && r.lanes[it.lane].blocked {
		why = ErrGroupBlocked
	}
	if why == batch.ErrDeadline && (r.stop.IsZero() || r.d.cfg.now().Before(r.stop)) && r.ctx.Err() != nil {
		// The caller's context ended before the stop time.
		return fmt.Errorf("fanout: not sent: %w", context.Cause(r.ctx))
	}
	if it.err != nil {
		return fmt.Errorf("%w (no retry: %w)", it.err, why)
	}
	return why
}

// logFailure writes the line of a record not accepted (or given to the sink): where it is,
// what happened; never its key, value or headers. reported is the number of records the
// response reports because of it: the record and the rest of its partition, or 0.
func (r *run) logFailure(ctx context.Context, partition string, it *item, reported int) {
	r.st.failed++ // one line per failed record: Failed counts them
	l := r.d.cfg.logger
	ctx = r.correlate(ctx, it.rec)
	if !l.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 10)
	attrs = append(attrs,
		slog.String("queue", r.d.queue),
		slog.String("partition", partition),
		slog.Int64("offset", it.rec.Offset),
		slog.Int("attempts", it.attempts),
		slog.Bool("permanent", it.permanent),
		slog.Bool("sentToSink", it.state == stateSunk),
		slog.Int("reported", reported),
		slog.String("error", errorText(it.err)),
	)
	if it.sinkErr != nil {
		attrs = append(attrs, slog.String("sinkError", it.sinkErr.Error()))
	}
	l.LogAttrs(ctx, slog.LevelError, "record not dispatched", attrs...)
}

// correlate returns ctx carrying the record's correlation ID, from the header that
// batch.WithCorrelationIDFrom names, cut as batch cuts it; ctx when there is none.
func (r *run) correlate(ctx context.Context, rec *kafkaevent.Record) context.Context {
	name := r.d.cfg.correlation
	if name == "" {
		return ctx
	}
	v, _ := rec.Header(name) // cut before it is copied: a producer's header may be large
	if len(v) == 0 {
		return ctx
	}
	return correlation.With(ctx, string(correlation.Cut(v)))
}

func errorText(err error) string {
	if err == nil {
		return "unknown"
	}
	return err.Error()
}

// observe writes the summary line and, when asked for, the EMF line.
func (r *run) observe(ctx context.Context) {
	c := &r.d.cfg
	st := &r.st
	now := c.now()
	dur := now.Sub(r.start)
	if c.mx != nil {
		// The metrics writer is the caller's: its panic fails the invocation (no record is in
		// hand), never the process that serves other invocations (Lambda Managed Instances).
		var err error
		if pe := recovered.Call("fanout: the WithMetrics writer", func() { err = r.writeMetrics(ctx, now, dur) }); pe != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "dispatch invocation failed", slog.String("queue", r.d.queue),
				slog.String("error", pe.Error()), slog.String("stack", string(pe.Stack)))
			r.panicked = pe
		} else if err != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "dispatch metrics not written", slog.String("queue", r.d.queue), slog.String("error", err.Error()))
		}
	}
	attrs := []slog.Attr{
		slog.String("queue", r.d.queue),
		slog.Int("records", st.records),
		slog.Int("dispatched", st.dispatched),
		slog.Int("failed", st.failed),
		slog.Int("reported", st.reported),
		slog.Int("sentToSink", st.sunk),
		slog.Int("batchCalls", st.calls),
		slog.Int("failedCalls", st.failedCalls),
		slog.Int("entriesRetried", st.retried),
		slog.Int64("bytes", st.bytes),
		slog.Int64("durationMs", dur.Milliseconds()), // milliseconds, as EMF
	}
	if !st.oldest.IsZero() {
		attrs = append(attrs, slog.Int64("oldestRecordAgeMs", now.Sub(st.oldest).Milliseconds()),
			slog.Int64("newestRecordAgeMs", now.Sub(st.newest).Milliseconds()))
	}
	level := slog.LevelInfo
	if st.failed > 0 || st.reported > 0 {
		level = slog.LevelWarn
	}
	c.logger.LogAttrs(ctx, level, "records dispatched", attrs...)
}

// writeMetrics writes the Embedded Metric Format document of a Dispatch through package
// metrics, with a recorder of the Dispatcher's Metrics of its own.
func (r *run) writeMetrics(ctx context.Context, now time.Time, dur time.Duration) error {
	st := &r.st
	ctx = r.d.cfg.mx.Start(ctx)
	var err error
	add := func(name string, unit metrics.Unit, v float64) {
		if err == nil {
			err = metrics.Add(ctx, name, unit, v)
		}
	}
	add("Records", metrics.Count, float64(st.records))
	add("Dispatched", metrics.Count, float64(st.dispatched))
	add("Failed", metrics.Count, float64(st.failed))
	add("Reported", metrics.Count, float64(st.reported))
	add("SentToSink", metrics.Count, float64(st.sunk))
	add("BatchCalls", metrics.Count, float64(st.calls))
	add("FailedCalls", metrics.Count, float64(st.failedCalls))
	add("EntriesRetried", metrics.Count, float64(st.retried))
	add("BytesDispatched", metrics.Bytes, float64(st.bytes))
	add("DispatchDuration", metrics.Milliseconds, float64(dur.Microseconds())/1000)
	if !st.oldest.IsZero() {
		add("OldestRecordAge", metrics.Milliseconds, float64(now.Sub(st.oldest).Milliseconds()))
		add("NewestRecordAge", metrics.Milliseconds, float64(now.Sub(st.newest).Milliseconds()))
	}
	if err != nil {
		return err
	}
	return metrics.Flush(ctx)
}
