package lmitest_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/lmitest"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// checkSink: the failure queue holds one envelope for each record of sunk, and no other.
func checkSink(t *testing.T, client *sqs.Client, queue string, sunk map[string]bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	// Ask for more than are due, so that a duplicate would be received too: Receive then waits
	// the full 2 s.
	msgs, err := standintest.Receive(ctx, client, queue, len(sunk)+10, 2*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]int{}
	for _, m := range msgs {
		e, err := batch.ReadEnvelope([]byte(*m.Body))
		if err != nil {
			t.Fatalf("a message on the failure queue that is no envelope: %v", err)
		}
		got[fmt.Sprintf("%d/%d", e.Partition, e.Offset)]++
	}
	lost, twice := 0, 0
	for id := range sunk {
		switch got[id] {
		case 0:
			lost++
			t.Errorf("record %s never reached the failure queue", id)
		case 1:
		default:
			twice++
			t.Errorf("record %s reached the failure queue %d times", id, got[id])
		}
	}
	for id := range got {
		if !sunk[id] {
			t.Errorf("record %s reached the failure queue, but it should have been applied", id)
		}
	}
	t.Logf("failure queue: %d envelopes for %d poison records, %d lost, %d twice", len(msgs), len(sunk), lost, twice)
}

// checkLines: every log line and every metrics document was written in an invocation and names
// it (function_request_id); the handler's lines name the invocation whose context logged them
// (ctx_request) and its trace; each invocation wrote one "batch processed" line and one batch
// document; the Applied metric of each invocation's documents adds up to what it applied.
func checkLines(t *testing.T, logs, docs *lmitest.Output, l *ledger, invocations int) {
	t.Helper()
	checkLogLines(t, logs, invocations)
	checkDocs(t, docs, l, invocations)
}

// checkLogLines is checkLines without the metrics.
func checkLogLines(t *testing.T, logs *lmitest.Output, invocations int) {
	t.Helper()
	lines, err := logs.Lines()
	if err != nil {
		t.Fatal(err)
	}
	summaries := map[string]int{}
	for _, line := range lines {
		req, i := requestOf(t, line)
		if i < 0 {
			continue
		}
		if m := line["message"]; m == "batch processed" || m == "records dispatched" { // an invocation's summary
			summaries[req]++
		}
		if _, ok := line["ctx_request"]; ok { // a line of the handler
			if line["ctx_request"] != req {
				t.Errorf("a line of invocation %v says request ID %s", line["ctx_request"], req)
			}
			if line["xray_trace_id"] != lmitest.TraceRoot(i) {
				t.Errorf("%s: xray_trace_id %v, want %s", req, line["xray_trace_id"], lmitest.TraceRoot(i))
			}
		}
	}
	if len(summaries) != invocations {
		t.Errorf("%d invocations wrote a batch line, want %d", len(summaries), invocations)
	}
	for req, n := range summaries {
		if n != 1 {
			t.Errorf("%s: %d batch lines", req, n)
		}
	}
	t.Logf("%d log lines of %d invocations, each with its own request ID", len(lines), invocations)
}

// requestOf returns a line's function_request_id and its index ("req-INDEX"), failing t and
// returning -1 when it has none.
func requestOf(t *testing.T, line map[string]any) (string, int) {
	t.Helper()
	req, _ := line["function_request_id"].(string)
	var i int
	if _, err := fmt.Sscanf(req, "req-%d", &i); err != nil {
		t.Errorf("a line without an invocation's request ID: %v", line)
		return "", -1
	}
	return req, i
}

func checkDocs(t *testing.T, docs *lmitest.Output, l *ledger, invocations int) {
	t.Helper()
	all, err := docs.Lines()
	if err != nil {
		t.Fatal(err)
	}
	applied, batches := map[string]int{}, map[string]int{}
	for _, d := range all {
		if _, cold := d["ColdStart"]; cold {
			continue
		}
		req, i := requestOf(t, d)
		if i < 0 {
			continue
		}
		if vs, ok := d["Applied"].([]any); ok {
			for _, v := range vs {
				f, _ := v.(float64)
				applied[req] += int(f)
			}
		}
		if _, ok := d["Records"]; ok {
			batches[req]++
		}
	}
	if len(batches) != invocations {
		t.Errorf("%d invocations wrote a batch metrics document, want %d", len(batches), invocations)
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	for req, n := range l.perReq {
		if applied[req] != n {
			t.Errorf("%s applied %d records, its metrics say %d", req, n, applied[req])
		}
	}
	for req, n := range applied {
		if l.perReq[req] != n {
			t.Errorf("%s's metrics say %d applied, it applied %d", req, n, l.perReq[req])
		}
	}
}
