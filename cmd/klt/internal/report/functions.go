package report

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Function is how one function of the stack ran: its model, its execution environments and
// the most invocations each ran at once, and, for a Lambda Managed Instances function, the
// invocations that ran past their deadline (LMI does not stop them).
type Function struct {
	Name string `json:"name"`
	// LMIConcurrency is the invocations one execution environment runs at once for a Lambda
	// Managed Instances function (its PerExecutionEnvironmentMaxConcurrency); 0 for a
	// function run in Lambda's default model, one invocation per environment at a time.
	LMIConcurrency int `json:"lmi_concurrency"`
	// Environments are its execution environments (processes), in start order.
	Environments []Environment `json:"environments"`
	// PastDeadline are the LMI invocations that ran past their deadline: the caller got
	// Sandbox.Timedout at the deadline and the process went on with it.
	PastDeadline []PastDeadline `json:"past_deadline"`
}

// Environment is one execution environment of a function.
type Environment struct {
	N           int `json:"n"`             // 1, 2, ... in start order, as in the function's log lines "[N]"
	Invocations int `json:"invocations"`   // events handed to it
	MaxInFlight int `json:"max_in_flight"` // the most invocations it ran at once
}

// PastDeadline is an invocation that ran past its deadline.
type PastDeadline struct {
	RequestID   string    `json:"request_id"`
	Environment int       `json:"environment"`
	Deadline    time.Time `json:"deadline"`
	// OverMS is how long after its deadline the process answered, in milliseconds; null when
	// it had not answered when the run ended.
	OverMS *int64 `json:"over_ms"`
}

// validateFunctions checks r.Functions.
func (r *Report) validateFunctions() error {
	seen := map[string]bool{}
	for i, f := range r.Functions {
		if f.Name == "" || seen[f.Name] {
			return fmt.Errorf("report: functions[%d]: no name, or a duplicate one (%q)", i, f.Name)
		}
		seen[f.Name] = true
		per := max(1, f.LMIConcurrency)
		for _, e := range f.Environments {
			if e.MaxInFlight < 0 || e.MaxInFlight > per || e.MaxInFlight > e.Invocations {
				return fmt.Errorf("report: function %s: environment %d ran %d at once, with %d per environment and %d invocations", f.Name, e.N, e.MaxInFlight, per, e.Invocations)
			}
		}
		if f.LMIConcurrency == 0 && len(f.PastDeadline) > 0 {
			return fmt.Errorf("report: function %s runs in Lambda's default model, whose timeouts end the invocation, yet lists invocations past their deadline", f.Name)
		}
	}
	return nil
}

// textFunctions writes how each function ran: its model, its environments and the most each
// ran at once, and the invocations past their deadline.
func (r *Report) textFunctions(b *strings.Builder) {
	if len(r.Functions) == 0 {
		return
	}
	b.WriteString("\nfunctions (execution environments):\n")
	rows := [][]string{{"function", "model", "per environment", "environments", "max in flight per environment", "past deadline"}}
	for _, f := range r.Functions {
		model, per := "Lambda (default)", "1"
		if f.LMIConcurrency > 0 {
			model, per = "Lambda Managed Instances", strconv.Itoa(f.LMIConcurrency)
		}
		var most []string
		for _, e := range f.Environments {
			most = append(most, fmt.Sprintf("%d:%d", e.N, e.MaxInFlight))
		}
		past := "-"
		if f.LMIConcurrency > 0 {
			past = strconv.Itoa(len(f.PastDeadline))
		}
		rows = append(rows, []string{f.Name, model, per, strconv.Itoa(len(f.Environments)), dash(shorten(strings.Join(most, " "), 120)), past})
	}
	writeTable(b, "  ", rows, 2, 4)
	var late [][]string
	for _, f := range r.Functions {
		for _, p := range f.PastDeadline {
			over := "not answered by the end"
			if p.OverMS != nil {
				over = fmt.Sprintf("answered %d ms after", *p.OverMS)
			}
			late = append(late, []string{f.Name, p.RequestID, strconv.Itoa(p.Environment), p.Deadline.Format("15:04:05.000"), over})
		}
	}
	if len(late) > 0 {
		b.WriteString("\ninvocations past their deadline (Lambda Managed Instances does not stop them; the caller got Sandbox.Timedout):\n")
		writeTable(b, "  ", append([][]string{{"function", "request ID", "environment", "deadline", "outcome"}}, late[:min(len(late), textRowsMax)]...), -1)
		moreRows(b, len(late))
	}
}
