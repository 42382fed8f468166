package batch_test

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/batchsettings"
)

// batchsettings.Read gives the values of the shared options, the defaults for the others, and
// refuses an option it does not hold rather than drop it in silence.
func TestReadSettings(t *testing.T) {
	s, err := batchsettings.Read([]batch.Option(nil))
	if err != nil || s.Logger != slog.Default() || s.Metrics != nil || s.Namespace != batch.DefaultNamespace ||
		s.DeadlineMargin != 500*time.Millisecond || s.Sink != nil {
		t.Errorf("defaults: %+v, %v", s, err)
	}
	l := slog.New(slog.DiscardHandler)
	sink := &memSink{}
	s, err = batchsettings.Read([]batch.Option{batch.WithLogger(l), batch.WithMetrics(io.Discard), batch.WithMetricsNamespace("NS"),
		batch.WithDeadlineMargin(time.Second), batch.WithSink(sink, batch.SinkExhausted), batch.WithCorrelationIDFrom("correlation_id")})
	if err != nil || s.Logger != l || s.Metrics != io.Discard || s.Namespace != "NS" || s.DeadlineMargin != time.Second ||
		s.Sink != sink || s.SinkPolicy != int(batch.SinkExhausted) || s.Correlation != "correlation_id" {
		t.Errorf("set: %+v, %v", s, err)
	}
	for want, opt := range map[string]batch.Option{
		"WithRetry":             batch.WithRetry(3, time.Millisecond),
		"WithConcurrency":       batch.WithConcurrency(2),
		"WithErrorWhenAllFail":  batch.WithErrorWhenAllFail(),
		"WithCorrelationIDFrom": batch.WithCorrelationIDFrom(""),
		"WithLogger(nil)":       batch.WithLogger(nil),
		"Option(nil)":           nil,
	} {
		if _, err := batchsettings.Read([]batch.Option{opt}); !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v", want, err)
		}
	}
}
