package report_test

import (
	"fmt"
	"os"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

func ExamplePercentile() {
	ms := []float64{110, 120, 130, 140, 150, 160, 170, 180, 190, 900} // sorted
	p50, _ := report.Percentile(ms, 50)
	p99, _ := report.Percentile(ms, 99)
	fmt.Println(p50, p99)
	// Output: 150 900
}

func ExampleReport_Text() {
	r := report.Report{
		Tool: "klt local", Version: "dev",
		Machine:  report.Machine{GOOS: "linux", GOARCH: "amd64", CPUs: 2},
		Scenario: report.Scenario{Source: "records.jsonl", Keys: 50, Partitions: 5},
		Pipelines: []report.Pipeline{
			{Name: "direct", Functions: []string{"ConsumerFunction"}, Phase: report.PhaseLoad, Records: 500, Seconds: 30, RecordsPerSecond: 16.7,
				Lost: report.Observed(0), AppliedTwice: report.Observed(0), OrderViolations: report.Observed(0),
				Fates: map[string]int64{report.FateApplied: 500}, Observed: []string{"items written to OrdersTable"}},
			{Name: "fan-out", Functions: []string{"DispatcherFunction", "WorkerFunction"}, Phase: report.PhaseLoad, Records: 300, Seconds: 1, RecordsPerSecond: 300,
				Lost: report.Observed(0), AppliedTwice: report.Observed(0), OrderViolations: report.Unobservable, DeadLettered: 1,
				Fates:        map[string]int64{report.FateApplied: 299, report.FateDeadLettered: 1},
				Unobservable: []string{"the order of the calls to the payments API, outside the stack"}},
		},
		Faults: []report.Fault{
			{Pipeline: "fan-out", Fault: "poison", Record: "orders-2@17", Fate: report.FateDeadLettered,
				Outcome: "moved to WorkerDeadLetterQueue", Attempts: 3, Applied: report.Observed(0)},
		},
	}
	sp, err := report.NewSpeedup(r.Pipelines, "fan-out", "direct")
	if err != nil {
		fmt.Println(err)
		return
	}
	r.Speedup = sp
	if err := r.Text(os.Stdout); err != nil {
		fmt.Println(err)
	}
	// Output:
	// klt local dev
	// machine: linux/amd64, 2 CPUs
	// scenario: records.jsonl; 50 keys; 5 partitions; produced as fast as possible
	// records: direct 500; fan-out 300
	//
	// pipeline             direct             fan-out
	// functions            ConsumerFunction   DispatcherFunction -> WorkerFunction
	// phase                load               load
	// records              500                300
	// seconds              30.0               1.00
	// records/s            16.7               300
	// latency p50 ms       0                  0
	// latency p99 ms       0                  0
	// lost                 0                  0
	// applied twice        0                  0
	// order violations     0                  UNOBSERVABLE
	// failure queue        -                  -
	// dead-lettered        0                  1
	// filtered             0                  0
	// records retried      0                  0
	// duplicate requests   0                  0
	// failed invocations   0                  0
	// fates                applied 500        applied 299, dead-lettered 1
	//
	// what klt could and could not observe:
	//   direct: observed: items written to OrdersTable
	//   fan-out: NOT observable: the order of the calls to the payments API, outside the stack
	//
	// fan-out is 18.0x direct: 300 records/s against 16.7
	//
	// faults:
	//   pipeline   fault    record        fate            attempts   applied   outcome
	//   fan-out    poison   orders-2@17   dead-lettered          3         0   moved to WorkerDeadLetterQueue
	//
	// legend of the pipelines' counts:
	//   records             input records produced into the pipeline
	//   records/s           records not filtered, divided by the seconds from the first produced to the last one's fate
	//   latency             time from a record's production to its side effect (per resource: its first side effect there)
	//   lost                records whose fate klt did not observe: not applied, filtered, in a failure queue or dead-lettered
	//   applied twice       records whose side effect klt saw more than once
	//   order violations    records applied before an earlier record of the same key
	//   failure queue       messages on the failure queues of the pipeline's functions (the mappings saw a success), every one: a record sent twice (its batch delivered again) counts twice, and is named as a duplicate; the fates count it once
	//   dead-lettered       messages on the on-failure destinations and dead-letter queues of the pipeline's mappings (records a mapping gave up on), every one, duplicates named as for the failure queue
	//   filtered            records dropped by FilterCriteria
	//   records retried     records delivered more than once
	//   duplicate requests  requests for a side effect already applied, absorbed by the downstream's idempotency key
	//   failed invocations  invocations that failed as a whole (function error, timeout, crash)
	//   fates               each record's one fate: applied (side effect seen), succeeded (the mappings say so; no side effect observable), filtered, failure queue, dead-lettered, unfinished (run interrupted), lost
	//   attempts            deliveries of the record: the invocations that carried it, as klt observed them
	//   applied             times klt saw the record's side effect, on the resource that saw it most often (1: applied once everywhere)
	//   UNOBSERVABLE        klt could not observe this (see what the pipeline could not observe); never counted as 0
}
