package batch_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// One meaning of "failed" everywhere: Failed is the records whose handling failed, each with
// exactly one "record failed" line and one FailureHook call, whether the sink then took it or
// the response reports it; Reported is the records the response reports, the failed ones and
// those held behind them. The summary line, the BatchResult and the metrics agree, and the
// counts add up to the batch.
func TestFailedMeansOneLineEach(t *testing.T) {
	// orders-0: offset 1 is permanent (to the sink), offset 2 fails every attempt (reported,
	// with offsets 3 and 4 behind it); orders-1: all fine.
	ev := kafkaParts("orders", []int32{0, 1}, 5, 0)
	var logs failureLog
	var metrics bytes.Buffer
	fails, results := &failureHook{}, &resultHook{}
	sink := &memSink{}
	resp, err := batch.ProcessKafka(context.Background(), ev, func(_ context.Context, r *kafkaevent.Record) error {
		switch {
		case r.Partition == 0 && r.Offset == 1:
			return batch.Permanent(errors.New("bad record"))
		case r.Partition == 0 && r.Offset == 2:
			return errors.New("database unavailable")
		}
		return nil
	}, batch.WithSink(sink, batch.SinkPermanent), batch.WithRetry(2, 0), batch.WithLogger(logs.logger()),
		batch.WithHooks(fails, results), batch.WithMetrics(&metrics))
	if err != nil {
		t.Fatal(err)
	}
	if got, want := kafkaJSON(t, resp), wantKafka("orders-0@2", "orders-0@3", "orders-0@4"); got != want {
		t.Fatalf("response %s, want %s", got, want)
	}
	lines := logs.lines(t, "record failed")
	if len(lines) != 2 || len(fails.got) != 2 || len(sink.got) != 1 {
		t.Fatalf("%d failure lines, %d hook calls, %d sent to the sink; want 2, 2, 1", len(lines), len(fails.got), len(sink.got))
	}
	sum := logs.lines(t, "batch processed")
	if len(sum) != 1 {
		t.Fatalf("summary lines %v", sum)
	}
	m := emfCounts(t, &metrics)
	for _, c := range []struct {
		name       string
		line, emf  any
		result     int
		want       float64
		wantResult int
	}{
		{"failed", sum[0]["failed"], m["Failed"], results.got[0].Failed, 2, 2},
		{"reported", sum[0]["reported"], m["Reported"], results.got[0].Reported, 3, 3},
		{"sentToSink", sum[0]["sentToSink"], m["SentToSink"], results.got[0].SentToSink, 1, 1},
		{"processed", sum[0]["processed"], m["Processed"], results.got[0].Processed, 6, 6},
	} {
		if c.line != c.want || c.emf != c.want || c.result != c.wantResult {
			t.Errorf("%s: summary line %v, metrics %v, BatchResult %d; want %v", c.name, c.line, c.emf, c.result, c.want)
		}
	}
	r := results.got[0]
	if held := r.Reported - r.Failed + r.SentToSink; r.Processed+r.Filtered+r.Failed+held != ev.Len() {
		t.Errorf("counts %+v do not add up to %d records", r, ev.Len())
	}
}
