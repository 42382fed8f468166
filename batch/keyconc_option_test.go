package batch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// WithKeyConcurrency is refused, no record handled, without WithIdempotency, with n < 1, with
// WithConcurrency, and on a batch of a standard SQS queue.
func TestKeyConcurrencyOptionErrors(t *testing.T) {
	store := idempotencytest.NewStore()
	ev := &kafkaevent.Event{Partitions: []kafkaevent.Partition{{Topic: "t", Number: 0, Records: []kafkaevent.Record{{Topic: "t", Offset: 1}}}}}
	called := false
	h := func(context.Context, *kafkaevent.Record) error { called = true; return nil }
	for want, opts := range map[string][]batch.Option{
		"needs WithIdempotency": {batch.WithKeyConcurrency(4)},
		"want at least 1":       {batch.WithKeyConcurrency(0), batch.WithIdempotency(store)},
		"give one of the two":   {batch.WithKeyConcurrency(4), batch.WithIdempotency(store), batch.WithConcurrency(2)},
	} {
		_, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
		var oe *toolkit.OptionError
		if !errors.As(err, &oe) || oe.Option != "WithKeyConcurrency" && !strings.HasPrefix(oe.Option, "WithKeyConcurrency(") || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
		if _, err := batch.KafkaHandler(h, opts...)(context.Background(), ev); !errors.Is(err, toolkit.ErrInvalidOption) {
			t.Errorf("KafkaHandler, %s: %v", want, err)
		}
	}
	if called {
		t.Error("a handler ran under an invalid option")
	}
	std := &events.SQSEvent{Records: []events.SQSMessage{{MessageId: "m1", EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:q"}}}
	_, err := batch.ProcessSQS(context.Background(), std, func(context.Context, *events.SQSMessage) error { called = true; return nil },
		batch.WithKeyConcurrency(4), batch.WithIdempotency(store))
	if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), "standard queue") || called {
		t.Errorf("standard queue: %v, handler called %v", err, called)
	}
}
