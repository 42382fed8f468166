package metrics

import (
	"context"
	"encoding/json"
	"io"
	"strconv"
	"testing"
	"time"
)

// BenchmarkFlush: one invocation's Start, n Adds and Flush, through this package and through
// the obvious alternative, an encoding/json map of the same document written with one
// Fprintln-like Write.
//
//	go test -run='^$' -bench=BenchmarkFlush -benchtime=2000x ./metrics
func BenchmarkFlush(b *testing.B) {
	for _, n := range []int{10, 100} {
		names := make([]string, n)
		for i := range names {
			names[i] = "Metric" + strconv.Itoa(i)
		}
		b.Run("metrics="+strconv.Itoa(n)+"/impl=metrics", func(b *testing.B) {
			m, err := New(WithNamespace("Bench"), WithService("svc"), WithOutput(io.Discard), WithColdStartMetric(false))
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			for b.Loop() {
				ctx := m.Start(context.Background())
				for i, name := range names {
					if err := Add(ctx, name, Count, float64(i)); err != nil {
						b.Fatal(err)
					}
				}
				if err := Flush(ctx); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("metrics="+strconv.Itoa(n)+"/impl=encoding-json", func(b *testing.B) {
			type def struct {
				Name string `json:"Name"`
				Unit string `json:"Unit"`
			}
			b.ReportAllocs()
			for b.Loop() {
				doc := map[string]any{"service": "svc"}
				defs := make([]def, 0, n)
				for i, name := range names {
					doc[name] = []float64{float64(i)}
					defs = append(defs, def{name, "Count"})
				}
				doc["_aws"] = map[string]any{
					"Timestamp": time.Now().UnixMilli(),
					"CloudWatchMetrics": []any{map[string]any{
						"Namespace": "Bench", "Dimensions": [][]string{{"service"}}, "Metrics": defs,
					}},
				}
				line, err := json.Marshal(doc)
				if err != nil {
					b.Fatal(err)
				}
				_, _ = io.Discard.Write(append(line, '\n'))
			}
		})
	}
}
