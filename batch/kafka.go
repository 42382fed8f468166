package batch

import (
	"context"
	"encoding/json"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// RecordFunc handles one Kafka record. Returning an error fails the record; wrap it
// with Permanent when retrying cannot help.
type RecordFunc func(ctx context.Context, r *kafkaevent.Record) error

// KafkaResponse is the partial-batch response of a Kafka event source mapping with
// ReportBatchItemFailures. It marshals as
// {"batchItemFailures":[{"itemIdentifier":{"partition":"topic-N","offset":N}}]}, with an
// empty list on full success.
type KafkaResponse struct {
	BatchItemFailures []KafkaItemFailure `json:"batchItemFailures"`
}

// KafkaItemFailure identifies a failed record: unlike every other source, Kafka's
// itemIdentifier is an object.
type KafkaItemFailure struct {
	ItemIdentifier KafkaItemIdentifier `json:"itemIdentifier"`
}

// KafkaItemIdentifier is the partition key ("topic-N") and offset of a failed record.
type KafkaItemIdentifier struct {
	Partition string `json:"partition"`
	Offset    int64  `json:"offset"`
}

// MarshalJSON writes an empty list, never null, for a full success.
func (r KafkaResponse) MarshalJSON() ([]byte, error) {
	type plain KafkaResponse
	if r.BatchItemFailures == nil {
		r.BatchItemFailures = []KafkaItemFailure{}
	}
	return json.Marshal(plain(r))
}

// ProcessKafka runs h on every record of the batch and returns the partial-batch response.
//
// Partitions are processed in parallel (WithConcurrency bounds how many at once), and the
// records of one partition strictly one after another, in delivered order; with
// WithKeyConcurrency, the records of one key one after another, keys at once (see the
// package documentation, "Key concurrency", for what is reported then). When a record
// fails (an error after its retries, a panic, or a decode error in Record.Err), its partition
// stops: that record and every later record of the partition are reported, so that Lambda
// delivers them again in order; other partitions go on. Reporting the later records too is
// deliberate: AWS does not document whether Kafka resumes from the lowest reported offset,
// and this is correct under either reading.
//
// Near the deadline (the context's, less WithDeadlineMargin) records are no longer started
// and are reported, and the handler's context is cancelled, so that the function returns its
// response before Lambda's timeout would retry the whole batch.
//
// Each failed record is logged (see WithLogger) and given to the FailureHooks (see WithHooks).
//
// The error is nil, unless an option was given an invalid value (a *toolkit.OptionError: no
// record is handled), or WithErrorWhenAllFail is set and every record failed (ErrAllFailed).
func ProcessKafka(ctx context.Context, ev *kafkaevent.Event, h RecordFunc, opts ...Option) (KafkaResponse, error) {
	cfg := kafkaConfig(opts)
	if cfg.err != nil {
		return KafkaResponse{}, cfg.err
	}
	info := &BatchInfo{Source: "kafka", Records: ev.Len(), Groups: len(ev.Partitions)}
	failures := make([][]KafkaItemFailure, len(ev.Partitions))
	s := &unitSet{
		len:   func(i int) int { return len(ev.Partitions[i].Records) },
		item:  func(i, k int) Item { return Item{Kafka: &ev.Partitions[i].Records[k]} },
		group: func(i int) string { return ev.Partitions[i].ID() },
		info: func(i int) *GroupInfo {
			p := &ev.Partitions[i]
			return &GroupInfo{Source: "kafka", ID: p.ID(), Partition: p}
		},
		do: func(ctx context.Context, i, k int, u *unit) *failure {
			r := &ev.Partitions[i].Records[k]
			return cfg.record(ctx, Item{Kafka: r}, func(ctx context.Context) error { return h(ctx, r) }, u)
		},
		report: func(i, k int) {
			p := &ev.Partitions[i]
			out := make([]KafkaItemFailure, 0, len(p.Records)-k)
			for _, r := range p.Records[k:] {
				out = append(out, KafkaItemFailure{KafkaItemIdentifier{Partition: p.ID(), Offset: r.Offset}})
			}
			failures[i] = out
		},
	}
	units := len(ev.Partitions)
	if cfg.keyConcurrency > 0 {
		var ks *keySet
		ks, s = newKeySet(s, units, func(i, k int) []byte { return ev.Partitions[i].Records[k].Key },
			func(i int, idx []int) *GroupInfo {
				// The group of the hooks is the key's sequence: its partition, with its records.
				p := ev.Partitions[i]
				p.Records = make([]kafkaevent.Record, len(idx))
				for n, k := range idx {
					p.Records[n] = ev.Partitions[i].Records[k]
				}
				return &GroupInfo{Source: "kafka", ID: p.ID(), Partition: &p}
			})
		units = len(ks.idx)
		cfg.concurrency = cfg.keyConcurrency
	}
	var resp KafkaResponse
	if err := cfg.runBatch(ctx, info, s, units, func() {
		for _, f := range failures {
			resp.BatchItemFailures = append(resp.BatchItemFailures, f...)
		}
		if resp.BatchItemFailures == nil {
			resp.BatchItemFailures = []KafkaItemFailure{}
		}
	}); err != nil {
		return KafkaResponse{}, err // a panic where no record was in hand: the invocation fails
	}
	if cfg.errorOnAllFail && len(resp.BatchItemFailures) > 0 && len(resp.BatchItemFailures) == ev.Len() {
		return resp, ErrAllFailed
	}
	return resp, nil
}

// KafkaHandler returns the handler for lambda.Start that processes each batch with
// ProcessKafka, h and opts:
//
//	lambda.Start(batch.KafkaHandler(h))
//
// It is a KafkaFunc, which implements lambda.Handler, so that the payload goes straight to
// kafkaevent.Parse. The options are checked here, once: with an option given an invalid
// value, every invocation of the handler fails with its error (a *toolkit.OptionError), as
// aws-lambda-go's handler does for a function it cannot call.
func KafkaHandler(h RecordFunc, opts ...Option) KafkaFunc {
	if err := kafkaConfig(opts).err; err != nil {
		return func(context.Context, *kafkaevent.Event) (KafkaResponse, error) { return KafkaResponse{}, err }
	}
	return func(ctx context.Context, ev *kafkaevent.Event) (KafkaResponse, error) {
		return ProcessKafka(ctx, ev, h, opts...)
	}
}

// KafkaFunc is a Lambda handler for Kafka batches. It also implements lambda.Handler, which
// lambda.Start prefers: the payload bytes then go straight to kafkaevent.Parse, without the
// pass encoding/json would make over the whole batch first.
type KafkaFunc func(ctx context.Context, ev *kafkaevent.Event) (KafkaResponse, error)

// Invoke implements lambda.Handler.
func (f KafkaFunc) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		return nil, err
	}
	resp, err := f(ctx, ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// kafkaConfig is the configuration of a Kafka batch: the options, checked.
func kafkaConfig(opts []Option) config {
	cfg := newConfig(opts)
	if cfg.sqsRecord != nil {
		cfg.invalid("WithSQSKafkaRecord: applies to SQS messages; ProcessKafka has the records themselves")
	}
	cfg.useMetrics("kafka")
	return cfg
}
