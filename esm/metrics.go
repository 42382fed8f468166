package esm

import (
	"slices"
	"sync/atomic"
)

// Metric groups of a mapping's MetricsConfig, for [WithMetricsConfig].
const (
	MetricsEventCount = "EventCount"   // counts of records through each step
	MetricsErrorCount = "ErrorCount"   // counts of errors (Kafka only)
	MetricsKafka      = "KafkaMetrics" // offset lag and commits (Kafka only)
)

// The metrics of each group, named as Lambda publishes them to CloudWatch (AWS/Lambda, per
// event source mapping; https://docs.aws.amazon.com/lambda/latest/dg/monitoring-metrics-types.html#event-source-mapping-metrics).
// Every count is the Sum statistic since Run started; MaxOffsetLag and SumOffsetLag are values
// now (the Maximum statistic of OffsetLag over the partitions, and their sum).
const (
	// PolledEventCount: records (Kafka) or messages (SQS) read from the source, each time
	// it is read (an SQS message received again counts again).
	metricPolledEventCount = "PolledEventCount"
	// FilteredOutEventCount: dropped by FilterCriteria.
	metricFilteredOutEventCount = "FilteredOutEventCount"
	// InvokedEventCount: records in invocations, once per invocation that carried them.
	metricInvokedEventCount = "InvokedEventCount"
	// FailedInvokeEventCount: records in invocations that failed for them (a function
	// error, a bad response, or a partial batch response naming them).
	metricFailedInvokeEventCount = "FailedInvokeEventCount"
	// DroppedEventCount (Kafka): given up on without an on-failure destination.
	metricDroppedEventCount = "DroppedEventCount"
	// OnFailureDestinationDeliveredEventCount (Kafka): sent to the on-failure destination.
	metricOnFailureDestinationDeliveredEventCount = "OnFailureDestinationDeliveredEventCount"
	// DeletedEventCount (SQS): deleted from the queue after their invocation succeeded.
	metricDeletedEventCount = "DeletedEventCount"

	// CommittedEventCount (KafkaMetrics): records whose offsets were committed, whatever
	// their outcome (succeeded, filtered out, given up).
	metricCommittedEventCount = "CommittedEventCount"
	// MaxOffsetLag, SumOffsetLag (KafkaMetrics): AWS's OffsetLag per partition, the high
	// watermark minus the committed offset, at its maximum over the partitions and summed.
	MetricMaxOffsetLag = "MaxOffsetLag"
	MetricSumOffsetLag = "SumOffsetLag"

	// ErrorCount group (Kafka). The AWS page lists polling, invocation, schema-registry,
	// commit and destination errors; these names were not checked against the page from here.
	metricPollingErrorCount                      = "PollingErrorCount"
	metricInvokeErrorCount                       = "InvokeErrorCount"
	metricSchemaRegistryErrorCount               = "SchemaRegistryErrorCount"
	metricCommitErrorCount                       = "CommitErrorCount"
	metricOnFailureDestinationDeliveryErrorCount = "OnFailureDestinationDeliveryErrorCount"
)

// WithMetricsConfig sets the mapping's MetricsConfig: the groups of metrics [Kafka.Metrics] and
// [SQS.Metrics] return, as CloudFormation's MetricsConfig.Metrics takes them: at most 3, each
// once, of [MetricsEventCount], [MetricsErrorCount] and [MetricsKafka]; the last two for Kafka
// mappings only. None by default (Metrics returns an empty map).
func WithMetricsConfig(groups ...string) Option {
	return option(func(c *mappingConfig) {
		if len(groups) > 3 {
			c.reject("WithMetricsConfig", "%d groups: at most 3", len(groups))
		}
		for i, g := range groups {
			switch {
			case g != MetricsEventCount && g != MetricsErrorCount && g != MetricsKafka:
				c.reject("WithMetricsConfig", "%q: want EventCount, ErrorCount or KafkaMetrics", g)
			case slices.Contains(groups[:i], g):
				c.reject("WithMetricsConfig", "%q twice", g)
			}
		}
		c.metrics = groups
	})
}

// checkMetrics rejects the Kafka-only groups for an SQS mapping.
func (c *mappingConfig) checkMetrics(kafka bool) {
	if kafka {
		return
	}
	for _, g := range c.metrics {
		if g == MetricsErrorCount || g == MetricsKafka {
			c.reject("WithMetricsConfig", "%q is for Kafka mappings only", g)
		}
	}
}

// metricCounts are the running sums behind the metrics that Counters does not hold.
type metricCounts struct {
	polled, failedInvoke, dropped, destDelivered, deleted, committed atomic.Int64
	pollErrors, invokeErrors, schemaErrors, commitErrors, destErrors atomic.Int64
}

// MetricGroups returns the MetricsConfig groups WithMetricsConfig enabled, in its order.
func (m *Kafka) MetricGroups() []string { return slices.Clone(m.cfg.metrics) }

// MetricGroups returns the MetricsConfig groups WithMetricsConfig enabled, in its order.
func (m *SQS) MetricGroups() []string { return slices.Clone(m.cfg.metrics) }

// Metrics returns the metrics of the groups WithMetricsConfig enabled, metric name to value, as
// CloudWatch would show them for the mapping since Run started (counts as the Sum statistic,
// lags as they are now).
func (m *Kafka) Metrics() map[string]int64 {
	out := map[string]int64{}
	mc, c := &m.metrics, &m.counters
	for _, g := range m.cfg.metrics {
		switch g {
		case MetricsEventCount:
			out[metricPolledEventCount] = mc.polled.Load()
			out[metricFilteredOutEventCount] = c.Filtered.Load()
			out[metricInvokedEventCount] = c.Delivered.Load()
			out[metricFailedInvokeEventCount] = mc.failedInvoke.Load()
			out[metricDroppedEventCount] = mc.dropped.Load()
			out[metricOnFailureDestinationDeliveredEventCount] = mc.destDelivered.Load()
		case MetricsErrorCount:
			out[metricPollingErrorCount] = mc.pollErrors.Load()
			out[metricInvokeErrorCount] = mc.invokeErrors.Load()
			out[metricSchemaRegistryErrorCount] = mc.schemaErrors.Load()
			out[metricCommitErrorCount] = mc.commitErrors.Load()
			out[metricOnFailureDestinationDeliveryErrorCount] = mc.destErrors.Load()
		case MetricsKafka:
			out[metricCommittedEventCount] = mc.committed.Load()
			var maxLag, sum int64
			m.mu.Lock()
			for _, l := range m.lag {
				v := l.offsetLag()
				maxLag, sum = max(maxLag, v), sum+v
			}
			m.mu.Unlock()
			out[MetricMaxOffsetLag], out[MetricSumOffsetLag] = maxLag, sum
		}
	}
	return out
}

// Metrics returns the metrics of the groups WithMetricsConfig enabled (only EventCount applies to an
// SQS mapping), metric name to value, as CloudWatch would show them for the mapping since Run
// started (the Sum statistic).
func (m *SQS) Metrics() map[string]int64 {
	out := map[string]int64{}
	mc, c := &m.metrics, &m.counters
	if slices.Contains(m.cfg.metrics, MetricsEventCount) {
		out[metricPolledEventCount] = mc.polled.Load()
		out[metricFilteredOutEventCount] = c.Filtered.Load()
		out[metricInvokedEventCount] = c.Delivered.Load()
		out[metricFailedInvokeEventCount] = mc.failedInvoke.Load()
		out[metricDeletedEventCount] = mc.deleted.Load()
	}
	return out
}
