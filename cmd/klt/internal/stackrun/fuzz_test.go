package stackrun

import (
	"net/http"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// hostile are inputs every parser of this package must take without a panic: recursion far
// past any depth limit, and a huge body.
var hostile = []string{
	"", "null", "{}", "[]", `"`, "{",
	strings.Repeat("[", 100_000),
	strings.Repeat(`{"a":`, 50_000),
	`{"Item":` + strings.Repeat(`{"M":{"a":`, 20_000) + `{"S":"x"}` + strings.Repeat("}}", 20_000) + "}",
	`{"Entries":[` + strings.Repeat(`{"Id":"1","MessageBody":"x"},`, 20_000) + `{"Id":"2","MessageBody":"y"}]}`,
}

// FuzzParseFault feeds --fault's parser; a fault it accepts names a known kind.
func FuzzParseFault(f *testing.F) {
	for _, s := range []string{"timeout:seq=4", "crash@Fn:key=k", "http:seq=1", "value:seq=2:{}", "dynamodb:3:PutItem",
		"sqs:1", "kafka:3", "kafka:-1", "timeout:", ":", strings.Repeat("value:seq=1:", 10_000)} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if _, err := ParseFault(s); err == nil && !strings.Contains(s, ":") {
			t.Errorf("ParseFault(%q) accepted a fault without its arguments", s)
		}
	})
}

// FuzzGenerate feeds --generate's template and --keys to the generator, and expands records.
func FuzzGenerate(f *testing.F) {
	f.Add(`{"id":{{seq}},"k":"{{key}}"}`, 3)
	f.Add(`{{seq}}{{key}}{{`, 1)
	f.Add(strings.Repeat("{{seq}}", 10_000), 2)
	for _, h := range hostile {
		f.Add(h, 1)
	}
	f.Fuzz(func(t *testing.T, tpl string, keys int) {
		g, err := newGenerator(tpl, keys)
		if err != nil {
			return
		}
		if _, err := g.records(3); err != nil {
			t.Logf("records: %v", err)
		}
	})
}

// FuzzObservedRequests feeds the functions' requests and the servers' answers, as the proxies
// hand them over, to the observers of tables and queues.
func FuzzObservedRequests(f *testing.F) {
	for _, op := range []string{"PutItem", "UpdateItem", "DeleteItem", "BatchWriteItem", "TransactWriteItems", "SendMessage", "SendMessageBatch"} {
		for _, h := range hostile {
			f.Add(op, h, h)
		}
	}
	f.Add("PutItem", `{"TableName":"t","Item":{"id":{"S":"fn#abc"}}}`, `{"__type":"ConditionalCheckFailedException"}`)
	// The completion of a record batch sent to its sink, in either layout.
	f.Add("PutItem", `{"TableName":"t","Item":{"id":{"S":"fn#abc"},"status":{"S":"COMPLETED"},"data":{"S":"{\"outcome\":\"sunk\"}"}}}`, `{}`)
	f.Add("PutItem", `{"TableName":"t","Item":{"id":{"S":"fn#abc"},"status":{"S":"COMPLETED"},"data":{"M":{"outcome":{"S":"sunk"}}}}}`, `{}`)
	f.Add("UpdateItem", `{"TableName":"t","Key":{"id":{"S":"fn#abc"}},"ExpressionAttributeValues":{":s":{"S":"COMPLETED"},":d":{"M":{"outcome":{"S":"sunk"}}}}}`, `{}`)
	f.Add("SendMessage", `{"QueueUrl":"u","MessageBody":"b","MessageAttributes":{"kafka.record":{"DataType":"String","StringValue":"{"}}}`, `{"MessageId":"1"}`)
	f.Fuzz(func(t *testing.T, op, req, resp string) {
		l := ledger.New()
		x := faultproxy.Exchange{Client: "Fn", Target: "X." + op, Operation: op, Request: []byte(req), Response: []byte(resp), Status: http.StatusOK}
		newTableObserver(l, map[string]string{"t": "Table"}, nil, nil).exchange(x)
		newQueueObserver(l, map[string]string{"u": "Queue"}).exchange(x)
		x.Status = http.StatusBadRequest
		newTableObserver(l, map[string]string{"t": "Table"}, nil, nil).exchange(x)
	})
}

// FuzzListedMessage feeds a message of a failure, dead-letter or on-failure queue to the
// lister's reader: a sink envelope, an on-failure record, a fan-out message, or anything.
func FuzzListedMessage(f *testing.F) {
	f.Add(`{"version":1,"source":"kafka","topic":"t","partition":0,"offset":1,"error":"e"}`)
	f.Add(`{"requestContext":{"condition":"RetryAttemptsExhausted","functionArn":"arn:aws:lambda:us-east-1:1:function:F"},"KafkaBatchInfo":{"recordsInfo":{"t-0":{"firstRecordOffset":"1","lastRecordOffset":"999999999999"}}}}`)
	for _, h := range hostile {
		f.Add(h)
	}
	f.Fuzz(func(t *testing.T, body string) {
		q := newQueueLister(ledger.New(), nil)
		q.read("Queue", types.Message{Body: aws.String(body), MessageId: aws.String("m")})
	})
}
