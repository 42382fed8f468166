// Command producer is a fixture of klt lint's tests: it is read, never built.
package main

import (
	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/producer"
)

func main() {
	_, _ = producer.NewClient(producer.WithIAM(nil))
	_ = events.DynamoDBEventResponse{}
}
