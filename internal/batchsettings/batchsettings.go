// Package batchsettings carries the settings of package batch's options that every processor
// of Kafka batches has, whatever it does with the records (its logger, its metrics, the
// deadline margin, the failure sink and the records' correlation IDs), to package fanout, whose Dispatcher takes batch's
// options for them (fanout.WithBatchOptions): each option is defined once, in batch, and
// reading them is not part of batch's API.
//
// It imports nothing of the toolkit, so that both batch and fanout can import it: the sink
// and its policy travel as their underlying values.
package batchsettings

import (
	"io"
	"log/slog"
	"time"
)

// Settings are what batch's options set for the behaviours every processor shares.
type Settings struct {
	Logger         *slog.Logger  // batch.WithLogger; by default slog.Default()
	Metrics        io.Writer     // batch.WithMetrics; by default nil, no metrics
	Namespace      string        // batch.WithMetricsNamespace; by default batch.DefaultNamespace
	DeadlineMargin time.Duration // batch.WithDeadlineMargin; by default 500 ms
	Sink           any           // batch.WithSink: a batch.Sink; by default nil, no sink
	SinkPolicy     int           // batch.WithSink's policy, a batch.SinkPolicy
	Correlation    string        // batch.WithCorrelationIDFrom: the header that holds a record's correlation ID; "": none
}

// Read applies opts, a []batch.Option, and returns the Settings they make. An option given an
// invalid value is an error (a *toolkit.OptionError), and so is an option that sets none of
// the Settings (batch.WithRetry, batch.WithFilter, ...), which the caller would otherwise
// ignore in silence. Package batch sets Read when it is initialised; a package that uses it
// imports batch for its options.
var Read func(opts any) (Settings, error)
