// Command consumer is a fixture of klt lint's tests: it is read, never built.
package main

import (
	"os"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
)

func main() {
	sink := batch.WithSink(sqssink.New(nil, os.Getenv("FAILURE_QUEUE_URL")), batch.SinkPermanent)
	store, err := dynamodb.NewStore(nil, os.Getenv("IDEMPOTENCY_TABLE"))
	_, _, _ = sink, store, err
}
