package report

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
)

// What a function's log lines say about its invocations. Lambda gives each invocation a
// request ID; a function that logs as Powertools does (package lambdalog) writes it on every
// line of the invocation as function_request_id, and a record's correlation ID as
// correlation_id. klt local hands out the request IDs (its Runtime API) and reads every line
// of the functions' output, so it can say, per function, whether the lines carry them: a
// function that logs plain text, or JSON without the invocation's context, shows here at once.

// Keys of a log line that the census reads: Powertools' names (lambdalog's).
const (
	RequestIDKey     = "function_request_id"
	CorrelationIDKey = "correlation_id"
)

// MaxLogInvocations bounds the invocations a census follows one by one per function (about
// 100 bytes each). Past it, an invocation is counted, its lines as with an unknown request ID.
const MaxLogInvocations = 1 << 20

// MaxLogDetail bounds the invocations report.json lists per function; the counts cover all.
const MaxLogDetail = 10_000

// FunctionLogs is what one function's output said about its invocations. Lines are those the
// function's processes wrote to stdout and stderr, each counted once.
type FunctionLogs struct {
	Function string `json:"function"`
	// Invocations is how many invocations klt's Runtime API handed the function's processes.
	Invocations int64 `json:"invocations"`
	// InvocationsLogged is how many of them have at least one log line that carries their
	// request ID as function_request_id.
	InvocationsLogged int64 `json:"invocations_logged"`
	// JSONLines counts the log lines that are JSON objects, EMF documents apart.
	JSONLines int64 `json:"json_lines"`
	// WithRequestID counts those whose function_request_id is one of the invocations'.
	WithRequestID int64 `json:"with_request_id"`
	// OtherRequestID counts those whose function_request_id is no invocation's (or one past
	// MaxLogInvocations).
	OtherRequestID int64 `json:"other_request_id"`
	// WithoutRequestID counts those without a function_request_id: lines written outside an
	// invocation's context (at init, or with log.Info rather than log.InfoContext(ctx)).
	WithoutRequestID int64 `json:"without_request_id"`
	// WithCorrelationID counts the JSON lines that carry a correlation_id.
	WithCorrelationID int64 `json:"with_correlation_id"`
	// EMFDocuments counts the lines that are CloudWatch EMF documents (with "_aws").
	EMFDocuments int64 `json:"emf_documents"`
	// TextLines counts the lines that are not JSON objects.
	TextLines int64 `json:"text_lines"`
	// Detail is each invocation's request ID and lines, in the order they were invoked, at
	// most MaxLogDetail of them; DetailOmitted says how many more there were.
	Detail        []InvocationLogs `json:"invocation_detail"`
	DetailOmitted int64            `json:"invocation_detail_omitted"`
}

// InvocationLogs is one invocation's log lines: those carrying its request ID, and how many of
// them carry a correlation ID.
type InvocationLogs struct {
	RequestID         string `json:"request_id"`
	Lines             int64  `json:"lines"`
	WithCorrelationID int64  `json:"with_correlation_id"`
}

// LogCensus counts the log lines of each function against the invocations it was handed. It is
// safe for concurrent use.
type LogCensus struct {
	mu    sync.Mutex
	fns   map[string]*functionCensus
	order []string
}

type functionCensus struct {
	FunctionLogs
	byID map[string]*InvocationLogs
	seq  []*InvocationLogs
}

// NewLogCensus returns an empty census.
func NewLogCensus() *LogCensus { return &LogCensus{fns: map[string]*functionCensus{}} }

func (c *LogCensus) function(fn string) *functionCensus {
	f := c.fns[fn]
	if f == nil {
		f = &functionCensus{FunctionLogs: FunctionLogs{Function: fn}, byID: map[string]*InvocationLogs{}}
		c.fns[fn] = f
		c.order = append(c.order, fn)
	}
	return f
}

// Invocation records that function fn was handed an invocation with the request ID id. It must
// be called before the process gets the event, so that its lines find it.
func (c *LogCensus) Invocation(fn, id string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.function(fn)
	f.Invocations++
	if len(f.seq) >= MaxLogInvocations || f.byID[id] != nil {
		return
	}
	inv := &InvocationLogs{RequestID: id}
	f.byID[id] = inv
	f.seq = append(f.seq, inv)
}

// logLine is what the census reads of a JSON line.
type logLine struct {
	RequestID     *string         `json:"function_request_id"`
	CorrelationID *string         `json:"correlation_id"`
	AWS           json.RawMessage `json:"_aws"`
}

