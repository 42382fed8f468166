package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/kafkalambda/toolkit/lambdalog"
)

// lambdalogLines returns the lines a function logging through lambdalog writes in the
// invocation with request ID id: one line per record, each with its correlation ID, and a
// summary line without one, as batch writes them.
func lambdalogLines(t *testing.T, id string, records int) [][]byte {
	t.Helper()
	var out bytes.Buffer
	log := slog.New(lambdalog.NewHandler(slog.NewJSONHandler(&out, &slog.HandlerOptions{ReplaceAttr: lambdalog.ReplaceAttr})))
	handle := lambdalog.Wrap(func(ctx context.Context, _ struct{}) (struct{}, error) {
		for i := range records {
			log.InfoContext(lambdalog.WithCorrelationID(ctx, fmt.Sprintf("order-%d", i)), "order applied")
		}
		log.InfoContext(ctx, "batch processed", "records", records)
		return struct{}{}, nil
	})
	ctx := lambdacontext.NewContext(t.Context(), &lambdacontext.LambdaContext{AwsRequestID: id})
	if _, err := handle(ctx, struct{}{}); err != nil {
		t.Fatal(err)
	}
	return bytes.Split(bytes.TrimSpace(out.Bytes()), []byte("\n"))
}

// TestLogCensusReport holds the report's function logs to what the functions wrote: a function
// that logs through lambdalog (every line with its invocation's request ID, the records' lines
// with a correlation ID), and one that logs with slog's own JSON handler and in text, whose
// lines carry neither, which the report says in a line of its own.
func TestLogCensusReport(t *testing.T) {
	c := NewLogCensus()
	for i, id := range []string{"5a1c6a3e-0000-4000-8000-000000000001", "5a1c6a3e-0000-4000-8000-000000000002"} {
		c.Invocation("ConsumerFunction", id)
		for _, l := range lambdalogLines(t, id, 3+i) {
			c.Line("ConsumerFunction", l)
		}
		c.Line("ConsumerFunction", []byte(`{"_aws":{"Timestamp":0,"CloudWatchMetrics":[]},"function_request_id":"`+id+`","OrdersApplied":[1]}`))
	}

	var plain bytes.Buffer
	log := slog.New(slog.NewJSONHandler(&plain, nil))
	for i, id := range []string{"5a1c6a3e-0000-4000-8000-000000000003", "5a1c6a3e-0000-4000-8000-000000000004", "5a1c6a3e-0000-4000-8000-000000000005"} {
		c.Invocation("PlainFunction", id)
		log.Info("order applied", "order", i)
	}
	for _, l := range bytes.Split(bytes.TrimSpace(plain.Bytes()), []byte("\n")) {
		c.Line("PlainFunction", l)
	}
	c.Line("PlainFunction", []byte("2026/12/08 00:00:00 order applied"))
	c.Line("PlainFunction", []byte(`{"message":"stale","function_request_id":"not-an-invocation-of-this-function"}`))

	rep := &Report{Tool: "klt local", Logs: c.Functions()}
	var text strings.Builder
	if err := rep.Text(&text); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"function logs (function_request_id, correlation_id):\n" +
			"  function           invocations   logged   JSON lines   request ID   correlation ID   no request ID   other ID   EMF   text\n" +
			"  ConsumerFunction             2        2            9            9                7               0          0     2      0\n" +
			"  PlainFunction                3        0            4            0                0               3          1     0      1\n" +
			"  PlainFunction: 3 of 3 invocations have no log line carrying their request ID\n" +
			"  PlainFunction: 5 lines carry no request ID of an invocation (3 JSON without one, 1 with another, 1 not JSON)\n",
		"legend of the function logs:\n  invocations     invocations the function was handed",
	} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("the text report lacks\n%s\nit is:\n%s", want, text.String())
		}
	}
	if strings.Contains(text.String(), "ConsumerFunction: ") {
		t.Errorf("a note about ConsumerFunction, whose lines all carry their request ID:\n%s", text.String())
	}

	// report.json: each invocation's request ID, its lines and those with a correlation ID.
	js, err := rep.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Logs []FunctionLogs `json:"function_logs"`
	}
	if err := json.Unmarshal(js, &doc); err != nil {
		t.Fatal(err)
	}
	if len(doc.Logs) != 2 {
		t.Fatalf("report.json: function_logs %+v", doc.Logs)
	}
	got := fmt.Sprint(doc.Logs[0].Detail, doc.Logs[1].Detail)
	want := "[{5a1c6a3e-0000-4000-8000-000000000001 4 3} {5a1c6a3e-0000-4000-8000-000000000002 5 4}] " +
		"[{5a1c6a3e-0000-4000-8000-000000000003 0 0} {5a1c6a3e-0000-4000-8000-000000000004 0 0} {5a1c6a3e-0000-4000-8000-000000000005 0 0}]"
	if got != want {
		t.Errorf("report.json's invocation detail:\n%s\nwant\n%s", got, want)
	}
	var page bytes.Buffer
	if err := rep.HTML(&page); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(page.String(), `<tr><td>PlainFunction</td><td>3</td><td>0</td><td>4</td><td>0</td><td>0</td><td>3</td><td>1</td><td>0</td><td>1</td></tr>`) {
		t.Errorf("report.html has no row for PlainFunction's logs")
	}
}

// TestLogCensusBounds: past MaxLogDetail invocations report.json lists no more, and says how
// many it left out; the counts cover every one.
func TestLogCensusBounds(t *testing.T) {
	c := NewLogCensus()
	for i := range MaxLogDetail + 5 {
		id := fmt.Sprintf("id-%d", i)
		c.Invocation("F", id)
		c.Line("F", []byte(`{"function_request_id":"`+id+`"}`))
	}
	f := c.Functions()[0]
	if len(f.Detail) != MaxLogDetail || f.DetailOmitted != 5 || f.Invocations != MaxLogDetail+5 || f.InvocationsLogged != MaxLogDetail+5 || f.WithRequestID != MaxLogDetail+5 {
		t.Errorf("detail %d, omitted %d, invocations %d, logged %d, lines with the ID %d", len(f.Detail), f.DetailOmitted, f.Invocations, f.InvocationsLogged, f.WithRequestID)
	}
}
