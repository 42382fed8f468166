package report

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

// TestFunctionsText: the report says per function its model, its environments and the most
// each ran at once, and lists the LMI invocations past their deadline; report.json carries
// the same, and a report that contradicts itself is refused.
func TestFunctionsText(t *testing.T) {
	over := int64(850)
	r := &Report{Tool: "klt local", Functions: []Function{
		{Name: "ConsumerFunction", LMIConcurrency: 8, Environments: []Environment{{N: 1, Invocations: 40, MaxInFlight: 8}, {N: 2, Invocations: 3, MaxInFlight: 2}},
			PastDeadline: []PastDeadline{{RequestID: "req-1", Environment: 1, Deadline: time.Date(2026, 12, 8, 1, 2, 3, 0, time.UTC), OverMS: &over}, {RequestID: "req-2", Environment: 2}}},
		{Name: "WorkerFunction", Environments: []Environment{{N: 1, Invocations: 5, MaxInFlight: 1}}},
	}}
	var b strings.Builder
	if err := r.Text(&b); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"ConsumerFunction Lambda Managed Instances 8 2 1:8 2:2 2",
		"WorkerFunction Lambda (default) 1 1 1:1 -",
		"ConsumerFunction req-1 1 01:02:03.000 answered 850 ms after",
		"ConsumerFunction req-2 2 00:00:00.000 not answered by the end",
	} {
		// Columns compared with single spaces between them.
		if !strings.Contains(strings.Join(strings.Fields(b.String()), " "), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	js, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct{ Functions []map[string]any }
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	wantKeys(t, doc.Functions[0], "function", "name", "lmi_concurrency", "environments", "past_deadline")
	wantKeys(t, doc.Functions[0]["environments"].([]any)[0], "environment", "n", "invocations", "max_in_flight")
	wantKeys(t, doc.Functions[0]["past_deadline"].([]any)[0], "past deadline", "request_id", "environment", "deadline", "over_ms")

	r.Functions[1].Environments[0].MaxInFlight = 2
	if err := r.Validate(); err == nil || !strings.Contains(err.Error(), "environment 1 ran 2 at once, with 1 per environment") {
		t.Errorf("an on-demand environment running 2 at once: Validate = %v", err)
	}
}
