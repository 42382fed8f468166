package batch_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

func TestProcessKafkaStopsPartitionAtFailure(t *testing.T) {
	b := kafkaeventtest.NewBuilder()
	for i := 0; i < 5; i++ {
		b.Add("orders", 0, []byte{byte('a' + i)})
		b.Add("orders", 1, []byte{byte('a' + i)})
	}
	ev := b.Event()
	var seen []string // one partition at a time: no lock needed
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		seen = append(seen, fmt.Sprintf("%d@%d", r.Partition, r.Offset))
		if r.Partition == 0 && r.Offset == 2 {
			return batch.Permanent(errors.New("bad"))
		}
		return nil
	}, batch.WithConcurrency(1), batch.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		t.Fatal(err)
	}
	// Partition 0 stops at its failure, once (a permanent error is not retried); partition 1
	// goes to the end.
	if got, want := strings.Join(seen, " "), "0@0 0@1 0@2 1@0 1@1 1@2 1@3 1@4"; got != want {
		t.Errorf("handled %s, want %s", got, want)
	}
	out, _ := json.Marshal(resp)
	want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":2}},{"itemIdentifier":{"partition":"orders-0","offset":3}},{"itemIdentifier":{"partition":"orders-0","offset":4}}]}`
	if string(out) != want {
		t.Errorf("response\n%s\nwant\n%s", out, want)
	}
	ok, _ := batch.ProcessKafka(context.Background(), ev, func(context.Context, *kafkaevent.Record) error { return nil },
		batch.WithLogger(slog.New(slog.DiscardHandler)))
	if out, _ := json.Marshal(ok); string(out) != `{"batchItemFailures":[]}` {
		t.Errorf("full success = %s", out)
	}
}

// KafkaHandler's result is a lambda.Handler: the raw payload in, the response JSON out.
func TestKafkaFuncInvoke(t *testing.T) {
	ev := kafkaeventtest.NewBuilder().Add("orders", 0, []byte("a")).Add("orders", 0, []byte("b")).Event()
	payload, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	h := batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
		if string(r.Value) == "b" {
			return batch.Permanent(errors.New("no"))
		}
		return nil
	}, batch.WithLogger(slog.New(slog.DiscardHandler)))
	out, err := h.Invoke(context.Background(), payload)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"batchItemFailures":[{"itemIdentifier":{"partition":"orders-0","offset":1}}]}`; string(out) != want {
		t.Errorf("Invoke = %s, want %s", out, want)
	}
	if _, err := h.Invoke(context.Background(), []byte(`{"eventSource":"aws:kafka"}`)); err == nil {
		t.Error("a malformed payload gave no error")
	}
}
