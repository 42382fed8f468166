package fanout

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/metrics"
)

func TestDispatchMetrics(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	q := dispQueue(t, srv, "work")
	now := time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)
	ev := event(rec(0, 0, "k", "hello"), rec(0, 1, "k", "world"), rec(1, 0, "k", strings.Repeat("x", limits.MaxSQSMessageBytes)))
	ev.Partitions[0].Records[0].Timestamp = now.Add(-3 * time.Second)
	ev.Partitions[0].Records[1].Timestamp = now.Add(-1 * time.Second)
	ev.Partitions[1].Records[0].Timestamp = now.Add(-2 * time.Second)
	var out bytes.Buffer
	logs := &logBuffer{}
	d := dispatcher(t, client, q, WithBatchOptions(batch.WithMetrics(&out)), WithBatchOptions(batch.WithMetricsNamespace("Test")), WithBatchOptions(batch.WithLogger(logs.logger())), withClock(func() time.Time { return now }))
	if _, err := d.Dispatch(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(out.Bytes(), &m); err != nil || strings.Count(out.String(), "\n") != 1 {
		t.Fatalf("EMF output %q: %v", out.String(), err)
	}
	msgBytes := 0.0
	for _, r := range ev.Partitions[0].Records {
		_, n, _ := entry(&r, false, nil)
		msgBytes += float64(n)
	}
	want := map[string]any{"Queue": "work", "Records": 3.0, "Dispatched": 2.0, "Failed": 1.0, "Reported": 1.0, "SentToSink": 0.0, "BatchCalls": 1.0,
		"FailedCalls": 0.0, "EntriesRetried": 0.0, "BytesDispatched": msgBytes, "OldestRecordAge": 3000.0, "NewestRecordAge": 1000.0}
	for k, v := range want {
		got := m[k]
		if a, ok := got.([]any); ok && len(a) == 1 && k != "Queue" { // a metric: one value, in an array, as package metrics writes it
			got = a[0]
		} else if k != "Queue" {
			t.Errorf("%s = %v, want [%v]", k, got, v)
			continue
		}
		if got != v {
			t.Errorf("%s = %v, want %v", k, got, v)
		}
	}
	aws := m["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
	if aws["Namespace"] != "Test" || len(aws["Metrics"].([]any)) != 12 {
		t.Errorf("_aws %v", aws)
	}
	s := logs.lines(t, "records dispatched")
	if len(s) != 1 || s[0]["level"] != "WARN" || s[0]["failed"] != 1.0 || s[0]["reported"] != 1.0 || s[0]["oldestRecordAgeMs"] != 3000.0 {
		t.Errorf("summary %v", s)
	}
}

func TestDispatchInvalidOptions(t *testing.T) {
	t.Parallel()
	client := &sqs.Client{}
	for _, tc := range []struct {
		opts   []Option
		nilC   bool
		url    string
		option string // the option the *toolkit.OptionError names
		want   string
	}{
		{nilC: true, url: "https://sqs/q", option: "NewDispatcher", want: "fanout: invalid option NewDispatcher: want an SQS client, not nil"},
		{option: "NewDispatcher", want: `want a queue URL, not ""`},
		{opts: []Option{WithSendConcurrency(0)}, option: "WithSendConcurrency", want: "fanout: invalid option WithSendConcurrency: want at least 1, not 0"},
		{opts: []Option{WithSendRetry(0, time.Second)}, option: "WithSendRetry", want: "not (0, 1s)"},
		{opts: []Option{WithSendRetry(1, -1)}, option: "WithSendRetry", want: "not (1, -1ns)"},
		{opts: []Option{WithMaxMessageSize(0)}, option: "WithMaxMessageSize", want: "not 0"},
		{opts: []Option{WithMaxMessageSize(limits.MaxSQSMessageBytes + 1)}, option: "WithMaxMessageSize", want: "not 1048577"},
		{opts: []Option{WithMessageGroup(nil)}, option: "WithMessageGroup", want: "want a function, not nil"},
		{opts: []Option{nil}, option: "Option", want: "want an option, not nil"},
		// An option of WithBatchOptions is refused by batch: the error is fanout's for
		// WithBatchOptions, wrapping batch's, which names the option.
		{opts: []Option{WithBatchOptions(batch.WithDeadlineMargin(-time.Second))}, option: "WithBatchOptions", want: "WithDeadlineMargin"},
		{opts: []Option{WithBatchOptions(batch.WithSink(nil, batch.SinkPermanent))}, option: "WithBatchOptions", want: "WithSink"},
		{opts: []Option{WithBatchOptions(batch.WithSink(&memSink{}, 7))}, option: "WithBatchOptions", want: "unknown policy"},
		{opts: []Option{WithBatchOptions(batch.WithLogger(nil))}, option: "WithBatchOptions", want: "WithLogger"},
		{opts: []Option{WithBatchOptions(batch.WithMetrics(nil))}, option: "WithBatchOptions", want: "WithMetrics"},
		{opts: []Option{WithBatchOptions(batch.WithMetricsNamespace(""))}, option: "WithBatchOptions", want: "WithMetricsNamespace"},
		// A batch option that has no meaning for a Dispatcher is refused, not ignored.
		{opts: []Option{WithBatchOptions(batch.WithRetry(3, time.Millisecond))}, option: "WithBatchOptions", want: "not one of"},
		{opts: []Option{WithBatchOptions(batch.WithConcurrency(2))}, option: "WithBatchOptions", want: "WithConcurrency"},
	} {
		c, url := sqssink.API(client), "q"
		if tc.nilC {
			c, url = nil, tc.url
		} else if tc.opts == nil {
			url = ""
		}
		d, err := NewDispatcher(c, url, tc.opts...)
		var oe *toolkit.OptionError
		if d != nil || !errors.Is(err, toolkit.ErrInvalidOption) || !errors.As(err, &oe) ||
			oe.Package != "fanout" || oe.Option != tc.option || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, %v", tc.want, d, err)
			continue
		}
		// One of WithBatchOptions wraps batch's own error.
		if inner := errors.Unwrap(oe); (tc.option == "WithBatchOptions") != (inner != nil) ||
			inner != nil && !strings.HasPrefix(err.Error(), "fanout: invalid option WithBatchOptions: batch: ") {
			t.Errorf("%s: %v wraps %v", tc.want, err, inner)
		}
	}
}

