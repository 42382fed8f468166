package standin_test

import (
	"bufio"
	"context"
	"errors"
	"net"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

func newTable(t *testing.T, ctx context.Context, c *dynamodb.Client, name string) {
	t.Helper()
	err := standin.CreateTable(ctx, c, &dynamodb.CreateTableInput{
		TableName:            aws.String(name),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConditionalPutGetAndStop(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	start := time.Now()
	srv := standintest.StartDynamoDB(t)
	t.Logf("dynalite answered at %s after %v", srv.Endpoint(), time.Since(start).Round(time.Millisecond))
	if u, err := url.Parse(srv.Endpoint()); err != nil || u.Scheme != "http" || u.Hostname() != "127.0.0.1" || u.Port() == "" {
		t.Fatalf("Endpoint() = %q, want http://127.0.0.1:PORT", srv.Endpoint())
	}
	c := srv.Client()

	newTable(t, ctx, c, "idempotency")
	d, err := c.DescribeTable(ctx, &dynamodb.DescribeTableInput{TableName: aws.String("idempotency")})
	if err != nil {
		t.Fatal(err)
	}
	if d.Table.TableStatus != types.TableStatusActive {
		t.Fatalf("TableStatus = %s after CreateTable, want ACTIVE", d.Table.TableStatus)
	}

	put := func(status string) error {
		_, err := c.PutItem(ctx, &dynamodb.PutItemInput{
			TableName: aws.String("idempotency"),
			Item: map[string]types.AttributeValue{
				"id":     &types.AttributeValueMemberS{Value: "key-1"},
				"status": &types.AttributeValueMemberS{Value: status},
			},
			ConditionExpression:                 aws.String("attribute_not_exists(id)"),
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		return err
	}
	if err := put("INPROGRESS"); err != nil {
		t.Fatalf("first conditional put: %v", err)
	}
	err = put("COMPLETED")
	var ccf *types.ConditionalCheckFailedException
	if !errors.As(err, &ccf) {
		t.Fatalf("second conditional put: got %v (%T), want *types.ConditionalCheckFailedException", err, err)
	}
	// dynalite ignores ALL_OLD (real DynamoDB returns the item); record which one we talk to.
	t.Logf("ConditionalCheckFailedException.Item has %d attributes (dynalite: 0)", len(ccf.Item))

	got, err := c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String("idempotency"),
		Key:            map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "key-1"}},
		ConsistentRead: aws.Bool(true),
	})
	if err != nil {
		t.Fatal(err)
	}
	if s, ok := got.Item["status"].(*types.AttributeValueMemberS); !ok || s.Value != "INPROGRESS" {
		t.Fatalf("GetItem status = %#v, want INPROGRESS (the first put's item)", got.Item["status"])
	}

	srv.Stop()
	if !srv.Exited() {
		t.Fatal("Exited() = false after Stop")
	}
	srv.Stop() // idempotent
	stopped := time.Now()
	_, err = c.GetItem(ctx, &dynamodb.GetItemInput{
		TableName:      aws.String("idempotency"),
		Key:            map[string]types.AttributeValue{"id": &types.AttributeValueMemberS{Value: "key-1"}},
		ConsistentRead: aws.Bool(true),
	})
	if err == nil {
		t.Fatal("GetItem after Stop succeeded")
	}
	var opErr *net.OpError
	if !errors.As(err, &opErr) {
		t.Errorf("GetItem after Stop: %v, want a *net.OpError in the chain", err)
	}
	if el := time.Since(stopped); el > 2*time.Second {
		t.Errorf("GetItem after Stop took %v to fail, want well under 2s", el)
	}
	t.Logf("after Stop: %v (in %v)", err, time.Since(stopped).Round(time.Millisecond))
}

// Servers are independent: parallel starts get their own ports and their own data.
func TestParallelServersAreIsolated(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	const n = 3
	srvs := make([]*standin.DynamoDB, n)
	errs := make([]error, n)
	done := make(chan struct{}, n)
	for i := range n {
		// StartServer, not Start: t.Fatal must not be called from these goroutines.
		go func() { srvs[i], errs[i] = standin.StartDynamoDB(context.Background()); done <- struct{}{} }()
	}
	for range n {
		<-done
	}
	for i, s := range srvs {
		if s != nil {
			t.Cleanup(s.Stop)
		}
		if errs[i] != nil {
			t.Fatal(errs[i])
		}
	}
	seen := map[string]bool{}
	for _, s := range srvs {
		if seen[s.Endpoint()] {
			t.Fatalf("two servers share %s", s.Endpoint())
		}
		seen[s.Endpoint()] = true
	}
	newTable(t, ctx, srvs[0].Client(), "only-on-first")
	for i, s := range srvs {
		out, err := s.Client().ListTables(ctx, &dynamodb.ListTablesInput{})
		if err != nil {
			t.Fatal(err)
		}
		want := 0
		if i == 0 {
			want = 1
		}
		if len(out.TableNames) != want {
			t.Errorf("server %d has tables %v, want %d", i, out.TableNames, want)
		}
	}
}

func TestCreateTableReportsErrors(t *testing.T) {
	t.Parallel()
	srv := standintest.StartDynamoDB(t)
	// Real DynamoDB and dynalite reject names shorter than 3 characters.
	err := standin.CreateTable(context.Background(), srv.Client(), &dynamodb.CreateTableInput{
		TableName:            aws.String("x"),
		AttributeDefinitions: []types.AttributeDefinition{{AttributeName: aws.String("id"), AttributeType: types.ScalarAttributeTypeS}},
		KeySchema:            []types.KeySchemaElement{{AttributeName: aws.String("id"), KeyType: types.KeyTypeHash}},
	})
	if err == nil || !strings.Contains(err.Error(), "create table x") {
		t.Fatalf("CreateTable with a 1-character name: %v, want an error naming the table", err)
	}
}

// TestAbandonedRequestKeepsServerUp sends dynalite a request whose body never arrives whole:
// the client closes the connection mid-body, as a caller does when its deadline ends. dynalite
// itself throws on that ("Error: aborted") and exited; the server must stay up and answer the
// next call.
func TestAbandonedRequestKeepsServerUp(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	srv := standintest.StartDynamoDB(t)
	u, err := url.Parse(srv.Endpoint())
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		conn, err := net.Dial("tcp", u.Host)
		if err != nil {
			t.Fatal(err)
		}
		// A body of 100 bytes announced. "Expect: 100-continue" makes node answer "100
		// Continue" as it hands the request to dynalite's handler, so once it is read the
		// handler is reading the body; 10 bytes of it are sent, then the connection closed.
		_, err = conn.Write([]byte("POST / HTTP/1.1\r\nHost: " + u.Host + "\r\nContent-Type: application/x-amz-json-1.0\r\n" +
			"X-Amz-Target: DynamoDB_20120810.ListTables\r\nContent-Length: 100\r\nExpect: 100-continue\r\n\r\n"))
		if err != nil {
			t.Fatal(err)
		}
		conn.SetReadDeadline(time.Now().Add(10 * time.Second))
		status, err := bufio.NewReader(conn).ReadString('\n')
		if err != nil || !strings.Contains(status, " 100 ") {
			t.Fatalf("status line %q (%v), want 100 Continue", status, err)
		}
		if _, err := conn.Write([]byte(`{"Limit":1`)); err != nil {
			t.Fatal(err)
		}
		conn.Close()
	}
	// The next call is answered: the server did not exit.
	if _, err := srv.Client().ListTables(ctx, &dynamodb.ListTablesInput{}); err != nil {
		t.Fatalf("ListTables after abandoned requests: %v\n%s", err, srv.Output())
	}
	if srv.Exited() {
		t.Fatalf("dynalite exited:\n%s", srv.Output())
	}
	if !strings.Contains(srv.Output(), "request dropped") {
		t.Errorf("no line about the dropped request in dynalite's output:\n%s", srv.Output())
	}
}
