// Command fn is the function of klt invoke's tests: what it does depends on the event's
// "mode". It logs one line per invocation on stderr.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kgo"
)

type event struct {
	Mode string `json:"mode"`
	ID   string `json:"id"`
}

func handle(ctx context.Context, ev event) (map[string]any, error) {
	fmt.Fprintf(os.Stderr, "fn: mode=%s\n", ev.Mode)
	switch ev.Mode {
	case "env":
		out := map[string]any{}
		for _, k := range []string{"AWS_LAMBDA_FUNCTION_NAME", "AWS_LAMBDA_FUNCTION_MEMORY_SIZE", "AWS_LAMBDA_FUNCTION_TIMEOUT", "AWS_REGION",
			"AWS_SAM_LOCAL", "STAGE", "GREETING", "TABLE_NAME", "TABLE_ARN", "QUEUE_URL", "QUEUE_ARN", "KAFKA_AUTH", "OVERRIDDEN", "AWS_PROFILE"} {
			out[k] = os.Getenv(k)
		}
		lc, _ := lambdacontext.FromContext(ctx)
		out["requestIdSet"] = lc != nil && lc.AwsRequestID != ""
		return out, nil
	case "aws":
		cfg, err := config.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, err
		}
		ddb := dynamodb.NewFromConfig(cfg)
		table := aws.String(os.Getenv("TABLE_NAME"))
		if _, err := ddb.PutItem(ctx, &dynamodb.PutItemInput{TableName: table,
			Item: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: ev.ID}}}); err != nil {
			return nil, err
		}
		got, err := ddb.GetItem(ctx, &dynamodb.GetItemInput{TableName: table, ConsistentRead: aws.Bool(true),
			Key: map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: ev.ID}}})
		if err != nil {
			return nil, err
		}
		q := sqs.NewFromConfig(cfg)
		if _, err := q.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(os.Getenv("QUEUE_URL")), MessageBody: aws.String(ev.ID),
			MessageGroupId: aws.String("g"), MessageDeduplicationId: aws.String(ev.ID)}); err != nil {
			return nil, err
		}
		cl, err := kgo.NewClient(kgo.SeedBrokers(os.Getenv("KAFKA_BOOTSTRAP_SERVERS")), kgo.DefaultProduceTopic(os.Getenv("OUTPUT_TOPIC")))
		if err != nil {
			return nil, err
		}
		defer cl.Close()
		if err := cl.ProduceSync(ctx, &kgo.Record{Value: []byte(ev.ID)}).FirstErr(); err != nil {
			return nil, err
		}
		return map[string]any{"stored": len(got.Item) == 1, "sent": true, "produced": true}, nil
	case "fail":
		return nil, errors.New("boom: " + ev.ID)
	case "sleep":
		time.Sleep(30 * time.Second)
		return nil, nil
	}
	return map[string]any{"echo": ev.ID}, nil
}

func main() { lambda.Start(handle) }
