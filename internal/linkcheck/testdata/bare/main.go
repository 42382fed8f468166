// Command bare is a no-op function on aws-lambda-go alone: the baseline of the cold-start
// measurement (TestColdStart).
package main

import (
	"context"
	"encoding/json"

	"github.com/aws/aws-lambda-go/lambda"
)

func handle(ctx context.Context, payload json.RawMessage) (any, error) { return nil, nil }

func main() { lambda.Start(handle) }
