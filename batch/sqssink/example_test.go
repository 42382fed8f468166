package sqssink_test

import (
	"context"
	"encoding/json"
	"fmt"
	"log"
	"log/slog"
	"path"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// New sends the failed records to an SQS queue, one message each (FIFO queues keep a
// partition's failures in order). It needs a queue, so this example is not run.
func ExampleNew() {
	// In a function the client is sqs.NewFromConfig(cfg); here a stand-in prints what the
	// sink sends: one message per failed record, its body the JSON Envelope.
	dlq := sqssink.New(printSQS{}, "https://sqs.us-east-1.amazonaws.com/123456789012/orders-dlq")
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id":1}`)).
		Add("orders", 0, []byte(`not json`)).
		Event()
	resp, err := batch.ProcessKafka(context.Background(), ev, func(ctx context.Context, r *kafkaevent.Record) error {
		var order struct{ ID int }
		if err := json.Unmarshal(r.Value, &order); err != nil {
			return batch.Permanent(err) // to the sink, and the partition goes on
		}
		return nil
	}, batch.WithSink(dlq, batch.SinkPermanent), batch.WithLogger(slog.New(slog.DiscardHandler)))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reported:", len(resp.BatchItemFailures))
	// Output:
	// to orders-dlq: orders-0@1 permanent=true value="not json" error="invalid character 'o' in literal null (expecting 'u')"
	// reported: 0
}

// printSQS stands in for *sqs.Client in ExampleNew. The sink calls SendMessage only;
// the embedded (nil) API gives the type the rest of the interface.
type printSQS struct{ sqssink.API }

func (printSQS) SendMessage(ctx context.Context, in *sqs.SendMessageInput, _ ...func(*sqs.Options)) (*sqs.SendMessageOutput, error) {
	e, err := batch.ReadEnvelope([]byte(*in.MessageBody))
	if err != nil {
		return nil, err
	}
	r := e.Record()
	fmt.Printf("to %s: %s@%d permanent=%v value=%q error=%q\n",
		path.Base(*in.QueueUrl), r.PartitionID(), r.Offset, e.Permanent, r.Value, e.Error)
	return &sqs.SendMessageOutput{MessageId: aws.String("m-1")}, nil
}
