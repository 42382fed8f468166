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
	ok := Observed(0)
	r := &Report{
		Tool: "klt local", Version: "v0.4.0", Started: time.Date(2025, 11, 3, 14, 5, 9, 0, time.UTC),
		Template: "template.yaml",
		Machine:  Machine{GOOS: "linux", GOARCH: "amd64", CPUs: 2},
		Scenario: Scenario{Source: "a generator of orders", Keys: 50, WorkMS: 300, Partitions: 5, Rate: 0},
		Pipelines: []Pipeline{
			{Name: "direct", Functions: []string{"ConsumerFunction"}, Mappings: []string{"ConsumerSelfManagedMapping"}, Phase: PhaseLoad,
				Records: 500, Seconds: 30.1, RecordsPerSecond: 16.6, LatencyMsP50: 15200, LatencyMsP99: 29800,
				Lost: ok, AppliedTwice: ok, OrderViolations: ok, FailureQueue: Observed(1), Retried: 2, FailedInvocations: 3,
				Fates:    map[string]int64{FateApplied: 499, FateFailureQueue: 1},
				Observed: []string{"requests to the orders API (OrdersApiUrl), by their Idempotency-Key", "ConsumerFailureQueue, by the envelope's record"},
				Resources: []Resource{{Resource: "OrdersApiUrl", Kind: "http", Via: "Idempotency-Key", Applied: Observed(499), AppliedTwice: ok, OrderViolations: ok,
					LatencyMsP50: ptr(15200.0), LatencyMsP99: ptr(29800.0)}}},
			{Name: "fan-out", Functions: []string{"DispatcherFunction", "WorkerFunction"}, Mappings: []string{"DispatcherMapping", "WorkerMapping"}, Phase: PhaseLoad,
				Records: 500, Seconds: 0.97, RecordsPerSecond: 517, LatencyMsP50: 610, LatencyMsP99: 940,
				Lost: ok, AppliedTwice: ok, OrderViolations: ok, FailureQueue: ok, DeadLettered: 1, Retried: 2, FailedInvocations: 2,
				Fates:    map[string]int64{FateApplied: 499, FateDeadLettered: 1},
				Observed: []string{"messages on WorkQueue.fifo, by the record attribute", "requests to the orders API, by their Idempotency-Key"},
				Resources: []Resource{{Resource: "OrdersApiUrl", Kind: "http", Via: "Idempotency-Key", Applied: Observed(499), AppliedTwice: ok, OrderViolations: ok,
					LatencyMsP50: ptr(610.0), LatencyMsP99: ptr(940.0)}}},
		},
		Faults: []Fault{
			{Pipeline: "direct", Fault: "poison", Record: "orders-2@17", Fate: FateFailureQueue, Outcome: "sent to ConsumerFailureQueue", Attempts: 1, Applied: Observed(0)},
			{Pipeline: "direct", Fault: "transient", Record: "orders-0@40", Fate: FateApplied, Outcome: "applied on retry", Attempts: 2, Applied: Observed(1)},
			{Pipeline: "fan-out", Fault: "timeout", Record: "orders-4@88", Fate: FateApplied, Outcome: "applied after the invocation timed out and the instance was replaced", Attempts: 2, Applied: Observed(1)},
		},
		Records: []RecordFate{
			{Pipeline: "direct", Record: "orders-2@17", Key: "customer-7", Fate: FateFailureQueue, Attempts: 1, Applied: Observed(0), Where: "sent to ConsumerFailureQueue", Why: "invalid order: negative total"},
			{Pipeline: "direct", Record: "orders-0@40", Key: "customer-3", Fate: FateApplied, Attempts: 2, Applied: Observed(1), Where: "OrdersApiUrl", Why: "orders API: 503"},
			{Pipeline: "fan-out", Record: "orders-4@88", Key: "customer-9", Fate: FateApplied, Attempts: 2, Applied: Observed(1), Where: "OrdersApiUrl", Why: "Sandbox.Timedout"},
			{Pipeline: "fan-out", Record: "orders-1@5", Key: "customer-1", Fate: FateDeadLettered, Attempts: 3, Applied: Observed(0), Where: "moved to WorkDeadLetterQueue.fifo", Why: "maxReceiveCount 3 reached"},
		},
		FailedMessages: []FailedMessage{
			{Pipeline: "direct", Queue: "ConsumerFailureQueue", Kind: FailureQueueKind, Record: "orders-2@17", Why: "invalid order: negative total",
				At: time.Date(2025, 11, 3, 14, 5, 21, 0, time.UTC), Body: `{"record":"orders-2@17","error":"invalid order: negative total","value":"eyJvcmRlcklkIjoib3JkZXItMTcifQ=="}`},
			{Pipeline: "fan-out", Queue: "WorkDeadLetterQueue.fifo", Kind: DeadLetterQueueKind, Record: "orders-1@5", Why: "maxReceiveCount 3 reached",
				At: time.Date(2025, 11, 3, 14, 5, 44, 0, time.UTC), Body: `{"orderId":"order-5","customer":"customer-1","total":-1}`},
		},
		Mappings: []Mapping{
			{Name: "ConsumerSelfManagedMapping", Function: "ConsumerFunction", Source: "orders",
				In: 500, Delivered: 505, Succeeded: 500, FailureQueue: Observed(1), ReportedFailed: 2, ErrorFailed: 3, Retried: 5,
				Invocations: 104, Errors: 3, MetricGroups: []string{"EventCount", "ErrorCount", "KafkaMetrics"},
				Metrics: []Metric{{"DroppedEventCount", "Sum", 0}, {"FailedInvokeEventCount", "Sum", 5}, {"FilteredOutEventCount", "Sum", 0},
					{"InvokedEventCount", "Sum", 505}, {"MaxOffsetLag", "Maximum", 100}, {"OnFailureDestinationDeliveredEventCount", "Sum", 0},
					{"PolledEventCount", "Sum", 500}, {"SumOffsetLag", "Sum", 500}}},
			{Name: "DispatcherMapping", Function: "DispatcherFunction", Source: "orders", In: 500, Delivered: 500, Succeeded: 500, Invocations: 6},
			{Name: "WorkerMapping", Function: "WorkerFunction", Source: "WorkQueue.fifo", OnFailure: "WorkDeadLetterQueue.fifo",
				In: 500, Delivered: 503, Succeeded: 499, ReportedFailed: 1, ErrorFailed: 2, Retried: 3, DeadLettered: 1, Invocations: 170, Errors: 2},
		},
		Series: Series{Throughput: map[string][]Point{}, Lag: map[string][]Point{},
			Phases: []PhaseSpan{{Name: "direct", Start: 0, End: 31}, {Name: "fan-out", Start: 31, End: 36}}},
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

func ptr[T any](v T) *T { return &v }
