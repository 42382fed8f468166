package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/metrics"
)

func observedEvent() *kafkaevent.Event {
	t0 := time.Now().Add(-time.Minute)
	b := kafkaeventtest.NewBuilder(kafkaeventtest.WithStartTime(t0))
	for i := 0; i < 3; i++ {
		b.Add("orders", 0, []byte("v"))
		b.Add("orders", 1, []byte("v"))
	}
	return b.Event()
}

// One EMF line per batch, with the counts and the age of the records.
func TestMetricsEMF(t *testing.T) {
	var out, logs bytes.Buffer
	logger := slog.New(slog.NewJSONHandler(&logs, nil))
	ev := observedEvent()
	_, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		if r.Partition == 1 && r.Offset == 1 {
			return batch.Permanent(errors.New("no"))
		}
		return nil
	}, batch.WithMetrics(&out), batch.WithMetricsNamespace("Test"), batch.WithLogger(logger))
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(out.String()), "\n")
	if len(lines) != 1 {
		t.Fatalf("%d EMF lines, want 1:\n%s", len(lines), out.String())
	}
	var doc struct {
		AWS struct {
			Timestamp         int64
			CloudWatchMetrics []struct {
				Namespace  string
				Dimensions [][]string
				Metrics    []struct{ Name, Unit string }
			}
		} `json:"_aws"`
		Source string
		// One value each, in an array of one, as package metrics writes every metric.
		Records, Processed, Failed, Reported, Filtered  [1]int
		OldestRecordAge, NewestRecordAge, BatchDuration [1]float64
	}
	if err := json.Unmarshal([]byte(lines[0]), &doc); err != nil {
		t.Fatalf("EMF line is not JSON: %v\n%s", err, lines[0])
	}
	if doc.Source != "kafka" || doc.Records[0] != 6 || doc.Processed[0] != 4 || doc.Failed[0] != 1 || doc.Reported[0] != 2 {
		t.Errorf("EMF counts: %+v", doc)
	}
	if oldest, newest := doc.OldestRecordAge[0], doc.NewestRecordAge[0]; oldest < 59000 || oldest > 120000 || newest > oldest {
		t.Errorf("record ages: oldest %v ms, newest %v ms", doc.OldestRecordAge, doc.NewestRecordAge)
	}
	if len(doc.AWS.CloudWatchMetrics) != 1 || doc.AWS.CloudWatchMetrics[0].Namespace != "Test" {
		t.Fatalf("CloudWatchMetrics = %+v", doc.AWS.CloudWatchMetrics)
	}
	names := map[string]bool{}
	for _, m := range doc.AWS.CloudWatchMetrics[0].Metrics {
		names[m.Name] = true
	}
	for _, n := range []string{"Records", "Processed", "Failed", "Reported", "Filtered", "SentToSink", "Replayed", "NotRecorded", "BatchDuration", "OldestRecordAge", "NewestRecordAge"} {
		if !names[n] {
			t.Errorf("metric %s not declared", n)
		}
	}
	// The failed record's line, then the summary line.
	logLines := bytes.Split(bytes.TrimSpace(logs.Bytes()), []byte("\n"))
	if len(logLines) != 2 {
		t.Fatalf("%d log lines, want 2:\n%s", len(logLines), logs.String())
	}
	var entry map[string]any
	if err := json.Unmarshal(logLines[1], &entry); err != nil {
		t.Fatalf("log line: %v\n%s", err, logs.String())
	}
	if entry["msg"] != "batch processed" || entry["level"] != "WARN" || entry["failed"] != float64(1) || entry["reported"] != float64(2) {
		t.Errorf("log line = %v", entry)
	}
}

// The batch's document is its own, written through package metrics beside the function's:
// under metrics.Handle, the handler's metrics go to the function's document (its namespace,
// its service) and the batch's to the batch's, which has the Source dimension alone, whatever
// POWERTOOLS_SERVICE_NAME says, and the invocation's request ID.
func TestMetricsBesideTheFunctions(t *testing.T) {
	t.Setenv(metrics.EnvService, "checkout")
	var own, out bytes.Buffer
	m, err := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(&own), metrics.WithColdStartMetric(false))
	if err != nil {
		t.Fatal(err)
	}
	h := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		return metrics.Add(ctx, "OrdersPlaced", metrics.Count, 1)
	}, batch.WithMetrics(&out), batch.WithMetricsNamespace("Test"), batch.WithLogger(slog.New(slog.DiscardHandler)))
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-7"})
	for range 2 { // the second batch is written by the Metrics the first made
		if _, err := metrics.Handle(m, h)(ctx, observedEvent()); err != nil {
			t.Fatal(err)
		}
	}
	var docs []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var d map[string]any
		if err := json.Unmarshal([]byte(l), &d); err != nil {
			t.Fatalf("%v: %s", err, l)
		}
		docs = append(docs, d)
	}
	if len(docs) != 2 {
		t.Fatalf("%d batch documents, want 2:\n%s", len(docs), out.String())
	}
	for _, d := range docs {
		dir := d["_aws"].(map[string]any)["CloudWatchMetrics"].([]any)[0].(map[string]any)
		if d["Source"] != "kafka" || d["service"] != nil || d["OrdersPlaced"] != nil || d[metrics.RequestIDKey] != "req-7" ||
			dir["Namespace"] != "Test" || fmt.Sprint(dir["Dimensions"]) != "[[Source]]" {
			t.Errorf("batch document %v", d)
		}
	}
	if s := own.String(); strings.Count(s, "\n") != 2 || !strings.Contains(s, `"OrdersPlaced":[1,1,1,1,1,1]`) ||
		!strings.Contains(s, `"service":"checkout"`) || strings.Contains(s, "Records") {
		t.Errorf("the function's documents:\n%s", s)
	}
}

// WithMetrics follows package metrics' switch: POWERTOOLS_METRICS_DISABLED=true writes
// nothing; a value that is not a boolean fails every batch with an OptionError, and no record
// is handled.
func TestMetricsDisabled(t *testing.T) {
	var out bytes.Buffer
	noop := func(context.Context, *kafkaevent.Record) error { return nil }
	t.Setenv(metrics.EnvDisabled, "true")
	if _, err := batch.ProcessKafka(context.Background(), observedEvent(), noop, batch.WithMetrics(&out), batch.WithLogger(slog.New(slog.DiscardHandler))); err != nil || out.Len() != 0 {
		t.Errorf("disabled: %v, %q", err, out.String())
	}
	t.Setenv(metrics.EnvDisabled, "maybe")
	calls := 0
	_, err := batch.ProcessKafka(context.Background(), observedEvent(), func(context.Context, *kafkaevent.Record) error { calls++; return nil },
		batch.WithMetrics(&out), batch.WithLogger(slog.New(slog.DiscardHandler)))
	var oe *toolkit.OptionError
	if !errors.As(err, &oe) || oe.Option != "WithMetrics" || !strings.Contains(err.Error(), metrics.EnvDisabled) || calls != 0 {
		t.Errorf("unreadable %s: %v, %d calls", metrics.EnvDisabled, err, calls)
	}
	if _, err := batch.ProcessKafka(context.Background(), observedEvent(), noop, batch.WithMetrics(&out), batch.WithMetricsNamespace("AWS/Lambda")); !errors.As(err, &oe) || oe.Option != "WithMetricsNamespace" {
		t.Errorf("namespace AWS/Lambda: %v", err)
	}
}
