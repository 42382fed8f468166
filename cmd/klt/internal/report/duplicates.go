package report

import (
	"fmt"
	"slices"
	"strings"
)

// Messages on failure and dead-letter queues, every one counted: a record can reach a queue
// twice (a failure queue, when its batch was delivered again after the function had sent it
// there; a standard queue keeps both copies), and the queue then holds two messages for one
// record. The fates count the record once; these counts say how many messages the queues
// hold, and name the records that are there more than once.

// Duplicate is a record that reached one queue of a pipeline more than once.
type Duplicate struct {
	// Queue names the queue or topic (FailedMessage.Queue).
	Queue string `json:"queue"`
	// Kind is the queue's kind (FailedMessage.Kind).
	Kind string `json:"kind"`
	// Record is the record, "topic-partition@offset".
	Record string `json:"record"`
	// Messages is how many messages carry it there: 2 or more.
	Messages int64 `json:"messages"`
}

// SetFailedMessages sets the pipeline's FailureQueueMessages, DeadLetterMessages and
// Duplicates from ms, the messages klt read on failure queues, on-failure destinations and
// dead-letter queues: those of the pipeline (FailedMessage.Pipeline is its Name), each
// counted. FailureQueueMessages stays unobservable when FailureQueue is (the pipeline has no
// failure queue klt reads).
func (p *Pipeline) SetFailedMessages(ms []FailedMessage) {
	fq, dl, dups := failedCounts(p.Name, ms)
	p.FailureQueueMessages = Unobservable
	if p.FailureQueue.IsObserved() {
		p.FailureQueueMessages = Observed(fq)
	}
	p.DeadLetterMessages = Observed(dl)
	p.Duplicates = dups
}

// failedCounts counts pipeline's messages in ms: on failure queues, on the other queues, and
// the records on one queue more than once, in the order their first message was read.
func failedCounts(pipeline string, ms []FailedMessage) (failureQueue, deadLetter int64, dups []Duplicate) {
	type at struct{ queue, kind, record string }
	n := map[at]int64{}
	var order []at
	for _, m := range ms {
		if m.Pipeline != pipeline {
			continue
		}
		if m.Kind == FailureQueueKind {
			failureQueue++
		} else {
			deadLetter++
		}
		if m.Record == "" {
			continue // no record named: not a duplicate of anything
		}
		k := at{m.Queue, m.Kind, m.Record}
		if n[k] == 0 {
			order = append(order, k)
		}
		n[k]++
	}
	for _, k := range order {
		if n[k] > 1 {
			dups = append(dups, Duplicate{Queue: k.queue, Kind: k.kind, Record: k.record, Messages: n[k]})
		}
	}
	return failureQueue, deadLetter, dups
}

// validateMessages checks that the pipeline's message counts and duplicates are those of the
// report's failed messages. A report written before the counts were (they are null) is not
// checked.
func (p *Pipeline) validateMessages(ms []FailedMessage) error {
	fq, dl, dups := failedCounts(p.Name, ms)
	if n, ok := p.FailureQueueMessages.Value(); ok && n != fq {
		return fmt.Errorf("report: pipeline %q: failure_queue_messages is %d, but failed_messages has %d of its failure queues", p.Name, n, fq)
	}
	if n, ok := p.DeadLetterMessages.Value(); ok && n != dl {
		return fmt.Errorf("report: pipeline %q: dead_letter_messages is %d, but failed_messages has %d of its on-failure destinations and dead-letter queues", p.Name, n, dl)
	}
	if (p.FailureQueueMessages.IsObserved() || p.DeadLetterMessages.IsObserved()) && !slices.Equal(p.Duplicates, dups) {
		return fmt.Errorf("report: pipeline %q: duplicates %v, but failed_messages has %v", p.Name, p.Duplicates, dups)
	}
	return nil
}

// queueText is a pipeline's count of messages on queues of the kinds kind selects, with
// the duplicates named: "2 (1 duplicate: orders-0@12)". Without a count of messages (a
// report of an earlier version), it is the count of records, records.
func queueText(messages Count, records string, dups []Duplicate, kind func(string) bool) string {
	n, ok := messages.Value()
	if !ok {
		return records
	}
	var extra int64
	var names []string
	for _, d := range dups {
		if kind(d.Kind) {
			extra += d.Messages - 1
			if len(names) < maxDuplicateNames {
				names = append(names, d.Record)
			}
		}
	}
	text := fmt.Sprint(n)
	if extra == 0 {
		return text
	}
	s := "s"
	if extra == 1 {
		s = ""
	}
	list := strings.Join(names, ", ")
	if more := len(dupsOf(dups, kind)) - len(names); more > 0 {
		list += fmt.Sprintf(" and %d more", more)
	}
	return fmt.Sprintf("%s (%d duplicate%s: %s)", text, extra, s, list)
}

// maxDuplicateNames bounds the records a count names; report.json lists them all.
const maxDuplicateNames = 3

func dupsOf(dups []Duplicate, kind func(string) bool) []Duplicate {
	var out []Duplicate
	for _, d := range dups {
		if kind(d.Kind) {
			out = append(out, d)
		}
	}
	return out
}

func isFailureQueue(kind string) bool { return kind == FailureQueueKind }
func isDeadLetter(kind string) bool   { return kind != FailureQueueKind }

// failureQueueText is the pipeline's "failure queue" figure: its failure queues' messages,
// duplicates named; "-" when it has none klt reads.
func failureQueueText(p Pipeline) string {
	if !p.FailureQueue.IsObserved() {
		return "-"
	}
	return queueText(p.FailureQueueMessages, countOrDash(p.FailureQueue), p.Duplicates, isFailureQueue)
}

// deadLetteredText is the pipeline's "dead-lettered" figure: the messages on its on-failure
// destinations and dead-letter queues, duplicates named.
func deadLetteredText(p Pipeline) string {
	return queueText(p.DeadLetterMessages, fmt.Sprint(p.DeadLettered), p.Duplicates, isDeadLetter)
}
