package metrics_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"regexp"

	"github.com/kafkalambda/toolkit/metrics"
)

// stable hides the document's timestamp, which changes every run.
func stable(b []byte) string {
	return regexp.MustCompile(`"Timestamp":\d+`).ReplaceAllString(string(b), `"Timestamp":0`)
}

type Order struct{ Total float64 }

// Handle gives each invocation its own recorder and writes its metrics when the handler
// returns. In a function: lambda.Start(metrics.Handle(m, handler)), with standard output as
// the writer.
func ExampleHandle() {
	var out bytes.Buffer
	m, err := metrics.New(metrics.WithNamespace("Orders"), metrics.WithService("checkout"),
		metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	if err != nil {
		panic(err)
	}
	handler := metrics.Handle(m, func(ctx context.Context, o Order) (string, error) {
		if err := metrics.Add(ctx, "OrdersPlaced", metrics.Count, 1); err != nil {
			return "", err
		}
		return "ok", metrics.Add(ctx, "OrderValue", metrics.None, o.Total)
	})
	if _, err := handler(context.Background(), Order{Total: 42.5}); err != nil {
		panic(err)
	}
	fmt.Print(stable(out.Bytes()))
	// Output:
	// {"service":"checkout","OrdersPlaced":[1],"OrderValue":[42.5],"_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"Orders","Dimensions":[["service"]],"Metrics":[{"Name":"OrdersPlaced","Unit":"Count"},{"Name":"OrderValue","Unit":"None"}]}]}}
}

// New reads Powertools' environment variables; options win over them.
func ExampleNew() {
	os.Setenv(metrics.EnvNamespace, "FromEnvironment")
	defer os.Unsetenv(metrics.EnvNamespace)
	if _, err := metrics.New(); err == nil {
		fmt.Println("namespace from", metrics.EnvNamespace)
	}
	_, err := metrics.New(metrics.WithNamespace("AWS/Lambda"))
	fmt.Println(err)
	// Output:
	// namespace from POWERTOOLS_METRICS_NAMESPACE
	// metrics: invalid option WithNamespace: namespaces starting "AWS/" are AWS's
}

// Add refuses at the call what CloudWatch would drop with the whole document.
func ExampleAdd() {
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(new(bytes.Buffer)))
	ctx := m.Start(context.Background())
	err := metrics.Add(ctx, "Latency", "Millisecond", 12)
	fmt.Println(errors.Is(err, metrics.ErrInvalid), err)
	// Output:
	// true metrics: Add "Latency": unit "Millisecond" is not a CloudWatch unit
}

// AddWithResolution with High stores a metric at one-second resolution (StorageResolution 1).
func ExampleAddWithResolution() {
	var out bytes.Buffer
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	ctx := m.Start(context.Background())
	_ = metrics.AddWithResolution(ctx, "QueueDepth", metrics.Count, metrics.High, 17)
	_ = metrics.Flush(ctx)
	fmt.Print(stable(out.Bytes()))
	// Output:
	// {"QueueDepth":[17],"_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"Orders","Dimensions":[[]],"Metrics":[{"Name":"QueueDepth","Unit":"Count","StorageResolution":1}]}]}}
}

// Dimensions, dimension sets and metadata: every metric is published under each dimension
// set; metadata is searchable in the log line without being a metric.
func ExampleAddDimensionSet() {
	var out bytes.Buffer
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithService("checkout"),
		metrics.WithDefaultDimensions(map[string]string{"environment": "prod"}),
		metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	ctx := m.Start(context.Background())
	_ = metrics.AddDimension(ctx, "tenant", "acme")
	_ = metrics.AddDimensionSet(ctx, map[string]string{"region": "eu-west-1"})
	_ = metrics.AddMetadata(ctx, "order_id", "o-123")
	_ = metrics.Add(ctx, "OrdersPlaced", metrics.Count, 1)
	_ = metrics.Flush(ctx)
	fmt.Print(stable(out.Bytes()))
	// Output:
	// {"service":"checkout","environment":"prod","tenant":"acme","region":"eu-west-1","order_id":"o-123","OrdersPlaced":[1],"_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"Orders","Dimensions":[["service","environment","tenant"],["service","environment","region"]],"Metrics":[{"Name":"OrdersPlaced","Unit":"Count"}]}]}}
}

// Wrap is Handle for a lambda.Handler, such as the ones package batch returns:
// lambda.StartHandler(m.Wrap(batch.KafkaHandler(process))).
func ExampleMetrics_Wrap() {
	var out bytes.Buffer
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	h := m.Wrap(invoker(func(ctx context.Context, payload []byte) ([]byte, error) {
		return payload, metrics.Add(ctx, "PayloadBytes", metrics.Bytes, float64(len(payload)))
	}))
	_, err := h.Invoke(context.Background(), []byte(`{"records":{}}`))
	fmt.Println(err, bytes.Contains(out.Bytes(), []byte(`"PayloadBytes":[14]`)))
	// Output:
	// <nil> true
}

type invoker func(context.Context, []byte) ([]byte, error)

func (f invoker) Invoke(ctx context.Context, b []byte) ([]byte, error) { return f(ctx, b) }

// Start and Flush, for a handler neither Handle nor Wrap fits: Flush writes what the
// invocation added so far, and returns a write that failed.
func ExampleFlush() {
	var out bytes.Buffer
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	ctx := m.Start(context.Background())
	for _, ms := range []float64{12, 15, 9} {
		_ = metrics.Add(ctx, "Latency", metrics.Milliseconds, ms)
	}
	if err := metrics.Flush(ctx); err != nil {
		panic(err)
	}
	fmt.Print(stable(out.Bytes()))
	// Output:
	// {"Latency":[12,15,9],"_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"Orders","Dimensions":[[]],"Metrics":[{"Name":"Latency","Unit":"Milliseconds"}]}]}}
}

// AddMetadata adds a member that is neither metric nor dimension: found by Logs Insights,
// not billed as a metric. Every document also carries the request ID as function_request_id
// when the handler runs under Lambda.
func ExampleAddMetadata() {
	var out bytes.Buffer
	m, _ := metrics.New(metrics.WithNamespace("Orders"), metrics.WithOutput(&out), metrics.WithColdStartMetric(false))
	ctx := m.Start(context.Background())
	_ = metrics.AddMetadata(ctx, "order", map[string]any{"id": "o-1", "lines": 3})
	_ = metrics.Add(ctx, "OrdersPlaced", metrics.Count, 1)
	_ = metrics.Flush(ctx)
	fmt.Print(stable(out.Bytes()))
	// Output:
	// {"order":{"id":"o-1","lines":3},"OrdersPlaced":[1],"_aws":{"Timestamp":0,"CloudWatchMetrics":[{"Namespace":"Orders","Dimensions":[[]],"Metrics":[{"Name":"OrdersPlaced","Unit":"Count"}]}]}}
}
