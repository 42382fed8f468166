package metrics_test

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/metrics"
)

var discard = slog.New(slog.DiscardHandler)

// The documents packages batch and fanout write through this package (one per batch, one per
// Dispatch) pass the EMF specification's schema, as the function's own do.
func TestToolkitDocumentsAgainstSchema(t *testing.T) {
	ctx := lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{AwsRequestID: "req-1"})
	ev := kafkaeventtest.NewBuilder(kafkaeventtest.WithStartTime(time.Now().Add(-time.Minute))).
		Add("orders", 0, []byte("a")).Add("orders", 1, []byte("b")).Event()
	var out bytes.Buffer
	if _, err := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error { return nil },
		batch.WithMetrics(&out), batch.WithLogger(discard)); err != nil {
		t.Fatal(err)
	}
	doc := metrics.CheckEMF(t, out.Bytes())
	if doc["Source"] != "kafka" || doc[metrics.RequestIDKey] != "req-1" || len(doc) != 14 { // Source, request ID, 11 metrics, _aws
		t.Errorf("batch's document: %v", doc)
	}

	// A Dispatch whose records all fail before any call (too large for WithMaxMessageSize)
	// writes its document without an SQS endpoint.
	out.Reset()
	d, err := fanout.NewDispatcher(&sqs.Client{}, "https://sqs.eu-west-1.amazonaws.com/123456789012/work",
		fanout.WithMaxMessageSize(1), fanout.WithBatchOptions(batch.WithMetrics(&out), batch.WithLogger(discard)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, ev); err != nil {
		t.Fatal(err)
	}
	doc = metrics.CheckEMF(t, out.Bytes())
	if doc["Queue"] != "work" || doc[metrics.RequestIDKey] != "req-1" || len(doc) != 15 { // Queue, request ID, 12 metrics, _aws
		t.Errorf("fanout's document: %v", doc)
	}
	if s := out.String(); !strings.Contains(s, `"Namespace":"`+batch.DefaultNamespace+`"`) {
		t.Errorf("namespace: %s", s)
	}
}
