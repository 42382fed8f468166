package batch

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A Sink is a failure destination: a record that cannot succeed goes there, and its
// partition moves on. If Send fails, the record is reported as failed instead, so that it is
// never lost.
type Sink interface {
	Send(ctx context.Context, e *Envelope) error
}

// SinkPolicy says which failed records go to the sink.
type SinkPolicy int

const (
	// SinkPermanent sends records that retrying cannot fix: errors marked Permanent, panics,
	// records that do not decode, and payload mismatches under idempotency.
	SinkPermanent SinkPolicy = iota
	// SinkExhausted also sends records that failed every attempt with ordinary errors.
	SinkExhausted
)

// WithSink sends the records the policy selects to s instead of reporting them, so that one
// record that cannot succeed does not hold up its partition. A record the sink refuses is
// reported instead, and logged with the sink's error. By default there is no sink: every
// failed record is reported to Lambda. A sink with a method Err() error that returns an error
// (one made with an option given an invalid value, such as sqssink.New's) makes the option
// invalid with that error.
//
// Under WithIdempotency a record is given to the sink while its key is held, and the sink
// taking it completes the key with the outcome "sunk" (the entry's data is
// {"outcome":"sunk"}, its status COMPLETED, which Powertools' editions read as a completed
// record): a redelivery of its batch skips it, counted as replayed, with one line at level
// Info, "record already sent to the sink", rather than send it again. A sink that refuses it
// leaves the key released: the record is reported and offered again when it comes back.
// Without WithIdempotency nothing records that a record was sunk, and a batch delivered again
// sends its failed records again: a batch/sqssink Sink on a FIFO queue deduplicates them
// within SQS's five-minute interval; a standard queue, or a Kafka topic, may get a record
// twice.
func WithSink(s Sink, policy SinkPolicy) Option {
	return func(c *config) {
		if s == nil {
			c.invalid("WithSink(nil, %d): want a sink", policy)
		} else if policy != SinkPermanent && policy != SinkExhausted {
			c.invalid("WithSink(%T, %d): unknown policy", s, policy)
		} else if v, ok := s.(interface{ Err() error }); ok && c.err == nil {
			c.err = v.Err() // a sink made with an invalid option (sqssink.New's)
		}
		c.sink, c.sinkPolicy = s, policy
	}
}

// ErrMessageTooLarge is the error of a record whose message would exceed its destination's
// size limit: the queue of a batch/sqssink Sink, or the queue of package fanout's Dispatcher.
// The record is then reported as failed (or, from the Dispatcher, given to its sink) rather
// than lost.
var ErrMessageTooLarge = errors.New("batch: message too large")

// EnvelopeVersion is the version of the Envelope format.
const EnvelopeVersion = 1

// Envelope is what a sink receives, and writes as JSON: the original record (key and value in
// base64), the error, the attempts, and when it happened. ReadEnvelope reads it back.
type Envelope struct {
	Version int    `json:"version"`
	Source  string `json:"source"` // "kafka" or "sqs"
	// Kafka records.
	Topic         string           `json:"topic,omitempty"`
	Partition     int32            `json:"partition"`
	Offset        int64            `json:"offset"`
	Timestamp     *time.Time       `json:"timestamp,omitempty"`
	TimestampType string           `json:"timestampType,omitempty"`
	Key           []byte           `json:"key"`   // base64 in JSON; null when absent
	Value         []byte           `json:"value"` // base64 in JSON; null for a tombstone
	Tombstone     bool             `json:"tombstone,omitempty"`
	Headers       []EnvelopeHeader `json:"headers,omitempty"`
	// SQS messages.
	Message *events.SQSMessage `json:"message,omitempty"`
	// The failure.
	Error        string    `json:"error"`
	Permanent    bool      `json:"permanent"`
	Attempts     int       `json:"attempts"`
	FirstAttempt time.Time `json:"firstAttempt"`
	FailedAt     time.Time `json:"failedAt"`
}

// EnvelopeHeader is a Kafka header in an Envelope; Value is base64 in JSON.
type EnvelopeHeader struct {
	Key   string `json:"key"`
	Value []byte `json:"value"`
}

// ReadEnvelope reads an envelope a sink wrote.
func ReadEnvelope(data []byte) (*Envelope, error) {
	var e Envelope
	if err := json.Unmarshal(data, &e); err != nil {
		return nil, fmt.Errorf("batch: envelope: %w", err)
	}
	if e.Version != EnvelopeVersion {
		return nil, fmt.Errorf("batch: envelope version %d, want %d", e.Version, EnvelopeVersion)
	}
	if len(e.Headers) == 0 {
		e.Headers = nil // "headers":[] and no headers are the same record (found by FuzzReadEnvelope)
	}
	return &e, nil
}

// Record returns the Kafka record an envelope holds.
func (e *Envelope) Record() *kafkaevent.Record {
	r := &kafkaevent.Record{Topic: e.Topic, Partition: e.Partition, Offset: e.Offset, TimestampType: e.TimestampType, Key: e.Key}
	if e.Timestamp != nil {
		r.Timestamp = e.Timestamp.UTC()
	}
	if !e.Tombstone {
		r.Value = e.Value
		if r.Value == nil {
			r.Value = []byte{}
		}
	}
	for _, h := range e.Headers {
		r.Headers = append(r.Headers, kafkaevent.Header{Key: h.Key, Value: h.Value})
	}
	return r
}

func kafkaEnvelope(r *kafkaevent.Record, f *failure) *Envelope {
	e := &Envelope{Version: EnvelopeVersion, Source: "kafka", Topic: r.Topic, Partition: r.Partition,
		Offset: r.Offset, TimestampType: r.TimestampType, Key: r.Key, Value: r.Value, Tombstone: r.Value == nil}
	if !r.Timestamp.IsZero() {
		t := r.Timestamp
		e.Timestamp = &t
	}
	for _, h := range r.Headers {
		e.Headers = append(e.Headers, EnvelopeHeader{Key: h.Key, Value: h.Value})
	}
	f.fill(e)
	return e
}

func sqsEnvelope(m *events.SQSMessage, f *failure) *Envelope {
	e := &Envelope{Version: EnvelopeVersion, Source: "sqs", Message: m}
	f.fill(e)
	return e
}

// failure is what is known about a record that failed.
type failure struct {
	err       error
	permanent bool
	attempts  int
	first     time.Time
	last      time.Time
	store     bool  // the idempotency store, not the handler, failed the record
	sunk      bool  // the sink took the record
	offered   bool  // the record was given to the sink (or not, its unit sealed): never again
	sinkErr   error // the sink's error, when it refused the record
}

// error returns the failure's error, or nil for no failure.
func (f *failure) error() error {
	if f == nil {
		return nil
	}
	return f.err
}

func (f *failure) fill(e *Envelope) {
	e.Error, e.Permanent, e.Attempts, e.FirstAttempt, e.FailedAt = f.err.Error(), f.permanent, f.attempts, f.first.UTC(), f.last.UTC()
}
