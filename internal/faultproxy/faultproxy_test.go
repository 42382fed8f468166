package faultproxy_test

import (
	"context"
	"errors"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"

	"github.com/kafkalambda/toolkit/internal/faultproxy"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// exchanges collects what a proxy reports.
type exchanges struct {
	mu sync.Mutex
	xs []faultproxy.Exchange
}

func (e *exchanges) add(x faultproxy.Exchange) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.xs = append(e.xs, x)
}

func (e *exchanges) of(op string) []faultproxy.Exchange {
	e.mu.Lock()
	defer e.mu.Unlock()
	var out []faultproxy.Exchange
	for _, x := range e.xs {
		if x.Operation == op {
			out = append(out, x)
		}
	}
	return out
}

func startProxy(t *testing.T, upstream string, xs *exchanges) *faultproxy.Proxy {
	t.Helper()
	p, err := faultproxy.Start(upstream, faultproxy.WithObserver(xs.add))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}

// A DynamoDB client pointed at the proxy writes through it to dynalite: the proxy reports
// the PutItem with its body and status. FailNext(2, "PutItem") fails exactly the next two
// PutItem requests with DynamoDB's InternalServerError (HTTP 500): the SDK's standard
// retryer (3 attempts) retries them and the item is written once; a GetItem is not faulted.
// With more faults than attempts the call fails with the fault's error code, as AWS's own
// would, and the server never saw the faulted requests.
func TestDynamoDBFaults(t *testing.T) {
	srv := standintest.StartDynamoDB(t)
	direct := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, direct, &dynamodb.CreateTableInput{
		TableName:            aws.String("tab"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	}); err != nil {
		t.Fatal(err)
	}
	xs := &exchanges{}
	p := startProxy(t, srv.Endpoint(), xs)
	url, err := p.URL("WriterFunction")
	if err != nil {
		t.Fatal(err)
	}
	through := srv.Client(func(o *dynamodb.Options) { o.BaseEndpoint = aws.String(url) })
	put := func(id string) error {
		_, err := through.PutItem(ctx, &dynamodb.PutItemInput{TableName: aws.String("tab"),
			Item: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: id}}})
		return err
	}

	p.FailNext(2, "PutItem", faultproxy.InternalServerError)
	if _, err := through.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("tab"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "a"}}}); err != nil {
		t.Fatalf("GetItem, which no rule faults: %v", err)
	}
	if err := put("a"); err != nil {
		t.Fatalf("PutItem with 2 faults and 3 attempts: %v", err)
	}
	puts := xs.of("PutItem")
	if len(puts) != 3 || puts[0].Status != 500 || puts[1].Status != 500 || puts[2].Status != 200 ||
		puts[0].Fault != faultproxy.InternalServerError || puts[2].Fault != faultproxy.NoFault {
		t.Fatalf("PutItem exchanges: %+v", puts)
	}
	if puts[2].Client != "WriterFunction" || !strings.Contains(string(puts[2].Request), `"TableName":"tab"`) {
		t.Errorf("exchange: client %q, request %s", puts[2].Client, puts[2].Request)
	}
	if p.Calls("PutItem") != 3 || p.Faults("PutItem") != 2 || p.Pending() != 0 {
		t.Errorf("calls %d, faults %d, pending %d", p.Calls("PutItem"), p.Faults("PutItem"), p.Pending())
	}

	p.FailNext(3, "", faultproxy.InternalServerError)
	err = put("b")
	var ise *types.InternalServerError // the SDK reads the fault as DynamoDB's modeled error
	if !errors.As(err, &ise) {
		t.Fatalf("PutItem with 3 faults and 3 attempts: %v, want *types.InternalServerError", err)
	}
	p.FailNext(3, "PutItem", faultproxy.ThroughputExceeded)
	var pte *types.ProvisionedThroughputExceededException
	if err := put("b"); !errors.As(err, &pte) {
		t.Fatalf("PutItem with 3 throughput faults: %v, want *types.ProvisionedThroughputExceededException", err)
	}
	got, err := direct.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("tab"),
		Key: map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "b"}}})
	if err != nil || got.Item != nil {
		t.Errorf("item b, which only faulted requests wrote: %v, %v", got.Item, err)
	}
}

