package stackrun

import (
	"fmt"
	"path/filepath"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// The closed loop: klt local plans the stack it just ran from what it measured (the
// mappings' configuration and load figures, capacity.FromReport), makes the plan
// (capacity.Make, what `klt plan --from-report` makes from report.json), predicts this run
// from it (capacity.PredictRuns) and sets the prediction beside each load pipeline's
// measured throughput.

// predictStat is the statistic of the measured invocation times the prediction takes: a
// throughput is a mean, so the mean time predicts it (klt plan's default too).
const predictStat = capacity.StatMean

// predict sets Predicted on rep's load pipelines; when no prediction can be made, each says
// why (Predicted.Error) and klt says it on its output.
func (s *stack) predict(rep *report.Report) {
	var load []*report.Pipeline
	for i := range rep.Pipelines {
		if rep.Pipelines[i].Phase == report.PhaseLoad {
			load = append(load, &rep.Pipelines[i])
		}
	}
	if len(load) == 0 {
		return
	}
	fail := func(err error) {
		fmt.Fprintf(s.out, "klt local: no prediction of the throughput: %v\n", err)
		for _, p := range load {
			p.Predicted = &report.Predicted{Error: err.Error()}
		}
	}
	in, notes, err := capacity.FromReport(rep, predictStat)
	if err != nil {
		fail(err)
		return
	}
	plan, err := capacity.Make(in)
	if err != nil {
		fail(fmt.Errorf("the plan: %w", err))
		return
	}
	runs, err := capacity.PredictRuns(plan, rep, predictStat)
	if err != nil {
		fail(err)
		return
	}
	cmd := "klt plan --from-report report.json (the report klt local writes with --report DIR)"
	if s.c.Report != "" {
		cmd = "klt plan --from-report " + filepath.Join(s.c.Report, "report.json")
	}
	for _, p := range load {
		p.Predicted = &report.Predicted{Error: "klt plan predicts the first direct and the first fan-out pipeline of a run only"}
		for _, pr := range runs {
			if pr.Pipeline != p.Name {
				continue
			}
			p.Predicted = &report.Predicted{
				RecordsPerSecond: pr.RecordsPerSecond, SteadyRecordsPerSecond: pr.Steady, Bound: pr.Bound,
				Ratio: p.RecordsPerSecond / pr.RecordsPerSecond, Formula: pr.Formula, Command: cmd,
				Notes: append(append([]string(nil), notes...), pr.Notes...),
			}
		}
	}
}
