package batch

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"sync/atomic"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/metrics"
)

// Observability, off the hot path: once per batch, one log/slog summary line and, when asked
// for, one CloudWatch Embedded Metric Format line (CloudWatch Logs turns it into metrics);
// once per failed record, one log line and the failure hooks.

// WithMetrics writes one CloudWatch Embedded Metric Format line per batch to w (os.Stdout in
// Lambda, where CloudWatch Logs turns it into metrics): the counts of the summary line, the
// batch's duration, and the age of its oldest and newest records, with the dimension
// "Source" ("kafka" or "sqs") and, when the invocation has one, its request ID
// (metrics.RequestIDKey, "function_request_id"). Custom metrics cost money, so by default none
// are written. The namespace is DefaultNamespace unless WithMetricsNamespace names another.
//
// The document is written by package metrics, as the function's own metrics are (one value of
// each metric, in an array of one), in a document of its own: the batch's metrics never mix
// with those the handler adds through metrics.Add, whether or not the handler is wrapped by
// metrics.Handle. It follows metrics' POWERTOOLS_METRICS_DISABLED (and POWERTOOLS_DEV): with
// metrics disabled, nothing is written. It has no "service" dimension, whatever
// POWERTOOLS_SERVICE_NAME says, so that its metrics stay those of DefaultNamespace's
// dashboards. A metrics variable that cannot be read makes every batch fail with a
// *toolkit.OptionError for WithMetrics that wraps metrics' error.
func WithMetrics(w io.Writer) Option {
	// Made once per option: the metrics.Metrics that writes the documents of the batches
	// that take this option (a handler's), made once per namespace and source.
	e := &emfWriter{out: w}
	return func(c *config) {
		if w == nil {
			c.invalid("WithMetrics(nil): want a writer")
		}
		c.metricsOut, c.emf = w, e
	}
}

// WithMetricsNamespace sets the CloudWatch namespace of the metrics that WithMetrics turns on
// (by default DefaultNamespace): 1 to 255 printable ASCII characters, not starting "AWS/", as
// metrics.WithNamespace takes it. Without WithMetrics it has no effect.
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
	if m := c.mx; m != nil {
		var err error
		if pe := guard("WithMetrics writer", func() { err = writeMetrics(ctx, m, now, records, st, dur) }); pe != nil {
			c.fail(ctx, pe) // no record in hand: the invocation fails
		} else if err != nil {
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
	if pe := c.hooks.onFailure(ctx, fl); pe != nil {
		c.logPanic(ctx, "hook panicked", pe) // the record has failed already
	}
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
	if st := panicStack(err); st != nil {
		attrs = append(attrs, slog.String("stack", string(st)))
	}
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
	if st := panicStack(fl.Err); st != nil {
		attrs = append(attrs, slog.String("stack", string(st)))
	} else if st := panicStack(fl.SinkErr); st != nil {
		attrs = append(attrs, slog.String("stack", string(st)))
	}
	c.logger.LogAttrs(ctx, slog.LevelError, "record failed", attrs...)
}

// emfWriter is the state of a WithMetrics option: where the documents go, and the
// metrics.Metrics that writes them, one per source, made by the first batch of a namespace and
// source and kept while the namespace stays (a handler's options do not change).
type emfWriter struct {
	out   io.Writer
	slots [2]atomic.Pointer[emfMetrics] // kafka, sqs
}

type emfMetrics struct {
	namespace string
	m         *metrics.Metrics
}

// metrics returns the Metrics that writes the documents of source's batches in namespace ns.
// The Metrics is made with "Source" as its one dimension, no service dimension and no
// ColdStart metric, so that the document holds what batch's documents always held.
func (e *emfWriter) metrics(ns, source string) (*metrics.Metrics, error) {
	i := 0
	if source != "kafka" {
		i = 1
	}
	if x := e.slots[i].Load(); x != nil && x.namespace == ns {
		return x.m, nil
	}
	m, err := metrics.New(metrics.WithOutput(e.out), metrics.WithNamespace(ns), metrics.WithService(""),
		metrics.WithColdStartMetric(false), metrics.WithDefaultDimensions(map[string]string{"Source": source}))
	if err != nil {
		option := "WithMetrics"
		var oe *toolkit.OptionError
		if errors.As(err, &oe) && oe.Option == "WithNamespace" {
			option = "WithMetricsNamespace"
		}
		return nil, &toolkit.OptionError{Package: "batch", Option: option, Err: err}
	}
	e.slots[i].Store(&emfMetrics{ns, m})
	return m, nil
}

// useMetrics sets c's Metrics for the batches of source, when WithMetrics asked for them.
func (c *config) useMetrics(source string) {
	if c.emf == nil || c.err != nil {
		return
	}
	m, err := c.emf.metrics(c.namespace, source)
	if err != nil {
		c.err = err
		return
	}
	c.mx = m
}

// writeMetrics writes the Embedded Metric Format document of a batch through package metrics,
// with a recorder of m's own: counts, duration, and the age of the oldest and newest records,
// a lag in time that the mapping's OffsetLag (a count of records) does not give.
func writeMetrics(ctx context.Context, m *metrics.Metrics, now time.Time, records int, st *local, dur time.Duration) error {
	ctx = m.Start(ctx)
	var err error
	add := func(name string, unit metrics.Unit, v float64) {
		if err == nil {
			err = metrics.Add(ctx, name, unit, v)
		}
	}
	add("Records", metrics.Count, float64(records))
	add("Processed", metrics.Count, float64(st.processed))
	add("Failed", metrics.Count, float64(st.failed))
	add("Reported", metrics.Count, float64(st.reported))
	add("Filtered", metrics.Count, float64(st.filtered))
	add("SentToSink", metrics.Count, float64(st.sunk))
	add("Replayed", metrics.Count, float64(st.replayed))
	add("NotRecorded", metrics.Count, float64(st.notRecorded))
	add("BatchDuration", metrics.Milliseconds, float64(dur.Microseconds())/1000)
	if oldest, newest := st.oldest, st.newest; !oldest.IsZero() {
		add("OldestRecordAge", metrics.Milliseconds, float64(now.Sub(oldest).Milliseconds()))
		add("NewestRecordAge", metrics.Milliseconds, float64(now.Sub(newest).Milliseconds()))
	}
	if err != nil {
		return err
	}
	return metrics.Flush(ctx)
}
