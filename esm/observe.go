package esm

import (
	"sync"
	"time"
)

// An Observer sees each step of every record's way through a mapping, as it happens: klt
// local's report follows each record with one, and package esmtest records them for a
// test's assertions. Observe is called from the mapping's goroutines, one event at a time per
// partition (Kafka) or message group (SQS FIFO), and must not block: the mapping waits for it.
type Observer interface {
	Observe(Event)
}

// EventKind is what happened to the records of an [Event].
type EventKind int

const (
	// Filtered: FilterCriteria dropped the records; they are committed or deleted and never
	// delivered.
	Filtered EventKind = iota + 1
	// Delivered: an invocation carrying the records starts.
	Delivered
	// Succeeded: the invocation succeeded for the records, and they are committed (Kafka) or
	// deleted (SQS). A record succeeds once.
	Succeeded
	// Failed: the invocation failed as a whole (Reason is its error), or its partial batch
	// response failed the records (Reason is "ReportBatchItemFailures"); they will be
	// retried or given up on.
	Failed
	// GaveUp: the mapping gave up on the records (Reason is the condition, such as
	// RetryAttemptsExhausted): sent to the on-failure destination, or committed without one
	// (Kafka); moved to the dead-letter queue (SQS).
	GaveUp
)

func (k EventKind) String() string {
	switch k {
	case Filtered:
		return "filtered"
	case Delivered:
		return "delivered"
	case Succeeded:
		return "succeeded"
	case Failed:
		return "failed"
	case GaveUp:
		return "gave up"
	}
	return "EventKind(?)"
}

// Event is one step of some records' way through a mapping.
type Event struct {
	Kind       EventKind
	Mapping    string // the mapping's name (WithName)
	Invocation int64  // the invocation (Delivered, Succeeded, Failed): 1 for the mapping's first; 0 otherwise
	Records    []RecordRef
	Reason     string // Failed: the invocation's error or "ReportBatchItemFailures"; GaveUp: the condition
	At         time.Time
}

// RecordRef names one record (Kafka) or message (SQS) of an Event.
type RecordRef struct {
	// Kafka: where the record is.
	Topic     string
	Partition int32
	Offset    int64

	// SQS: the message, and the string values of its message attributes (where a fan-out
	// message carries the Kafka record it came from).
	MessageID  string
	Attributes map[string]string
	// MessageGroupID is a FIFO queue's message's MessageGroupId ("" for a standard queue):
	// klt local counts the groups a run had, which bound a FIFO mapping's concurrency.
	MessageGroupID string
}

// WithObserver makes the mapping report each step of every record to o; none by default.
func WithObserver(o Observer) Option {
	return option(func(c *mappingConfig) {
		if o == nil {
			c.reject("WithObserver", "nil observer")
		}
		c.observer = o
	})
}

// notify reports e to the observer, if any, one event at a time: mu serialises the events of
// one mapping, whose goroutines report concurrently.
func (c *mappingConfig) notify(mu *sync.Mutex, e Event) {
	if c.observer == nil {
		return
	}
	e.Mapping, e.At = c.name, time.Now()
	mu.Lock()
	defer mu.Unlock()
	c.observer.Observe(e)
}
