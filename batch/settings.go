package batch

import "github.com/kafkalambda/toolkit/internal/batchsettings"

// Package fanout's Dispatcher, which sends each record to SQS instead of calling a handler,
// takes this package's options for the behaviours every processor of Kafka batches has (its
// logger, its metrics, the deadline margin, the failure sink and the records' correlation
// IDs), so that each is defined once; it reads them through internal/batchsettings.
func init() {
	batchsettings.Read = func(opts any) (batchsettings.Settings, error) { return readSettings(opts.([]Option)) }
}

// readSettings applies opts and returns the settings they make. An option given an invalid
// value is an error, and so is an option that sets none of the settings (WithRetry,
// WithConcurrency, WithFilter, WithIdempotency, WithHooks, ...), which the caller would
// otherwise ignore in silence.
func readSettings(opts []Option) (batchsettings.Settings, error) {
	for _, o := range opts {
		if o == nil {
			return batchsettings.Settings{}, invalidOption("Option(nil): want an option")
		}
		var probe config
		o(&probe)
		if probe.err != nil {
			return batchsettings.Settings{}, probe.err
		}
		if name := probe.notSettings(); name != "" {
			return batchsettings.Settings{}, invalidOption(name + ": not one of the options that Settings holds (WithLogger, WithMetrics, WithMetricsNamespace, WithDeadlineMargin, WithSink, WithCorrelationIDFrom)")
		}
	}
	c := newConfig(opts)
	if c.err != nil {
		return batchsettings.Settings{}, c.err
	}
	s := batchsettings.Settings{Logger: c.logger, Metrics: c.metricsOut, Namespace: c.namespace,
		DeadlineMargin: c.deadlineMargin, SinkPolicy: int(c.sinkPolicy), Correlation: c.correlation}
	if c.sink != nil {
		s.Sink = c.sink
	}
	return s, nil
}

// notSettings names the option that set c, an empty config, beyond the Settings, or "".
func (c *config) notSettings() string {
	switch {
	case c.concurrency != 0:
		return "WithConcurrency"
	case c.keyConcurrency != 0:
		return "WithKeyConcurrency"
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
