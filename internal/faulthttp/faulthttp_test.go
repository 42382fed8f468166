package faulthttp_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"
	"github.com/aws/smithy-go"

	"github.com/kafkalambda/toolkit/internal/faulthttp"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

const (
	putItem  = "DynamoDB_20120810.PutItem"
	getItem  = "DynamoDB_20120810.GetItem"
	sendMsgs = "AmazonSQS.SendMessageBatch"
	table    = "faults"
)

// ddb starts dynalite with a table "faults" (key "id") and returns a client through ft, and one
// that bypasses it.
func ddb(t *testing.T, ft *faulthttp.Transport, retryer aws.Retryer) (through, direct *dynamodb.Client) {
	t.Helper()
	srv := standintest.StartDynamoDB(t)
	direct = srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err := standin.CreateTable(ctx, direct, &dynamodb.CreateTableInput{
		TableName:            aws.String(table),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
	through = srv.Client(func(o *dynamodb.Options) {
		o.HTTPClient = ft.Client()
		if retryer != nil {
			o.Retryer = retryer
		}
	})
	return through, direct
}

// conditionalPut writes id unless it exists.
func conditionalPut(ctx context.Context, c *dynamodb.Client, id string) error {
	_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
		TableName:           aws.String(table),
		Item:                map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	})
	return err
}

func exists(t *testing.T, c *dynamodb.Client, id string) bool {
	t.Helper()
	out, err := c.GetItem(context.Background(), &dynamodb.GetItemInput{
		TableName: aws.String(table), Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}, ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	return len(out.Item) > 0
}

// TestDropAfterApply: the server applies the write, the SDK sees a connection reset and
// retries, and the retry of a conditional write meets the first attempt's item.
func TestDropAfterApply(t *testing.T) {
	t.Parallel()
	ft := faulthttp.New(nil, faulthttp.Rule{Op: putItem, Count: 1, Fault: faulthttp.DropAfterApply})
	through, direct := ddb(t, ft, nil)
	err := conditionalPut(context.Background(), through, "a")
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("conditional PutItem whose first response was dropped = %v, want the retry's ConditionalCheckFailedException", err)
	}
	if !exists(t, direct, "a") {
		t.Error("the dropped call was not applied")
	}
	if got := ft.Calls(putItem); got != 2 {
		t.Errorf("Calls(PutItem) = %d, want 2 (the dropped attempt and the SDK's retry)", got)
	}
	if got := ft.Faults(putItem); got != 1 {
		t.Errorf("Faults(PutItem) = %d, want 1", got)
	}
}

// TestServerErrorAndThrottle: both are answered without reaching the server, and the SDK
// reads them as the service's own errors; a throttle is classified as one.
func TestServerErrorAndThrottle(t *testing.T) {
	t.Parallel()
	ft := faulthttp.New(nil)
	through, direct := ddb(t, ft, aws.NopRetryer{})
	ctx := context.Background()

	ft.Add(faulthttp.Rule{Op: putItem, First: 1, Count: 1, Fault: faulthttp.ServerError})
	err := conditionalPut(ctx, through, "a")
	var ise *types.InternalServerError
	if !errors.As(err, &ise) {
		t.Fatalf("PutItem with ServerError = %v, want *types.InternalServerError", err)
	}
	var re interface{ HTTPStatusCode() int }
	if !errors.As(err, &re) || re.HTTPStatusCode() != 500 {
		t.Errorf("status of %v, want 500", err)
	}

	ft.Add(faulthttp.Rule{Op: putItem, First: 2, Count: 1, Fault: faulthttp.Throttle})
	err = conditionalPut(ctx, through, "a")
	var pte *types.ProvisionedThroughputExceededException
	if !errors.As(err, &pte) {
		t.Fatalf("PutItem with Throttle = %v, want *types.ProvisionedThroughputExceededException", err)
	}
	if (retry.IsErrorThrottles(retry.DefaultThrottles)).IsErrorThrottle(err) != aws.TrueTernary {
		t.Errorf("the SDK does not classify %v as a throttle", err)
	}
	if exists(t, direct, "a") {
		t.Error("a faulted call reached the server")
	}

	// Past the rules' calls, calls pass.
	if err := conditionalPut(ctx, through, "a"); err != nil {
		t.Fatalf("third PutItem: %v", err)
	}
	if !exists(t, direct, "a") || ft.Calls(putItem) != 3 || ft.Faults(putItem) != 2 || ft.Calls(getItem) != 0 {
		t.Errorf("calls %d, faults %d, GetItem calls %d; want 3, 2, 0 and the item written",
			ft.Calls(putItem), ft.Faults(putItem), ft.Calls(getItem))
	}
}

// TestBlackHole: the call ends when its context does, not before and not much after.
func TestBlackHole(t *testing.T) {
	t.Parallel()
	ft := faulthttp.New(nil, faulthttp.Rule{Fault: faulthttp.BlackHole}) // every operation
	through, direct := ddb(t, ft, nil)
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	err := conditionalPut(ctx, through, "a")
	elapsed := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("PutItem into a black hole = %v, want context.DeadlineExceeded", err)
	}
	if elapsed < 300*time.Millisecond || elapsed > 2*time.Second {
		t.Errorf("PutItem returned after %v, want at its 300ms deadline", elapsed)
	}
	if exists(t, direct, "a") {
		t.Error("a black-holed call reached the server")
	}

	ft.Clear()
	if err := conditionalPut(context.Background(), through, "a"); err != nil {
		t.Fatalf("PutItem after Clear: %v", err)
	}
}

// TestSQSThrottle: an SQS operation gets ThrottlingException, which the SDK classifies as a
// throttle, and a DropAfterApply'd batch is sent twice.
func TestSQSThrottle(t *testing.T) {
	t.Parallel()
	srv := standintest.StartSQS(t)
	ctx := context.Background()
	url, err := standin.CreateQueue(ctx, srv.Client(), "q", nil)
	if err != nil {
		t.Fatal(err)
	}
	ft := faulthttp.New(nil,
		faulthttp.Rule{Op: sendMsgs, Count: 1, Fault: faulthttp.Throttle},
		faulthttp.Rule{Op: sendMsgs, First: 2, Count: 1, Fault: faulthttp.DropAfterApply})
	client := srv.Client(func(o *sqs.Options) { o.HTTPClient = ft.Client(); o.Retryer = aws.NopRetryer{} })
	send := func() error {
		_, err := client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(url),
			Entries: []sqstypes.SendMessageBatchRequestEntry{{Id: aws.String("1"), MessageBody: aws.String("m")}}})
		return err
	}
	err = send()
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ThrottlingException" {
		t.Fatalf("SendMessageBatch with Throttle = %v, want ThrottlingException", err)
	}
	if (retry.IsErrorThrottles(retry.DefaultThrottles)).IsErrorThrottle(err) != aws.TrueTernary {
		t.Errorf("the SDK does not classify %v as a throttle", err)
	}
	if err := send(); err == nil {
		t.Fatal("SendMessageBatch with DropAfterApply and no retries succeeded")
	}
	if err := send(); err != nil {
		t.Fatal(err)
	}
	msgs, err := standintest.Receive(ctx, srv.Client(), url, 10, time.Second)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 2 {
		t.Errorf("received %d messages, want 2 (the dropped batch was applied, the third call too)", len(msgs))
	}
	if ft.Calls(sendMsgs) != 3 || ft.Faults(sendMsgs) != 2 {
		t.Errorf("calls %d, faults %d; want 3, 2", ft.Calls(sendMsgs), ft.Faults(sendMsgs))
	}
}