// An SQS client (aws-sdk-go-v2's, the AWS JSON protocol) pointed at the proxy sends
// through it to local-aws-sqs. FailNext(2, "SendMessage", Throttling) answers the next two
// SendMessage requests HTTP 400 ThrottlingException: the SDK classifies them as throttles,
// retries, and the message is sent once.
func TestSQSThrottling(t *testing.T) {
	srv := standintest.StartSQS(t)
	direct := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q, err := direct.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("q")})
	if err != nil {
		t.Fatal(err)
	}
	xs := &exchanges{}
	p := startProxy(t, srv.Endpoint(), xs)
	url, err := p.URL("SenderFunction")
	if err != nil {
		t.Fatal(err)
	}
	through := srv.Client(func(o *sqs.Options) { o.BaseEndpoint = aws.String(url) })
	p.FailNext(2, "SendMessage", faultproxy.Throttling)
	if _, err := through.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("hello")}); err != nil {
		t.Fatalf("SendMessage with 2 throttles and 3 attempts: %v", err)
	}
	sends := xs.of("SendMessage")
	if len(sends) != 3 || sends[0].Status != http.StatusBadRequest || sends[1].Fault != faultproxy.Throttling || sends[2].Status != 200 {
		t.Fatalf("SendMessage exchanges: %+v", sends)
	}
	if !strings.Contains(string(sends[0].Response), "ThrottlingException") || !strings.Contains(string(sends[2].Response), "MessageId") {
		t.Errorf("answers: %s / %s", sends[0].Response, sends[2].Response)
	}
	msgs, err := standintest.Receive(ctx, direct, *q.QueueUrl, 10, 2*time.Second)
	if err != nil || len(msgs) != 1 {
		t.Fatalf("the queue holds %d messages (%v), want 1", len(msgs), err)
	}

	p.FailNext(3, "SendMessage", faultproxy.Throttling)
	_, err = through.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String("again")})
	var ae smithy.APIError
	if !errors.As(err, &ae) || ae.ErrorCode() != "ThrottlingException" {
		t.Fatalf("SendMessage with 3 throttles: %v, want ThrottlingException", err)
	}
}

// A rule for one client faults that client's requests only.
func TestRuleOfOneClient(t *testing.T) {
	srv := standintest.StartSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	xs := &exchanges{}
	p := startProxy(t, srv.Endpoint(), xs)
	a, _ := p.URL("A")
	b, _ := p.URL("B")
	if a == b {
		t.Fatalf("clients A and B share the URL %s", a)
	}
	p.Fail(faultproxy.Rule{Client: "A", N: 1, Fault: faultproxy.InternalServerError})
	cb := srv.Client(func(o *sqs.Options) { o.BaseEndpoint = aws.String(b) })
	if _, err := cb.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	if p.Faults("") != 0 || p.Pending() != 1 {
		t.Fatalf("B's call took A's fault: faults %d, pending %d", p.Faults(""), p.Pending())
	}
	ca := srv.Client(func(o *sqs.Options) { o.BaseEndpoint = aws.String(a) })
	if _, err := ca.ListQueues(ctx, &sqs.ListQueuesInput{}); err != nil {
		t.Fatal(err)
	}
	if p.Faults("ListQueues") != 1 || p.Pending() != 0 {
		t.Fatalf("A's call: faults %d, pending %d", p.Faults("ListQueues"), p.Pending())
	}
}

// A server that cannot be reached is answered 502 and reported with the error, never as a
// success; the observer has the exchange once the client has its answer.
func TestUnreachableServer(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close()
	xs := &exchanges{}
	p := startProxy(t, dead, xs)
	url, err := p.URL("F")
	if err != nil {
		t.Fatal(err)
	}
	req, _ := http.NewRequest(http.MethodPost, url+"/", strings.NewReader(`{}`))
	req.Header.Set("X-Amz-Target", "DynamoDB_20120810.PutItem")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	got := xs.of("PutItem")
	if resp.StatusCode != http.StatusBadGateway || len(got) != 1 || got[0].Err == nil || got[0].Status != http.StatusBadGateway {
		t.Fatalf("status %d, exchanges %+v", resp.StatusCode, got)
	}
}
