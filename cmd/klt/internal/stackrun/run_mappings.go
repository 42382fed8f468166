package stackrun

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// loggedInvoker writes one line to the function's log for each invocation that fails as a
// whole (a function error, a timeout, a crash), which the function itself may never log.
type loggedInvoker struct {
	esm.Invoker
	mapping string
	log     io.Writer
}

func (l loggedInvoker) Invoke(ctx context.Context, payload []byte) (esm.Response, error) {
	resp, err := l.Invoker.Invoke(ctx, payload)
	if resp.Err != nil {
		fmt.Fprintf(l.log, "[klt] %s: invocation failed: %s\n", l.mapping, clitext.OneLine(resp.Err.Error()))
	}
	return resp, err
}

// running is a mapping running in one phase.
type running struct {
	spec     *samspec.MappingSpec
	counters *esm.Counters
	kafka    *esm.Kafka // nil for SQS
	sqs      *esm.SQS   // nil for Kafka
	done     chan error
}

// startMappings starts the mappings specs for a phase, with the template's options
// (samstack's KafkaOptions and SQSOptions) and klt's observer: Kafka mappings each with a
// consumer group of their own for the phase, starting at since, so that a phase reads its own
// records; with phase "" (serving), the template's groups and starting positions.
func (s *stack) startMappings(ctx context.Context, specs []*samspec.MappingSpec, phase string, since time.Time) ([]*running, error) {
	var out []*running
	for _, m := range specs {
		inv := loggedInvoker{s.pools[m.Function], m.Id, s.logs[m.Function]}
		r := &running{spec: m, done: make(chan error, 1)}
		var run func(context.Context) error
		switch m.Kind {
		case samspec.KafkaMapping:
			opts, err := m.KafkaOptions(s.ls.Resolver, samspec.KafkaTargets{Brokers: s.brokers, SQS: s.sqsClient})
			if err != nil {
				return out, err
			}
			opts = append(opts, esm.WithObserver(s.obs.mappings(phase)))
			if phase != "" {
				opts = append(opts, esm.WithGroupID(m.GroupID+"-"+phase), esm.WithStartingTimestamp(since))
			}
			opts = append(s.kafkaOptions(), opts...) // the template's MetricsConfig wins
			k, err := esm.NewKafka(s.brokers, m.Topics[0], inv, opts...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Id, err)
			}
			r.kafka, r.counters, run = k, k.Counters(), k.Run
		case samspec.SqsMapping:
			opts, err := m.SQSOptions(s.ls.Resolver)
			if err != nil {
				return out, err
			}
			// Every group for a mapping whose template enables none; the template's wins.
			opts = append([]esm.SQSOption{esm.WithMetricsConfig(sqsMetricGroups...)}, opts...)
			opts = append(opts, esm.WithObserver(s.obs.mappings(phase)))
			q, err := esm.NewSQS(ctx, s.sqsClient, s.ls.Resolver.QueueURLs[m.Queue], inv, opts...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Id, err)
			}
			r.sqs, r.counters, run = q, q.Counters(), q.Run
		}
		go func() { r.done <- run(ctx) }()
		out = append(out, r)
	}
	return out, nil
}

// kafkaOptions are the options klt local gives every Kafka mapping before the template's:
// every MetricsConfig group, for a mapping whose template enables none (one that does gets its
// own groups only, as CloudWatch would show them: the template's option comes later and wins),
// and one partition per invocation when the flag asks.
func (s *stack) kafkaOptions() []esm.KafkaOption {
	opts := []esm.KafkaOption{esm.WithMetricsConfig(kafkaMetricGroups...)}
	if s.c.OnePartitionPerInvocation {
		opts = append(opts, esm.WithOnePartitionPerInvocation())
	}
	return opts
}

// The MetricsConfig groups klt local enables, per kind of mapping (ErrorCount and
// KafkaMetrics are Kafka-only).
var (
	kafkaMetricGroups = []string{esm.MetricsEventCount, esm.MetricsErrorCount, esm.MetricsKafka}
	sqsMetricGroups   = []string{esm.MetricsEventCount}
)

// deadLetterQueueOf returns the logical ID of queue's dead-letter queue (its RedrivePolicy's
// deadLetterTargetArn), or "".
func (s *stack) deadLetterQueueOf(queue string) string {
	q, ok := s.ls.Resolver.Queues[queue]
	if !ok || q.Attrs["RedrivePolicy"] == nil {
		return ""
	}
	v, err := s.ls.Resolver.Eval(q.Attrs["RedrivePolicy"], queue+".RedrivePolicy")
	if err != nil {
		return ""
	}
	rp, _ := v.(map[string]any)
	arn, _ := rp["deadLetterTargetArn"].(string)
	id, _ := samspec.QueueByARN(s.ls.Resolver, arn)
	return id
}
