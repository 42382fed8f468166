package report_test

import (
	"fmt"
	"os"

	"github.com/kafkalambda/toolkit/internal/report"
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
		Scenario: report.Scenario{Records: 500, Keys: 50, WorkMS: 300, Partitions: 5},
		Pipelines: []report.Pipeline{
			{Name: "direct", Functions: []string{"ConsumerFunction"}, Records: 500, Seconds: 30, RecordsPerSecond: 16.7},
			{Name: "fan-out", Functions: []string{"DispatcherFunction", "WorkerFunction"}, Records: 500, Seconds: 1, RecordsPerSecond: 500, DeadLettered: 1},
		},
		Faults: []report.Fault{
			{Pipeline: "fan-out", Fault: "poison", Record: "orders-2@17", Outcome: "sent to WorkerDeadLetterQueue", Attempts: 3},
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
	// scenario: 500 records, 50 keys, 300 ms of work per record, 5 partitions, produced as fast as possible
	//
	// pipeline             direct             fan-out
	// functions            ConsumerFunction   DispatcherFunction -> WorkerFunction
	// records              500                500
	// seconds              30.0               1.00
	// records/s            16.7               500
	// latency p50 ms       0                  0
	// latency p99 ms       0                  0
	// lost                 0                  0
	// applied twice        0                  0
	// order violations     0                  0
	// dead-lettered        0                  1
	// filtered             0                  0
	// retried              0                  0
	// duplicate requests   0                  0
	// failed invocations   0                  0
	//
	// fan-out is 29.9x direct: 500 records/s against 16.7
	//
	// faults:
	//   pipeline   fault    record        attempts   applied   outcome
	//   fan-out    poison   orders-2@17   3          0         sent to WorkerDeadLetterQueue
}
