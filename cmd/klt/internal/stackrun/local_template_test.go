package stackrun

import (
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm/samspec"
)

func TestLocalMappingsOfTheTemplate(t *testing.T) {
	tpl, err := samspec.ReadInvokeTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := samspec.NewLocalResolver(tpl, map[string]string{"KafkaBootstrapServers": "127.0.0.1:9092"})
	if err != nil {
		t.Fatal(err)
	}
	ms, skipped, err := samspec.LocalMappings(tpl, r)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*samspec.MappingSpec{}
	for _, m := range ms {
		got[m.Id] = m
	}
	if len(ms) != 3 {
		t.Fatalf("%d mappings: %v", len(ms), got)
	}
	c := got["ConsumerSelfManagedMapping"]
	if c == nil || c.Function != "ConsumerFunction" || c.Kind != samspec.KafkaMapping || c.Topics[0] != "orders" ||
		c.BatchSize != 100 || c.Window != time.Second || c.Filter == nil || !c.ReportFailures ||
		c.GroupID != "local-consumer" || c.StartingPosition != "TRIM_HORIZON" || c.OnFailure == "" || c.MaxRetry != 10 {
		t.Errorf("consumer mapping: %+v", c)
	}
	d := got["DispatcherSelfManagedMapping"]
	if d == nil || d.Function != "DispatcherFunction" || d.BatchSize != 500 || d.Filter != nil || d.GroupID != "local-dispatcher" {
		t.Errorf("dispatcher mapping: %+v", d)
	}
	w := got["WorkerFunction.Work"]
	if w == nil || w.Kind != samspec.SqsMapping || w.Queue != "WorkQueue" || w.BatchSize != 10 || w.MaxConcurrency != 50 || !w.ReportFailures || w.Window != -1 {
		t.Errorf("worker mapping: %+v", w)
	}
	if len(skipped) != 1 || skipped[0].Function != "ProducerFunction" || skipped[0].Typ != "DynamoDB" {
		t.Errorf("skipped: %+v", skipped)
	}
}
