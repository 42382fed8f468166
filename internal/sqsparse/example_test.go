package sqsparse_test

import (
	"fmt"

	"github.com/kafkalambda/toolkit/internal/sqsparse"
)

// Parse gives the events.SQSEvent that encoding/json would, or an error that names the path of
// the bad value.
func ExampleParse() {
	ev, err := sqsparse.Parse([]byte(`{"Records":[{"messageId":"m-1","body":"{\"orderId\":7}",
		"attributes":{"MessageGroupId":"orders"},"eventSourceARN":"arn:aws:sqs:us-east-1:123456789012:orders.fifo"}]}`))
	if err != nil {
		fmt.Println(err)
		return
	}
	m := ev.Records[0]
	fmt.Println(m.MessageId, m.Body, m.Attributes["MessageGroupId"])

	_, err = sqsparse.Parse([]byte(`{"Records":[{"messageId":"m-1"},{"messageId":2}]}`))
	fmt.Println(err)
	// Output:
	// m-1 {"orderId":7} orders
	// SQS event: Records[1].messageId: want a string, got 2
}