// Line counts one line of function fn's output.
func (c *LogCensus) Line(fn string, line []byte) {
	var l logLine
	t := bytes.TrimSpace(line)
	isJSON := len(t) > 0 && t[0] == '{' && json.Unmarshal(t, &l) == nil
	c.mu.Lock()
	defer c.mu.Unlock()
	f := c.function(fn)
	switch {
	case !isJSON:
		f.TextLines++
		return
	case l.AWS != nil:
		f.EMFDocuments++
		return
	}
	f.JSONLines++
	corr := l.CorrelationID != nil && *l.CorrelationID != ""
	if corr {
		f.WithCorrelationID++
	}
	switch inv := f.lookup(l.RequestID); {
	case l.RequestID == nil || *l.RequestID == "":
		f.WithoutRequestID++
	case inv == nil:
		f.OtherRequestID++
	default:
		f.WithRequestID++
		if inv.Lines == 0 {
			f.InvocationsLogged++
		}
		inv.Lines++
		if corr {
			inv.WithCorrelationID++
		}
	}
}

func (f *functionCensus) lookup(id *string) *InvocationLogs {
	if id == nil {
		return nil
	}
	return f.byID[*id]
}

// Functions returns each function's counts, in the order the census first heard of them.
func (c *LogCensus) Functions() []FunctionLogs {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]FunctionLogs, 0, len(c.order))
	for _, fn := range c.order {
		f := c.fns[fn]
		fl := f.FunctionLogs
		n := min(len(f.seq), MaxLogDetail)
		fl.Detail = make([]InvocationLogs, n)
		for i := range n {
			fl.Detail[i] = *f.seq[i]
		}
		fl.DetailOmitted = f.Invocations - int64(n)
		out = append(out, fl)
	}
	return out
}

// validate checks that the counts add up.
func (l FunctionLogs) validate() error {
	if l.WithRequestID+l.OtherRequestID+l.WithoutRequestID != l.JSONLines {
		return fmt.Errorf("function logs of %s: %d JSON lines, but %d with an invocation's request ID, %d with another and %d without",
			l.Function, l.JSONLines, l.WithRequestID, l.OtherRequestID, l.WithoutRequestID)
	}
	if l.InvocationsLogged > l.Invocations || l.WithCorrelationID > l.JSONLines {
		return fmt.Errorf("function logs of %s: %d of %d invocations logged, %d of %d lines with a correlation ID",
			l.Function, l.InvocationsLogged, l.Invocations, l.WithCorrelationID, l.JSONLines)
	}
	return nil
}

// LogDefinitions define the columns of the function logs table.
var LogDefinitions = []Definition{
	{"invocations", "invocations the function was handed (klt's Runtime API gave each a request ID)"},
	{"logged", "invocations with at least one log line carrying their request ID as " + RequestIDKey},
	{"JSON lines", "lines of the function's output that are JSON objects, EMF documents apart"},
	{"request ID", "JSON lines whose " + RequestIDKey + " is one of the function's invocations'"},
	{"correlation ID", "JSON lines with a " + CorrelationIDKey + " (package lambdalog writes the one batch.WithCorrelationIDFrom reads)"},
	{"no request ID", "JSON lines without " + RequestIDKey + ": logged outside an invocation's context (at init, or without ctx)"},
	{"other ID", "JSON lines whose " + RequestIDKey + " is no invocation of the function's"},
	{"EMF", "lines that are CloudWatch EMF documents (metrics)"},
	{"text", "lines that are not JSON: nothing a Logs Insights query on Powertools' keys finds"},
}

// textLogs writes the function logs table, and a line for each function whose lines do not
// carry the IDs.
func (r *Report) textLogs(b *strings.Builder) {
	if len(r.Logs) == 0 {
		return
	}
	b.WriteString("\nfunction logs (" + RequestIDKey + ", " + CorrelationIDKey + "):\n")
	rows := [][]string{{"function", "invocations", "logged", "JSON lines", "request ID", "correlation ID", "no request ID", "other ID", "EMF", "text"}}
	var notes []string
	for _, l := range r.Logs {
		rows = append(rows, []string{l.Function})
		for _, v := range []int64{l.Invocations, l.InvocationsLogged, l.JSONLines, l.WithRequestID, l.WithCorrelationID, l.WithoutRequestID, l.OtherRequestID, l.EMFDocuments, l.TextLines} {
			rows[len(rows)-1] = append(rows[len(rows)-1], strconv.FormatInt(v, 10))
		}
		if n := l.Invocations - l.InvocationsLogged; n > 0 {
			notes = append(notes, fmt.Sprintf("  %s: %d of %d invocations have no log line carrying their request ID", l.Function, n, l.Invocations))
		}
		if n := l.WithoutRequestID + l.OtherRequestID + l.TextLines; n > 0 {
			notes = append(notes, fmt.Sprintf("  %s: %d lines carry no request ID of an invocation (%d JSON without one, %d with another, %d not JSON)",
				l.Function, n, l.WithoutRequestID, l.OtherRequestID, l.TextLines))
		}
	}
	writeTable(b, "  ", rows, 1)
	for _, n := range notes {
		b.WriteString(n + "\n")
	}
}
