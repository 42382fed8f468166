package batch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"time"

	"github.com/kafkalambda/toolkit/internal/emfout"
)

// Observability, off the hot path: once per batch, one log/slog summary line and, when asked
// for, one CloudWatch Embedded Metric Format line (CloudWatch Logs turns it into metrics);
// once per failed record, one log line and the failure hooks.

// WithMetrics writes one CloudWatch Embedded Metric Format line per batch to w (os.Stdout in
// Lambda, where CloudWatch Logs turns it into metrics): the counts of the summary line, the
// batch's duration, and the age of its oldest and newest records. Custom metrics cost money,
// so by default none are written. The namespace is DefaultNamespace unless
// WithMetricsNamespace names another.
func WithMetrics(w io.Writer) Option {
	return func(c *config) {
		if w == nil {
			c.invalid("WithMetrics(nil): want a writer")
		}
		c.metricsOut = w
	}
}

// WithMetricsNamespace sets the CloudWatch namespace of the metrics that WithMetrics turns on
// (by default DefaultNamespace). Without WithMetrics it has no effect.
func WithMetricsNamespace(ns string) Option {
	return func(c *config) {
		if ns == "" {
			c.invalid("WithMetricsNamespace(\"\"): want a namespace")
		}
		c.namespace = ns
	}
}

// WithLogger sets the logger of the batch's summary line and of the line logged for each
// failed record; by default slog.Default(). The summary line is at level Info, or Warn when
// a record failed; failed records are at level Error, and a record skipped because an
// earlier delivery sent it to the sink (WithSink under WithIdempotency) at level Info. To
// silence them, pass a logger with a higher level, or slog.New(slog.DiscardHandler).
func WithLogger(l *slog.Logger) Option {
	return func(c *config) {
		if l == nil {
			c.invalid("WithLogger(nil): want a logger (slog.New(slog.DiscardHandler) logs nothing)")
		}
		c.logger = l
	}
}

// DefaultNamespace is the CloudWatch namespace of the metrics.
const DefaultNamespace = "KafkaLambdaToolkit"

func (c *config) observe(ctx context.Context, source string, records int, st *local) {
	now := c.now()
	dur := now.Sub(c.start)
	if out := c.metricsOut; out != nil {
		if err := emfout.WriteLine(out, emf(now, c.namespace, source, records, st, dur)); err != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "batch metrics not written", slog.String("source", source), slog.String("error", err.Error()))
		}
	}
	attrs := []slog.Attr{
		slog.String("source", source),
		slog.Int("records", records),
		slog.Int64("processed", st.processed),
		slog.Int64("failed", st.failed),
		slog.Int64("reported", st.reported),
		slog.Int64("filtered", st.filtered),
		slog.Int64("sentToSink", st.sunk),
		slog.Int64("replayed", st.replayed),
		slog.Int64("notRecorded", st.notRecorded),
		slog.Int64("durationMs", dur.Milliseconds()), // milliseconds, as EMF
	}
	level := slog.LevelInfo
	if st.failed > 0 || st.notRecorded > 0 {
		level = slog.LevelWarn
	}
	c.logger.LogAttrs(ctx, level, "batch processed", attrs...)
}

// failed completes what is known of a failed record, logs it, calls the failure hooks, and
// counts it in l. reported is the number of records the response reports because of it: the
// record and the rest of its partition or message group, or 0 when the sink took it.
func (c *config) failed(ctx context.Context, fl *Failure, f *failure, reported int, l *local) {
	fl.Err, fl.Attempts, fl.Permanent = f.err, f.attempts, f.permanent
	fl.SentToSink, fl.SinkErr, fl.Reported = f.sunk, f.sinkErr, reported
	l.failed++
	l.reported += int64(reported)
	c.logFailure(ctx, fl)
	c.hooks.onFailure(ctx, fl)
}

// where are the attributes that say where a record is: never its key, value, body or
// headers.
func where(attrs []slog.Attr, it Item, group string) []slog.Attr {
	if r := it.Kafka; r != nil {
		attrs = append(attrs, slog.String("source", "kafka"), slog.String("partition", group), slog.Int64("offset", r.Offset))
	} else if m := it.SQS; m != nil {
		attrs = append(attrs, slog.String("source", "sqs"), slog.String("messageId", m.MessageId))
		if g := m.Attributes["MessageGroupId"]; g != "" {
			attrs = append(attrs, slog.String("messageGroup", g))
		}
	}
	return attrs
}

// logNotRecorded writes the line of a record that succeeded but whose completion could not
// be stored (idempotency.ErrNotRecorded): it counts as processed and is not reported, and
// its key stays in progress while the completion is retried in the background.
func (c *config) logNotRecorded(ctx context.Context, it Item, err error) {
	if !c.logger.Enabled(ctx, slog.LevelError) {
		return
	}
	group := ""
	if it.Kafka != nil {
		group = it.Kafka.PartitionID()
	}
	attrs := where(make([]slog.Attr, 0, 6), it, group)
	attrs = append(attrs, slog.String("error", err.Error()))
	c.logger.LogAttrs(ctx, slog.LevelError, "record completion not stored", attrs...)
}

// logFailure writes the line of a failed record: where it is, what happened, and the error;
// never its key, value, body or headers.
func (c *config) logFailure(ctx context.Context, fl *Failure) {
	if !c.logger.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := where(make([]slog.Attr, 0, 12), fl.Item, fl.Group)
	attrs = append(attrs,
		slog.Int("attempts", fl.Attempts),
		slog.Bool("permanent", fl.Permanent),
		slog.Bool("sentToSink", fl.SentToSink),
		slog.Int("reported", fl.Reported),
		slog.String("error", fl.Err.Error()),
	)
	if fl.SinkErr != nil {
		attrs = append(attrs, slog.String("sinkError", fl.SinkErr.Error()))
	}
	var pe *PanicError
	if errors.As(fl.Err, &pe) {
		attrs = append(attrs, slog.String("stack", string(pe.Stack)))
	}
	c.logger.LogAttrs(ctx, slog.LevelError, "record failed", attrs...)
}

// emf builds the Embedded Metric Format line of a batch: counts, duration, and the age of
// the oldest and newest records, a lag in time that the mapping's OffsetLag (a count of
// records) does not give.
func emf(now time.Time, ns, source string, records int, st *local, dur time.Duration) []byte {
	d := emfout.New("Source", source)
	d.Int("Records", emfout.Count, int64(records))
	d.Int("Processed", emfout.Count, st.processed)
	d.Int("Failed", emfout.Count, st.failed)
	d.Int("Reported", emfout.Count, st.reported)
	d.Int("Filtered", emfout.Count, st.filtered)
	d.Int("SentToSink", emfout.Count, st.sunk)
	d.Int("Replayed", emfout.Count, st.replayed)
	d.Int("NotRecorded", emfout.Count, st.notRecorded)
	d.Float("BatchDuration", emfout.Milliseconds, float64(dur.Microseconds())/1000)
	if oldest, newest := st.oldest, st.newest; !oldest.IsZero() {
		d.Float("OldestRecordAge", emfout.Milliseconds, float64(now.Sub(oldest).Milliseconds()))
		d.Float("NewestRecordAge", emfout.Milliseconds, float64(now.Sub(newest).Milliseconds()))
	}
	return d.Line(now, ns)
}
