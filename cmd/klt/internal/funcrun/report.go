package funcrun

import (
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/runtimeapi"
)

// FunctionReport is how the function fn ran on pool, for klt local's and klt invoke's reports.
func FunctionReport(fn string, pool *runtimeapi.Pool) report.Function {
	f := report.Function{Name: fn, LMIConcurrency: pool.LMIConcurrency(), Environments: []report.Environment{}, PastDeadline: []report.PastDeadline{}}
	for _, st := range pool.Stats() {
		f.Environments = append(f.Environments, report.Environment{N: st.N, Invocations: st.Invocations, MaxInFlight: st.MaxInFlight})
	}
	for _, o := range pool.Overruns() {
		p := report.PastDeadline{RequestID: o.RequestID, Environment: o.Instance, Deadline: o.Deadline}
		if !o.Answered.IsZero() {
			ms := o.Answered.Sub(o.Deadline).Milliseconds()
			p.OverMS = &ms
		}
		f.PastDeadline = append(f.PastDeadline, p)
	}
	return f
}
