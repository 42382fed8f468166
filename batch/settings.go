package batch

import (
	"io"
	"log/slog"
	"time"
)

// Settings are what options set for the behaviours that every processor of a Kafka batch
// has, whatever it does with the records: its logger, its metrics, the deadline margin and
// the failure sink. A component that processes batches its own way (package fanout's
// Dispatcher, which sends each record to SQS instead of calling a handler) reads them with
// [ReadSettings], so that it takes this package's options for them and each is defined once:
//
//	fanout.NewDispatcher(client, queueURL, fanout.WithBatchOptions(batch.WithLogger(l)))
type Settings struct {
	Logger         *slog.Logger  // WithLogger; by default slog.Default()
	Metrics        io.Writer     // WithMetrics; by default nil, no metrics
	Namespace      string        // WithMetricsNamespace; by default DefaultNamespace
	DeadlineMargin time.Duration // WithDeadlineMargin; by default 500 ms
	Sink           Sink          // WithSink; by default nil, no sink
	SinkPolicy     SinkPolicy    // WithSink's policy
}

// ReadSettings applies opts and returns the Settings they make. An option given an invalid
// value is an error wrapping ErrInvalidOption, and so is an option that sets none of the
// Settings (WithRetry, WithConcurrency, WithFilter, WithIdempotency, WithHooks, ...), which
// the caller would otherwise ignore in silence.
func ReadSettings(opts ...Option) (Settings, error) {
	for _, o := range opts {
		if o == nil {
			return Settings{}, invalidOption("Option(nil): want an option")
		}
		var probe config
		o(&probe)
		if probe.err != nil {
			return Settings{}, probe.err
		}
		if name := probe.notSettings(); name != "" {
			return Settings{}, invalidOption(name + ": not one of the options that Settings holds (WithLogger, WithMetrics, WithMetricsNamespace, WithDeadlineMargin, WithSink)")
		}
	}
	c := newConfig(opts)
	if c.err != nil {
		return Settings{}, c.err
	}
	return Settings{Logger: c.logger, Metrics: c.metricsOut, Namespace: c.namespace,
		DeadlineMargin: c.deadlineMargin, Sink: c.sink, SinkPolicy: c.sinkPolicy}, nil
}

// notSettings names the option that set c, an empty config, beyond the Settings, or "".
func (c *config) notSettings() string {
	switch {
	case c.concurrency != 0:
		return "WithConcurrency"
	case c.attempts != 0 || c.backoff != 0:
		return "WithRetry"
	case c.errorOnAllFail:
		return "WithErrorWhenAllFail"
	case c.criteria != nil:
		return "WithFilter"
	case c.store != nil || c.idemOpts != nil:
		return "WithIdempotency"
	case c.kafkaKey != nil:
		return "WithIdempotencyKey"
	case c.sqsRecord != nil:
		return "WithSQSKafkaRecord"
	case len(c.hooks.batch)+len(c.hooks.group)+len(c.hooks.record)+len(c.hooks.failure) != 0:
		return "WithHooks"
	case c.now != nil || c.sleep != nil:
		return "withClock"
	}
	return ""
}
