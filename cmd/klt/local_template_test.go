package main

import (
	"testing"
	"time"
)

func TestLocalMappingsOfTheTemplate(t *testing.T) {
	tpl, err := readInvokeTemplate("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r := newLocalResolver(tpl, map[string]string{"KafkaBootstrapServers": "127.0.0.1:9092"})
	ms, skipped, err := localMappings(tpl, r)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]*mappingSpec{}
	for _, m := range ms {
		got[m.id] = m
	}
	if len(ms) != 3 {
		t.Fatalf("%d mappings: %v", len(ms), got)
	}
	c := got["ConsumerSelfManagedMapping"]
	if c == nil || c.function != "ConsumerFunction" || c.kind != kafkaMapping || c.topics[0] != "orders" ||
		c.batchSize != 100 || c.window != time.Second || c.filter == nil || !c.reportFailures ||
		c.groupID != "local-consumer" || c.startingPosition != "TRIM_HORIZON" || c.onFailure == "" || c.maxRetry != 10 {
		t.Errorf("consumer mapping: %+v", c)
	}
	d := got["DispatcherSelfManagedMapping"]
	if d == nil || d.function != "DispatcherFunction" || d.batchSize != 500 || d.filter != nil || d.groupID != "local-dispatcher" {
		t.Errorf("dispatcher mapping: %+v", d)
	}
	w := got["WorkerFunction.Work"]
	if w == nil || w.kind != sqsMapping || w.queue != "WorkQueue" || w.batchSize != 10 || w.maxConcurrency != 50 || !w.reportFailures || w.window != -1 {
		t.Errorf("worker mapping: %+v", w)
	}
	if len(skipped) != 1 || skipped[0].function != "ProducerFunction" || skipped[0].typ != "DynamoDB" {
		t.Errorf("skipped: %+v", skipped)
	}
}
