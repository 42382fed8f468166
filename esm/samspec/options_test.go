package samspec_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

type nopSender struct{}

func (nopSender) SendMessage(context.Context, *sqs.SendMessageInput, ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	return nil, errors.New("not sent")
}

// readTemplate reads the repository's template.yaml with the mappings klt local runs.
func readTemplate(t *testing.T) (*samspec.Resolver, map[string]*samspec.MappingSpec) {
	t.Helper()
	tpl, err := samspec.ReadInvokeTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := samspec.NewLocalResolver(tpl, nil)
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := samspec.LocalMappings(tpl, r)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*samspec.MappingSpec{}
	for _, m := range ms {
		got[m.Id] = m
	}
	return r, got
}

// The template's ConsumerSelfManagedMapping converts to options esm accepts; its on-failure
// queue needs the queue's URL and a client, and without them the conversion fails rather
// than drop what would be given up on.
func TestKafkaOptionsOfTheTemplate(t *testing.T) {
	r, ms := readTemplate(t)
	m := ms["ConsumerSelfManagedMapping"]
	if m == nil {
		t.Fatalf("no ConsumerSelfManagedMapping among %v", ms)
	}
	// The template's defaults are provisioned mode: the three metric groups, the system
	// logs at WARN and pollers from 1 to 3, of which klt local names the logs and the
	// autoscaling as not emulated.
	if !slices.Equal(m.Metrics, []string{esm.MetricsEventCount, esm.MetricsErrorCount, esm.MetricsKafka}) ||
		m.SystemLogLevel != "WARN" || m.MinimumPollers != 1 || m.MaximumPollers != 3 || len(m.NotEmulated()) != 2 {
		t.Errorf("metrics %v, log level %q, not emulated %q", m.Metrics, m.SystemLogLevel, m.NotEmulated())
	}
	if _, err := m.KafkaOptions(r, samspec.KafkaTargets{}); err == nil || !strings.Contains(err.Error(), "KafkaOnFailureQueue") {
		t.Errorf("options without the on-failure queue's URL: %v", err)
	}
	r.QueueURLs["KafkaOnFailureQueue"] = "http://127.0.0.1:1/123456789012/KafkaOnFailureQueue"
	opts, err := m.KafkaOptions(r, samspec.KafkaTargets{Brokers: []string{"127.0.0.1:9092"}, SQS: nopSender{}})
	if err != nil {
		t.Fatal(err)
	}
	// name, group, retries, function ARN, starting position, bootstrap servers, event source,
	// pollers (MinimumPollers), batch size, window, filter, partial batch responses, metrics
	// (MetricsConfig), destination.
	if len(opts) != 14 {
		t.Errorf("%d options, want 14", len(opts))
	}
	fn := esm.InvokerFunc(func(context.Context, []byte) (esm.Response, error) { return esm.Response{}, nil })
	if _, err := esm.NewKafka([]string{"127.0.0.1:9092"}, m.Topics[0], fn, opts...); err != nil {
		t.Errorf("esm refuses the template's options: %v", err)
	}
	if d, err := samspec.Destination(m, r, nopSender{}); err != nil || d == nil || !strings.Contains(d.String(), "KafkaOnFailureQueue") {
		t.Errorf("destination %v, %v", d, err)
	}
	if _, err := m.SQSOptions(r); err == nil {
		t.Error("SQS options of a Kafka mapping: no error")
	}

	m.OnFailure = "kafka://orders-failed"
	if got := m.OnFailureTopic(); got != "orders-failed" {
		t.Errorf("OnFailureTopic %q", got)
	}
	m.OnFailure = "arn:aws:sns:us-east-1:123456789012:alerts"
	if _, err := m.KafkaOptions(r, samspec.KafkaTargets{SQS: nopSender{}}); err == nil || !strings.Contains(err.Error(), "no SNS") {
		t.Errorf("an SNS destination: %v", err)
	}
}

func TestSQSOptionsOfTheTemplate(t *testing.T) {
	r, ms := readTemplate(t)
	m := ms["WorkerFunction.Work"]
	if m == nil {
		t.Fatalf("no WorkerFunction.Work among %v", ms)
	}
	opts, err := m.SQSOptions(r)
	if err != nil {
		t.Fatal(err)
	}
	// name, queue ARN, batch size, partial batch responses, metrics (MetricsConfig: EventCount),
	// maximum concurrency.
	if len(opts) != 6 {
		t.Errorf("%d options, want 6", len(opts))
	}
	if _, err := m.KafkaOptions(r, samspec.KafkaTargets{}); err == nil {
		t.Error("Kafka options of an SQS mapping: no error")
	}
}
