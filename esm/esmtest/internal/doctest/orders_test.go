package orders_test

import (
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/esm/esmtest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// handle is the function under test: it applies an order, and refuses one it cannot read.
func handle(_ context.Context, r *kafkaevent.Record) error {
	var o struct {
		ID int `json:"id"`
	}
	if err := json.Unmarshal(r.Value, &o); err != nil || o.ID == 0 {
		return batch.Permanent(fmt.Errorf("not an order: %q", r.Value))
	}
	return nil
}

func TestPoisonOrderIsGivenUp(t *testing.T) {

	k := esmtest.NewKafka(t, batch.KafkaHandler(handle),
		esmtest.KafkaMapping{
			Topics:                []string{"orders"},
			BatchSize:             10,
			FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures},
			MaximumRetryAttempts:  new(2),
			DestinationConfig:     &esmtest.DestinationConfig{OnFailure: esmtest.OnFailure{Destination: "kafka://orders-failed"}},
		},
		esmtest.WithPartitions(2))

	k.ProduceTo(0, kgo.StringRecord(`{"id":1}`), kgo.StringRecord(`oops`), kgo.StringRecord(`{"id":3}`))
	k.ProduceTo(1, kgo.StringRecord(`{"id":4}`))
	if err := k.WaitIdle(10 * time.Second); err != nil {
		t.Fatal(err)
	}

	// batch reported the poison record and the one after it (so that they come back in
	// order); the mapping retried them twice, then gave them up to the topic, one on-failure
	// record each, and committed past them. The other partition was not held up.
	var given []int64
	for _, f := range k.OnFailure() {
		if f.Partition != "orders-0" || f.Condition != esmtest.ConditionRetryAttemptsExhausted || f.InvokeCount != 3 {
			t.Errorf("on-failure record %+v", f)
		}
		given = append(given, f.FirstOffset)
	}
	if !slices.Equal(given, []int64{1, 2}) {
		t.Errorf("given up: offsets %v, want 1 2", given)
	}
	if c := k.Committed(); c[0] != 3 || c[1] != 1 {
		t.Errorf("committed %v, want orders-0 at 3 and orders-1 at 1", c)
	}
	for _, inv := range k.Invocations() {
		if inv.Err != nil {
			t.Errorf("invocation %d failed: %v", inv.N, inv.Err)
		}
	}
}
