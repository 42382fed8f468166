package esm

import (
	"errors"
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/filter"
)

// Both kinds of mapping are configured alike, as franz-go's kgo is: the source and the
// function are arguments of the constructor ([NewKafka], [NewSQS]), every other setting is an
// option. A setting both kinds have (the mapping's name, batch size, batching window,
// FilterCriteria, ReportBatchItemFailures) is one [Option], accepted by both constructors
// under one name; a setting of one kind only is a [KafkaOption] or an [SQSOption], and the
// compiler refuses it for the other kind. Each option's doc states its default for each kind.
// The constructors check every option before they do anything else and report all bad
// values at once, each as a [*toolkit.OptionError] (it matches [toolkit.ErrInvalidOption]).

// KafkaOption configures a Kafka mapping; pass it to [NewKafka].
type KafkaOption interface{ applyKafka(*kafkaConfig) }

// SQSOption configures an SQS mapping; pass it to [NewSQS].
type SQSOption interface{ applySQS(*sqsConfig) }

// Option is a setting both kinds of mapping have: it is a [KafkaOption] and an [SQSOption].
type Option interface {
	KafkaOption
	SQSOption
}

// mappingConfig holds the settings both kinds of mapping have.
type mappingConfig struct {
	name          string
	batchSize     int
	window        time.Duration
	filter        *filter.Criteria
	reportFailure bool
	observer      Observer
	metrics       []string       // WithMetricsConfig
	bad           []settingError // found while applying options
}

// settingError is a bad setting, before the mapping's name is known.
type settingError struct{ setting, reason string }

func (c *mappingConfig) reject(setting, format string, args ...any) {
	c.bad = append(c.bad, settingError{setting, fmt.Sprintf(format, args...)})
}

// configErr returns the bad settings as one error of *toolkit.OptionError values (Package
// "esm", Option the setting, Reason naming the kind and the mapping), or nil.
func (c *mappingConfig) configErr(kind string) error {
	errs := make([]error, len(c.bad))
	for i, b := range c.bad {
		errs[i] = &toolkit.OptionError{Package: "esm", Option: b.setting, Reason: fmt.Sprintf("%s mapping %q: %s", kind, c.name, b.reason)}
	}
	return errors.Join(errs...)
}

// checkBatching checks the batch size and window against the limits both kinds share.
func (c *mappingConfig) checkBatching(maxBatch int, maxWindow time.Duration) {
	if c.batchSize < 1 || c.batchSize > maxBatch {
		c.reject("WithBatchSize", "%d: want 1 to %d", c.batchSize, maxBatch)
	}
	if c.window < 0 || c.window > maxWindow {
		c.reject("WithBatchingWindow", "%v: want 0 to %v", c.window, maxWindow)
	}
}

// option is an Option: a change to the settings both kinds have.
type option func(*mappingConfig)

func (o option) applyKafka(c *kafkaConfig) { o(&c.mappingConfig) }
func (o option) applySQS(c *sqsConfig)     { o(&c.mappingConfig) }

// kafkaOption is a KafkaOption.
type kafkaOption func(*kafkaConfig)

func (o kafkaOption) applyKafka(c *kafkaConfig) { o(c) }

// sqsOption is an SQSOption.
type sqsOption func(*sqsConfig)

func (o sqsOption) applySQS(c *sqsConfig) { o(c) }

// WithName names the mapping (its logical ID in the template) in errors and, for Kafka, in
// the default group ID. The default is the topic (Kafka) or the queue URL (SQS).
func WithName(name string) Option { return option(func(c *mappingConfig) { c.name = name }) }

// WithBatchSize sets the most records (Kafka) or messages (SQS) in one invocation. Kafka: 1
// to 10,000, default 100. SQS: 1 to [limits.MaxSQSBatchSize] for a standard queue, which
// above 10 needs a batching window of at least one second, and 1 to [limits.MaxSQSFIFOBatchSize]
// for a FIFO queue; default [SQSDefaultBatchSize] (10).
func WithBatchSize(n int) Option { return option(func(c *mappingConfig) { c.batchSize = n }) }

// WithBatchingWindow sets MaximumBatchingWindowInSeconds: how long a batch that is not full
// waits for more, counted from the arrival of its first record, 0 to 300 s. Kafka: default
// 500 ms, Kafka's default. SQS: default 0, which invokes with what one ReceiveMessage
// returned; a FIFO queue's mapping takes none (NewSQS fails on a positive window).
func WithBatchingWindow(d time.Duration) Option {
	return option(func(c *mappingConfig) { c.window = d })
}

// WithFilter sets the mapping's FilterCriteria (see [filter.ParseCriteria]); by default every
// record or message is delivered. Kafka: a record the criteria cannot decide on is
// delivered. SQS: a message that matches no filter is deleted from the queue and never
// delivered, as Lambda does; when the filter cannot tell (filter.ErrTooComplex), Run stops
// with the error and leaves the message in the queue rather than guess.
func WithFilter(f *filter.Criteria) Option {
	return option(func(c *mappingConfig) {
		if f == nil {
			c.reject("WithFilter", "nil criteria")
		}
		c.filter = f
	})
}

// WithReportBatchItemFailures makes the mapping read the function's response as a partial
// batch response (FunctionResponseTypes: [ReportBatchItemFailures]). By default the response
// is ignored: a batch fails only when the invocation does, and a successful invocation
// commits (Kafka) or deletes (SQS) the whole batch.
func WithReportBatchItemFailures() Option {
	return option(func(c *mappingConfig) { c.reportFailure = true })
}