// TestDispatchHandler: the handler reads the payload with kafkaevent.Parse and answers the
// partial-batch response's JSON.
func TestDispatchHandler(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	q := dispQueue(t, srv, "work")
	payload, err := json.Marshal(kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte("a")).
		Add("orders", 0, []byte(strings.Repeat("x", limits.MaxSQSMessageBytes))).
		Add("orders", 1, []byte("b")).Event())
	if err != nil {
		t.Fatal(err)
	}
	h := dispatcher(t, client, q, quiet()) // a lambda.Handler
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}}]}`; string(out) != want {
		t.Errorf("response %s, want %s", out, want)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"eventSource":"aws:kafka","records":{`)); err == nil {
		t.Errorf("a truncated payload was accepted")
	}
	if got := len(drain(t, srv.Client(), q)); got != 2 {
		t.Errorf("%d messages, want 2", got)
	}
}

// TestLocalSQSDeduplicates checks what the FIFO test relies on: local-aws-sqs drops a message
// whose MessageDeduplicationId it holds. Real SQS drops it for five minutes after the first
// send, whether or not the first was deleted; local-aws-sqs only while the first is in the
// queue, which is the case in TestDispatchReplayedFailures (nothing is received until every
// record is dispatched).
func TestLocalSQSDeduplicates(t *testing.T) {
	t.Parallel()
	srv, client := dispServer(t, nil)
	q := dispQueue(t, srv, "dedup.fifo")
	d := dispatcher(t, client, q, quiet())
	ev := event(rec(0, 0, "k", "a"), rec(0, 1, "k", "b"))
	for range 3 {
		if resp, err := d.Dispatch(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatal(resp, err)
		}
	}
	if got := drain(t, client, q); len(got) != 2 {
		t.Fatalf("%d messages after three dispatches of two records, want 2", len(got))
	}
	if resp, err := d.Dispatch(context.Background(), ev); err != nil || len(resp.BatchItemFailures) != 0 {
		t.Fatal(resp, err)
	}
	n := len(drain(t, client, q))
	t.Logf("after the first copies were deleted, a new send gives %d messages (real SQS: 0 within five minutes)", n)
}

// The Dispatcher's metrics are written through package metrics, which NewDispatcher sets up
// once: a metrics variable it cannot read is an invalid option then, not a document lost
// at every Dispatch; POWERTOOLS_METRICS_DISABLED=true writes none.
func TestDispatchMetricsEnvironment(t *testing.T) {
	client := &sqs.Client{}
	url := "https://sqs.eu-west-1.amazonaws.com/123456789012/work"
	t.Setenv(metrics.EnvDisabled, "maybe")
	_, err := NewDispatcher(client, url, WithBatchOptions(batch.WithMetrics(io.Discard)))
	var oe *toolkit.OptionError
	if !errors.As(err, &oe) || oe.Option != "WithBatchOptions" || !strings.Contains(err.Error(), metrics.EnvDisabled) {
		t.Errorf("unreadable %s: %v", metrics.EnvDisabled, err)
	}
	if _, err := NewDispatcher(client, url); err != nil {
		t.Errorf("without WithMetrics, the variable is not read: %v", err)
	}
	t.Setenv(metrics.EnvDisabled, "true")
	var out bytes.Buffer
	d, err := NewDispatcher(client, url, WithMaxMessageSize(1), WithBatchOptions(batch.WithMetrics(&out), batch.WithLogger(slog.New(slog.DiscardHandler))))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(context.Background(), event(rec(0, 0, "k", "v"))); err != nil || out.Len() != 0 {
		t.Errorf("disabled: %v, %q", err, out.String())
	}
}
