package capacity

import (
	"errors"

	"github.com/kafkalambda/toolkit/internal/report"
)

// FromReport makes an Input from a klt local report: the stack's configuration as the run
// had it (partitions, batch sizes, windows, the SQS mapping's MaximumConcurrency, the local
// concurrency) and the durations it measured per function, taken at stat ("mean", "p50" or
// "p99"). Rate is the measured records per second of the run's direct pipeline (the caller
// may override it). The notes say what was read and what was assumed.
func FromReport(r *report.Report, stat string) (in Input, notes []string, err error) {
	return Input{}, nil, errors.New("capacity: FromReport not implemented")
}
