// Command kafkaevent is the smallest Kafka function: kafkaevent.Parse and lambda.Start, the
// baseline the other sizes are compared with.
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

func handle(ctx context.Context, payload json.RawMessage) (any, error) {
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		return nil, err
	}
	n := 0
	for _, p := range ev.Partitions {
		n += len(p.Records)
	}
	return map[string]int{"records": n}, nil
}

func main() { lambda.Start(handle) }
