package batch

import (
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"
)

// Observability, off the hot path: once per batch, one CloudWatch Embedded Metric Format line
// on standard output (CloudWatch Logs turns it into metrics) and one log/slog summary line.

// WithMetrics writes the batch's EMF line to w under the CloudWatch namespace ns (default:
// namespace "KafkaLambdaToolkit" on standard output). WithMetrics(nil, "") turns metrics off.
func WithMetrics(w io.Writer, ns string) Option {
	return func(c *config) { c.metricsOut, c.namespace, c.metricsSet = w, ns, true }
}

// WithLogger sets the logger of the batch summary line (default slog.Default()); nil turns
// it off.
func WithLogger(l *slog.Logger) Option { return func(c *config) { c.logger, c.loggerSet = l, true } }

// DefaultNamespace is the CloudWatch namespace of the metrics.
const DefaultNamespace = "KafkaLambdaToolkit"

var stdoutMu sync.Mutex // one EMF line at a time on standard output

func (c *config) observe(ctx context.Context, source string, records int) {
	st := c.st
	now := c.now()
	dur := now.Sub(st.start)
	out, ns := c.metricsOut, c.namespace
	if !c.metricsSet {
		out, ns = os.Stdout, DefaultNamespace
	}
	if ns == "" {
		ns = DefaultNamespace
	}
	if out != nil {
		line := emf(now, ns, source, records, st, dur)
		if out == os.Stdout {
			stdoutMu.Lock()
			defer stdoutMu.Unlock()
		}
		_, _ = out.Write(line)
	}
	logger := c.logger
	if !c.loggerSet {
		logger = slog.Default()
	}
	if logger != nil {
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
		logger.LogAttrs(ctx, level, "batch processed", attrs...)
	}
}

// emf builds the Embedded Metric Format line of a batch: counts, duration, and the age of
// the oldest and newest records, a lag in time that the mapping's OffsetLag (a count of
// records) does not give.
func emf(now time.Time, ns, source string, records int, st *stats, dur time.Duration) []byte {
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
	b, _ := json.Marshal(doc)
	return append(b, '\n')
}
