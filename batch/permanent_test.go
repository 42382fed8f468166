package batch_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// decodeError is a foreign error type, as another package (codec) defines one: it says it is
// permanent with a method, without importing batch.
type decodeError struct{ permanent bool }

func (e *decodeError) Error() string   { return fmt.Sprintf("decode error (permanent %v)", e.permanent) }
func (e *decodeError) Permanent() bool { return e.permanent }

// IsPermanent honours any error in the chain whose Permanent method returns true, however it
// is wrapped, and one that returns false makes nothing permanent; such an error fails its
// record at once, not retried, and goes to the sink like batch.Permanent's.
func TestIsPermanentHonoursPermanentMethod(t *testing.T) {
	yes, no := &decodeError{true}, &decodeError{false}
	for _, tc := range []struct {
		err  error
		want bool
	}{
		{yes, true},
		{no, false},
		{fmt.Errorf("value: %w", yes), true},
		{fmt.Errorf("value: %w", no), false},
		{fmt.Errorf("outer: %w", fmt.Errorf("inner %w: %w", no, yes)), true},         // a later error of a join
		{fmt.Errorf("outer: %w", &decodeError{false}), false},                        // false says nothing
		{fmt.Errorf("%w (wrapping %w)", no, batch.Permanent(errors.New("x"))), true}, // batch's own mark
		{errors.Join(errors.New("a"), fmt.Errorf("b: %w", yes)), true},
		{errors.New("plain"), false},
		{nil, false},
	} {
		if got := batch.IsPermanent(tc.err); got != tc.want {
			t.Errorf("IsPermanent(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}

	calls := 0
	sink := &memSink{}
	ev := kafkaParts("orders", []int32{0}, 2, 0)
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		calls++
		if r.Offset == 0 {
			return fmt.Errorf("record: %w", yes)
		}
		return nil
	}, batch.WithRetry(5, 0), batch.WithSink(sink, batch.SinkPermanent), batch.WithLogger(quietLogger))
	if err != nil || len(resp.BatchItemFailures) != 0 || calls != 2 || len(sink.got) != 1 || !sink.got[0].Permanent {
		t.Errorf("a record failing with a permanent foreign error: %d calls, response %+v, %v, sunk %d", calls, resp, err, len(sink.got))
	}
}
