package standintest

import (
	"context"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// ReceiveClient is what [Receive] needs; *sqs.Client has it.
type ReceiveClient interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// Receive receives messages from the queue until it has max of them or wait has passed, with
// every system attribute (asked for through both AttributeNames, which local-aws-sqs reads,
// and MessageSystemAttributeNames) and every message attribute. It neither deletes the
// messages nor changes their visibility timeout, so they are not received again until that
// (30 s by default) has passed. It returns what it received, and an error only if a
// ReceiveMessage call failed.
func Receive(ctx context.Context, client ReceiveClient, queueURL string, max int, wait time.Duration) ([]types.Message, error) {
	deadline := time.Now().Add(wait)
	var got []types.Message
	for len(got) < max {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		secs := int32(min(left.Round(time.Second)/time.Second, 20))
		in := &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         int32(min(max-len(got), 10)),
			WaitTimeSeconds:             secs,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		out, err := client.ReceiveMessage(ctx, in)
		if err != nil {
			return got, fmt.Errorf("receive from %s: %w", queueURL, err)
		}
		got = append(got, out.Messages...)
		if len(out.Messages) == 0 && secs == 0 {
			// Less than half a second left: a short pause rather than a busy loop.
			select {
			case <-time.After(min(left, 50*time.Millisecond)):
			case <-ctx.Done():
				return got, ctx.Err()
			}
		}
	}
	return got, nil
}
