package report

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// demoDuplicate is the sample report after the demo's failure queue got the poison order
// twice, 60 s apart (its batch delivered again): one record, two messages.
func demoDuplicate() *Report {
	r := sampleReport()
	again := r.FailedMessages[0]
	again.At = again.At.Add(60 * time.Second)
	r.FailedMessages = append(r.FailedMessages, again)
	for i := range r.Pipelines {
		r.Pipelines[i].SetFailedMessages(r.FailedMessages)
	}
	return r
}

// Every message on a failure queue is counted, duplicates included and named, in the text,
// report.json and report.html; the fates and the mappings still count the record once.
func TestFailureQueueDuplicatesCounted(t *testing.T) {
	r := demoDuplicate()
	var text bytes.Buffer
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	const want = "2 (1 duplicate: orders-2@17)"
	var row string
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "failure queue ") {
			row = l
		}
	}
	if !strings.Contains(row, want) {
		t.Errorf("failure queue row %q, want %q for direct", row, want)
	}
	if !strings.Contains(text.String(), "failure queue 1") {
		t.Errorf("the fates no longer count the record once:\n%s", text.String())
	}

	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Pipelines []struct {
			Name                 string      `json:"name"`
			FailureQueue         *int64      `json:"failure_queue"`
			FailureQueueMessages *int64      `json:"failure_queue_messages"`
			DeadLetterMessages   *int64      `json:"dead_letter_messages"`
			Duplicates           []Duplicate `json:"duplicates"`
		} `json:"pipelines"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	d := doc.Pipelines[0]
	if d.FailureQueue == nil || *d.FailureQueue != 1 || d.FailureQueueMessages == nil || *d.FailureQueueMessages != 2 ||
		d.DeadLetterMessages == nil || *d.DeadLetterMessages != 0 {
		t.Errorf("direct: failure_queue %v, failure_queue_messages %v, dead_letter_messages %v; want 1 record, 2 messages, 0",
			d.FailureQueue, d.FailureQueueMessages, d.DeadLetterMessages)
	}
	wantDup := []Duplicate{{Queue: "ConsumerFailureQueue", Kind: FailureQueueKind, Record: "orders-2@17", Messages: 2}}
	if len(d.Duplicates) != 1 || d.Duplicates[0] != wantDup[0] {
		t.Errorf("direct: duplicates %+v, want %+v", d.Duplicates, wantDup)
	}
	f := doc.Pipelines[1]
	if f.FailureQueueMessages == nil || *f.FailureQueueMessages != 0 || f.DeadLetterMessages == nil || *f.DeadLetterMessages != 1 || len(f.Duplicates) != 0 {
		t.Errorf("fan-out: %+v, want 0 failure queue messages, 1 dead-letter message, no duplicate", f)
	}

	var page bytes.Buffer
	if err := r.HTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), "<td>"+want+"</td>") {
		t.Errorf("report.html lacks the cell %q", want)
	}

	// Read back, the report is the same and still valid.
	var back Report
	if err := json.Unmarshal(js, &back); err != nil {
		t.Fatal(err)
	}
	if err := back.Validate(); err != nil {
		t.Errorf("report.json read back: %v", err)
	}
}

// A report whose message counts disagree with its failed messages is refused, as every other
// count that does not add up.
func TestFailureQueueMessagesValidated(t *testing.T) {
	for name, spoil := range map[string]func(p *Pipeline){
		"count":      func(p *Pipeline) { p.FailureQueueMessages = Observed(1) },
		"dead":       func(p *Pipeline) { p.DeadLetterMessages = Observed(3) },
		"duplicates": func(p *Pipeline) { p.Duplicates = nil },
	} {
		r := demoDuplicate()
		spoil(&r.Pipelines[0])
		if err := r.Validate(); err == nil {
			t.Errorf("%s: a report whose message counts disagree with failed_messages passes", name)
		}
	}
	// A report of an earlier version, without message counts, is read as before.
	r := sampleReport()
	var text bytes.Buffer
	if err := r.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(text.String(), "\n") {
		if strings.HasPrefix(l, "failure queue ") && strings.Contains(l, "duplicate") {
			t.Errorf("failure queue row %q of a report without message counts", l)
		}
	}
}

// Many duplicates: the text names the first three and says how many more; JSON has them all.
func TestDuplicatesNamedAtMostThree(t *testing.T) {
	dups := []Duplicate{
		{Kind: FailureQueueKind, Record: "t-0@1", Messages: 3},
		{Kind: FailureQueueKind, Record: "t-0@2", Messages: 2},
		{Kind: DeadLetterQueueKind, Record: "t-0@9", Messages: 2},
		{Kind: FailureQueueKind, Record: "t-0@3", Messages: 2},
		{Kind: FailureQueueKind, Record: "t-0@4", Messages: 2},
	}
	got := queueText(Observed(14), "9", dups, isFailureQueue)
	if want := "14 (5 duplicates: t-0@1, t-0@2, t-0@3 and 1 more)"; got != want {
		t.Errorf("queueText = %q, want %q", got, want)
	}
	if got := queueText(Observed(3), "2", dups, isDeadLetter); got != "3 (1 duplicate: t-0@9)" {
		t.Errorf("dead-letter queueText = %q", got)
	}
}
