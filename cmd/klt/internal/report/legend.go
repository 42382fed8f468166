package report

import (
	"fmt"
	"io"
	"strings"
)

// Definition is one counter of the report and what it counts. The report prints them as its
// legend, one line each, so that no figure needs a guess.
type Definition struct {
	Term, Meaning string
}

// MappingDefinitions define the columns of the mappings table and of the live display. They
// are the mapping's own counters ([esm.Counters]), of records (Kafka) or messages (SQS),
// except "failure queue", which klt observed.
var MappingDefinitions = []Definition{
	{"in", "records taken from the source (a topic, or a queue: messages)"},
	{"delivered", "deliveries: each record once per invocation that carried it"},
	{"succeeded", "records done: their invocation succeeded for them and they were committed or deleted (records the function sent to its own failure queue included)"},
	{"failure queue", "records the function sent to its own failure queue, as klt read them there (counted in succeeded: the function reported success for them); - when it has none klt reads"},
	{"reported failed", "deliveries the function's partial batch response failed (Kafka: from the lowest offset it reported)"},
	{"error failed", "deliveries in an invocation that failed as a whole (function error, timeout, crash, bad response)"},
	{"retried", "deliveries of a record after its first"},
	{"dead-lettered", "records the mapping gave up on: sent to its on-failure destination (Kafka) or moved to its queue's dead-letter queue (SQS)"},
	{"filtered", "records dropped by FilterCriteria: committed or deleted, never delivered"},
	{"in flight", "records in an invocation right now"},
	{"lag", "records in the source not yet delivered (Kafka: per partition, high watermark minus the next offset to deliver; SQS: messages visible in the queue)"},
	{"invocations", "invocations made"},
	{"failed invocations", "invocations that failed as a whole"},
	{"succeeded/s, applied/s", "(live display) records the mappings say succeeded, and records klt saw applied (a record with side effects at two resources, as the sample consumer's order sent to the orders API and its idempotency entry, counts once), per second over the last second"},
}

// PipelineDefinitions define the rows of the pipelines table and the columns of the tables of
// records, resources and faults. A pipeline counts input records, each once, wherever they
// went through its mappings.
var PipelineDefinitions = []Definition{
	{"records", "input records produced into the pipeline"},
	{"records/s", "records not filtered, divided by the seconds from the first produced to the last one's fate"},
	{"latency", "time from a record's production to its side effect (per resource: its first side effect there)"},
	{"lost", "records whose fate klt did not observe: not applied, filtered, in a failure queue or dead-lettered"},
	{"applied twice", "records whose side effect klt saw more than once"},
	{"order violations", "records applied before an earlier record of the same key"},
	{"failure queue", "messages on the failure queues of the pipeline's functions (the mappings saw a success), every one: a record sent twice (its batch delivered again) counts twice, and is named as a duplicate; the fates count it once"},
	{"dead-lettered", "messages on the on-failure destinations and dead-letter queues of the pipeline's mappings (records a mapping gave up on), every one, duplicates named as for the failure queue"},
	{"filtered", "records dropped by FilterCriteria"},
	{"records retried", "records delivered more than once"},
	{"duplicate requests", "requests for a side effect already applied, absorbed by the downstream's idempotency key"},
	{"failed invocations", "invocations that failed as a whole (function error, timeout, crash)"},
	{"fates", "each record's one fate: applied (side effect seen), succeeded (the mappings say so; no side effect observable), filtered, failure queue, dead-lettered, unfinished (run interrupted), lost"},
	{"attempts", "deliveries of the record: the invocations that carried it, as klt observed them"},
	{"applied", "times klt saw the record's side effect, on the resource that saw it most often (1: applied once everywhere)"},
	{"UNOBSERVABLE", "klt could not observe this (see what the pipeline could not observe); never counted as 0"},
}

// WriteLegend writes defs as a legend: a title line, then one line per counter.
func WriteLegend(w io.Writer, title string, defs []Definition) error {
	width := 0
	for _, d := range defs {
		width = max(width, len(d.Term))
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s:\n", title)
	for _, d := range defs {
		fmt.Fprintf(&b, "  %-*s  %s\n", width, d.Term, d.Meaning)
	}
	_, err := io.WriteString(w, b.String())
	return err
}
