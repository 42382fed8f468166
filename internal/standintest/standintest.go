// Package standintest starts the local servers of internal/standin for a test: each
// Start function starts one server for t, fails t (never skips) when it cannot, and stops it
// when the test ends. It also holds helpers only tests need, such as [Receive].
//
// A missing node, dynalite or local-aws-sqs fails the test with a message that says how to
// install it (in the checkout, `make node_modules`, which `make test` runs first; elsewhere
// standin installs the pinned versions into the user's cache, or KLT_NODE_MODULES names
// them).
package standintest

import (
	"context"
	"testing"

	"github.com/kafkalambda/toolkit/internal/standin"
)

// StartDynamoDB starts a dynalite server for t (see [standin.StartDynamoDB]) and
// registers a cleanup that stops it. It fails t when the server cannot start.
func StartDynamoDB(t testing.TB) *standin.DynamoDB {
	t.Helper()
	return start(t, "dynamodb", func(ctx context.Context) (*standin.DynamoDB, error) { return standin.StartDynamoDB(ctx) })
}

// StartSQS starts a local-aws-sqs server for t (see [standin.StartSQS]) and registers a
// cleanup that stops it. It fails t when the server cannot start.
func StartSQS(t testing.TB) *standin.SQS {
	t.Helper()
	return start(t, "sqs", func(ctx context.Context) (*standin.SQS, error) { return standin.StartSQS(ctx) })
}

// StartKafka starts a kfake cluster with MSK IAM checks for t (see [standin.StartKafka])
// and registers a cleanup that stops it. It fails t when the cluster cannot start.
func StartKafka(t testing.TB, opts ...standin.KafkaOption) *standin.Kafka {
	t.Helper()
	return start(t, "kafka", func(ctx context.Context) (*standin.Kafka, error) {
		return standin.StartKafka(ctx, opts...)
	})
}

// StartMoto starts a moto_server for t (see [standin.StartMoto]) and registers a cleanup that
// stops it. It fails t when the server cannot start (moto_server not on PATH included).
func StartMoto(t testing.TB) *standin.Moto {
	t.Helper()
	return start(t, "moto_server", standin.StartMoto)
}

// start calls startFn and registers a cleanup that stops the server it returns. It fails t,
// naming what, when startFn returns an error.
func start[S interface{ Stop() }](t testing.TB, what string, startFn func(context.Context) (S, error)) S {
	t.Helper()
	s, err := startFn(context.Background())
	if err != nil {
		t.Fatalf("standintest: start %s: %v", what, err)
	}
	t.Cleanup(s.Stop)
	return s
}
