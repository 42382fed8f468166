package report

import (
	"fmt"
	"math"
	"time"
)

// sampleReport is a report shaped like the demo's: 500 records straight from Kafka through 5
// partitions at 300 ms each (about 16.7 records/s), then through a dispatcher and an SQS FIFO
// queue to a worker, with three injected faults.
func sampleReport() *Report {
	r := &Report{
		Tool: "klt local", Version: "v0.4.0", Started: time.Date(2025, 11, 3, 14, 5, 9, 0, time.UTC),
		Template: "template.yaml",
		Machine:  Machine{GOOS: "linux", GOARCH: "amd64", CPUs: 2},
		Scenario: Scenario{Records: 500, Keys: 50, WorkMS: 300, Partitions: 5, Rate: 0},
		Pipelines: []Pipeline{
			{Name: "direct", Functions: []string{"ConsumerFunction"}, Records: 500, Seconds: 30.1, RecordsPerSecond: 16.6,
				LatencyMsP50: 15200, LatencyMsP99: 29800, DeadLettered: 1, Retried: 2, FailedInvocations: 3},
			{Name: "fan-out", Functions: []string{"DispatcherFunction", "WorkerFunction"}, Records: 500, Seconds: 0.97, RecordsPerSecond: 517,
				LatencyMsP50: 610, LatencyMsP99: 940, DeadLettered: 1, Retried: 2, FailedInvocations: 2},
		},
		Faults: []Fault{
			{Pipeline: "direct", Fault: "poison", Record: "orders-2@17", Outcome: "sent to ConsumerFailureQueue", Attempts: 1, Applied: 0},
			{Pipeline: "direct", Fault: "transient", Record: "orders-0@40", Outcome: "applied on retry", Attempts: 2, Applied: 1},
			{Pipeline: "fan-out", Fault: "timeout", Record: "orders-4@88", Outcome: "applied after the invocation timed out and the instance was replaced", Attempts: 2, Applied: 1},
		},
		Mappings: []Mapping{
			{Name: "ConsumerSelfManagedMapping", Function: "ConsumerFunction", Source: "orders", In: 500, Done: 499, Failed: 3, DeadLettered: 1, Invocations: 104, Errors: 3},
			{Name: "DispatcherMapping", Function: "DispatcherFunction", Source: "orders", In: 500, Done: 500, Invocations: 6},
			{Name: "WorkerMapping", Function: "WorkerFunction", Source: "WorkQueue.fifo", In: 502, Done: 499, Failed: 3, DeadLettered: 1, Invocations: 170, Errors: 2},
		},
		Series: Series{Throughput: map[string][]Point{}, Lag: map[string][]Point{}},
	}
	sp, err := NewSpeedup(r.Pipelines, "fan-out", "direct")
	if err != nil {
		panic(err)
	}
	r.Speedup = sp
	// Direct: 16.7/s for 30 s, each partition's lag draining from 100.
	for i := 0; i <= 62; i++ {
		t := float64(i) * 0.5
		v := 16.7 + 1.5*math.Sin(float64(i))
		if i < 2 {
			v = float64(i) * 8
		}
		if t > 30 {
			v = 0
		}
		r.Series.Throughput["ConsumerFunction"] = append(r.Series.Throughput["ConsumerFunction"], Point{t, v})
		for p := range 5 {
			lag := math.Max(0, 100-t*(100/30.0)+float64(p)*2*math.Sin(t))
			key := fmt.Sprintf("orders-%d", p)
			r.Series.Lag[key] = append(r.Series.Lag[key], Point{t, math.Round(lag)})
		}
	}
	// Fan-out, from 32 s: about 500/s for a second.
	for i := 0; i <= 8; i++ {
		t := 32 + float64(i)*0.5
		d, w := 0.0, 0.0
		if i >= 1 && i <= 3 {
			d, w = 510, 480+float64(i)*10
		}
		r.Series.Throughput["DispatcherFunction"] = append(r.Series.Throughput["DispatcherFunction"], Point{t, d})
		r.Series.Throughput["WorkerFunction"] = append(r.Series.Throughput["WorkerFunction"], Point{t, w})
		r.Series.Lag["WorkQueue.fifo"] = append(r.Series.Lag["WorkQueue.fifo"], Point{t, math.Max(0, float64(3-i)*120)})
	}
	return r
}
