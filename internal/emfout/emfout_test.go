package emfout

import (
	"bytes"
	"encoding/json"
	"math"
	"reflect"
	"testing"
	"time"
)

// The document a Doc writes means what the encoding/json map it replaced meant: the same
// keys, values and metadata (json.Marshal sorted the keys; a Doc keeps them in the order
// they are added).
func TestDocMatchesEncodingJSON(t *testing.T) {
	now := time.UnixMilli(1767261600123)
	for _, dim := range []string{"orders", `q "<&>" \ é` + "\x01"} {
		d := New("Queue", dim)
		d.Int("Records", Count, 12)
		d.Int("BytesDispatched", Bytes, 1<<40)
		d.Float("DispatchDuration", Milliseconds, 12.345)
		d.Float("OldestRecordAge", Milliseconds, 60000)
		d.Float("Tiny", Milliseconds, 1e-7)
		d.Float("Huge", Milliseconds, 1e22)
		line := d.Line(now, "NS <1>")
		if !bytes.HasSuffix(line, []byte("}\n")) || bytes.Count(line, []byte("\n")) != 1 {
			t.Fatalf("not one line: %q", line)
		}
		type metric struct {
			Name string `json:"Name"`
			Unit string `json:"Unit"`
		}
		want, err := json.Marshal(map[string]any{
			"Queue": dim, "Records": 12, "BytesDispatched": int64(1 << 40), "DispatchDuration": 12.345,
			"OldestRecordAge": float64(60000), "Tiny": 1e-7, "Huge": 1e22,
			"_aws": map[string]any{
				"Timestamp": now.UnixMilli(),
				"CloudWatchMetrics": []any{map[string]any{
					"Namespace":  "NS <1>",
					"Dimensions": [][]string{{"Queue"}},
					"Metrics": []metric{{"Records", "Count"}, {"BytesDispatched", "Bytes"}, {"DispatchDuration", "Milliseconds"},
						{"OldestRecordAge", "Milliseconds"}, {"Tiny", "Milliseconds"}, {"Huge", "Milliseconds"}},
				}},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		var got, exp any
		if err := json.Unmarshal(line, &got); err != nil {
			t.Fatalf("%v: %s", err, line)
		}
		if err := json.Unmarshal(want, &exp); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(got, exp) {
			t.Errorf("got  %s\nwant %s", line, want)
		}
	}
}

// Numbers are written as encoding/json writes them, byte for byte.
func TestAppendFloat(t *testing.T) {
	for _, f := range []float64{0, 1, -1, 0.5, 12.345, 1e-6, 9.99e-7, 1e-7, 1e20, 1e21, 123456789012345678, math.MaxFloat64, math.SmallestNonzeroFloat64} {
		want, _ := json.Marshal(f)
		if got := appendFloat(nil, f); string(got) != string(want) {
			t.Errorf("%v: %s, want %s", f, got, want)
		}
	}
	if got := appendFloat(nil, math.NaN()); string(got) != "0" {
		t.Errorf("NaN: %s", got)
	}
}

// BenchmarkDoc builds a batch's line (batch.ProcessKafka's: eight counts and a duration)
// with a Doc, and with the encoding/json map it replaced.
func BenchmarkDoc(b *testing.B) {
	now := time.Now()
	counts := []string{"Records", "Processed", "Failed", "Reported", "Filtered", "SentToSink", "Replayed", "NotRecorded"}
	b.Run("impl=emfout", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			d := New("Source", "kafka")
			for _, n := range counts {
				d.Int(n, Count, 1000)
			}
			d.Float("BatchDuration", Milliseconds, 12.345)
			_ = d.Line(now, "KafkaLambdaToolkit")
		}
	})
	b.Run("impl=encoding-json", func(b *testing.B) {
		type metric struct {
			Name string `json:"Name"`
			Unit string `json:"Unit"`
		}
		b.ReportAllocs()
		for b.Loop() {
			doc := map[string]any{"Source": "kafka"}
			metrics := make([]metric, 0, 9)
			for _, n := range counts {
				doc[n] = int64(1000)
				metrics = append(metrics, metric{n, Count})
			}
			doc["BatchDuration"] = 12.345
			metrics = append(metrics, metric{"BatchDuration", Milliseconds})
			doc["_aws"] = map[string]any{
				"Timestamp": now.UnixMilli(),
				"CloudWatchMetrics": []any{map[string]any{
					"Namespace": "KafkaLambdaToolkit", "Dimensions": [][]string{{"Source"}}, "Metrics": metrics,
				}},
			}
			line, err := json.Marshal(doc)
			if err != nil {
				b.Fatal(err)
			}
			_ = append(line, '\n')
		}
	})
}
