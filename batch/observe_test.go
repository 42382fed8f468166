package batch_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
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
