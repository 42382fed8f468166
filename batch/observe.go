package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
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
// a record failed; failed records are at level Error. To silence them, pass a logger with a
// higher level, or slog.New(slog.DiscardHandler).
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

func (c *config) observe(ctx context.Context, source string, records int) {
	st := c.st
	now := c.now()
	dur := now.Sub(st.start)
	if out := c.metricsOut; out != nil {
		line, err := emf(now, c.namespace, source, records, st, dur)
		if err == nil {
			err = emfout.WriteLine(out, line)
		}
		if err != nil {
			c.logger.LogAttrs(ctx, slog.LevelError, "batch metrics not written", slog.String("source", source), slog.String("error", err.Error()))
		}
	}
	attrs := []slog.Attr{
		slog.String("source", source),
		slog.Int("records", records),
		slog.Int64("processed", st.processed.Load()),
		slog.Int64("failed", st.failed.Load()),
		slog.Int64("filtered", st.filtered.Load()),
		slog.Int64("sentToSink", st.sunk.Load()),
		slog.Int64("replayed", st.replayed.Load()),
		slog.Duration("duration", dur),
	}
	level := slog.LevelInfo
	if st.failed.Load() > 0 {
		level = slog.LevelWarn
	}
	c.logger.LogAttrs(ctx, level, "batch processed", attrs...)
}

// failed completes what is known of a failed record, logs it, and calls the failure hooks.
// reported is the number of records the response reports because of it: the record and the
// rest of its partition or message group, or 0 when the sink took it.
func (c *config) failed(ctx context.Context, fl *Failure, f *failure, reported int) {
	fl.Err, fl.Attempts, fl.Permanent = f.err, f.attempts, f.permanent
	fl.SentToSink, fl.SinkErr, fl.Reported = f.sunk, f.sinkErr, reported
	c.logFailure(ctx, fl)
	c.hooks.onFailure(ctx, fl)
}

// logFailure writes the line of a failed record: where it is, what happened, and the error;
// never its key, value, body or headers.
func (c *config) logFailure(ctx context.Context, fl *Failure) {
	if !c.logger.Enabled(ctx, slog.LevelError) {
		return
	}
	attrs := make([]slog.Attr, 0, 12)
	if r := fl.Kafka; r != nil {
		attrs = append(attrs, slog.String("source", "kafka"), slog.String("partition", fl.Group), slog.Int64("offset", r.Offset))
	} else if m := fl.SQS; m != nil {
		attrs = append(attrs, slog.String("source", "sqs"), slog.String("messageId", m.MessageId))
		if g := m.Attributes["MessageGroupId"]; g != "" {
			attrs = append(attrs, slog.String("messageGroup", g))
		}
	}
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
func emf(now time.Time, ns, source string, records int, st *stats, dur time.Duration) ([]byte, error) {
	type metric struct {
		Name string `json:"Name"`
		Unit string `json:"Unit"`
	}
	metrics := []metric{
		{"Records", "Count"}, {"Processed", "Count"}, {"Failed", "Count"}, {"Filtered", "Count"},
		{"SentToSink", "Count"}, {"Replayed", "Count"}, {"BatchDuration", "Milliseconds"},
	}
	doc := map[string]any{
		"Source":        source,
		"Records":       records,
		"Processed":     st.processed.Load(),
		"Failed":        st.failed.Load(),
		"Filtered":      st.filtered.Load(),
		"SentToSink":    st.sunk.Load(),
		"Replayed":      st.replayed.Load(),
		"BatchDuration": float64(dur.Microseconds()) / 1000,
	}
	st.mu.Lock()
	oldest, newest := st.oldest, st.newest
	st.mu.Unlock()
	if !oldest.IsZero() {
		doc["OldestRecordAge"] = float64(now.Sub(oldest).Milliseconds())
		doc["NewestRecordAge"] = float64(now.Sub(newest).Milliseconds())
		metrics = append(metrics, metric{"OldestRecordAge", "Milliseconds"}, metric{"NewestRecordAge", "Milliseconds"})
	}
	doc["_aws"] = map[string]any{
		"Timestamp": now.UnixMilli(),
		"CloudWatchMetrics": []any{map[string]any{
			"Namespace":  ns,
			"Dimensions": [][]string{{"Source"}},
			"Metrics":    metrics,
		}},
	}
	b, err := json.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("batch: metrics: %w", err)
	}
	return append(b, '\n'), nil
}
