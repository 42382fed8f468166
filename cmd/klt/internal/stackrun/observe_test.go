package stackrun

import (
	"context"
	"errors"
	"log/slog"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/fanout"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// sinkFunc is a batch.Sink of a function.
type sinkFunc func(context.Context, *batch.Envelope) error

func (f sinkFunc) Send(ctx context.Context, e *batch.Envelope) error { return f(ctx, e) }

// effectsOf returns the effects the ledger holds of id at resource (any when "").
func effectsOf(l *ledger.Ledger, id ledger.RecordID, res string) []ledger.Effect {
	_, _, es := l.History(id)
	var out []ledger.Effect
	for _, e := range es {
		if res == "" || e.Resource == res {
			out = append(out, e)
		}
	}
	return out
}

// The functions' writes to DynamoDB, through the proxy, land in the ledger with their
// record: idempotency.Do's entry (its key "<prefix>#md5" matched against the records klt
// produced) as a claim and a completion, its replay as a Repeat (the conditional claim
// fails), and a failed handler's claim and release; an item whose attribute the caller
// names holds topic-partition-offset; an item that names no record is unattributed. A
// fault of the next PutItem makes the SDK retry, and the write is in the ledger once.
func TestTablesObserved(t *testing.T) {
	srv := standintest.StartDynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	for _, name := range []string{"idem-table", "items-table"} {
		in := dynamodb.TableInput(name)
		if err := standin.CreateTable(ctx, srv.Client(), in); err != nil {
			t.Fatal(err)
		}
	}
	l := ledger.New()
	rec := ledger.RecordID{Topic: "orders", Partition: 2, Offset: 42}
	l.Produced(ledger.Input{ID: rec, Key: []byte("k"), At: time.Now()})
	o, err := startObservation(ctx, observationConfig{Ledger: l, DynamoDBEndpoint: srv.Endpoint(),
		Tables:        map[string]string{"idem-table": "IdempotencyTable", "items-table": "ItemsTable"},
		KeyAttributes: map[string][]string{"ItemsTable": {"source"}}, TableKeys: map[string][]string{"ItemsTable": {"id"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	url, err := o.DynamoDB.URL("ConsumerFunction")
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client(func(opt *awsdynamodb.Options) { opt.BaseEndpoint = aws.String(url) })
	store, err := dynamodb.NewStore(client, "idem-table")
	if err != nil {
		t.Fatal(err)
	}
	o.DynamoDB.FailNext(1, "PutItem", faultproxy.InternalServerError)
	for range 2 { // the second is a redelivery: replayed
		if _, err := idempotency.Do(ctx, store, rec.KafkaKey(), nil, func(context.Context) (string, error) { return "done", nil }); err != nil {
			t.Fatal(err)
		}
	}
	failing := ledger.RecordID{Topic: "orders", Partition: 2, Offset: 43}
	l.Produced(ledger.Input{ID: failing, Key: []byte("k"), At: time.Now()})
	boom := errors.New("boom")
	if _, err := idempotency.Do(ctx, store, failing.KafkaKey(), nil, func(context.Context) (string, error) { return "", boom }); !errors.Is(err, boom) {
		t.Fatalf("a failing handler: %v", err)
	}
	if es := effectsOf(l, failing, "IdempotencyTable"); len(es) != 2 || es[0].Op != ledger.OpClaim || es[1].Op != ledger.OpRelease {
		t.Errorf("a failed handler's entry: %+v, want its claim and its release", es)
	}
	tsRec := ledger.RecordID{Topic: "orders", Partition: 2, Offset: 44} // Powertools TypeScript's layout: the digest in base64
	l.Produced(ledger.Input{ID: tsRec, Key: []byte("k"), At: time.Now()})
	ts, err := dynamodb.NewStore(client, "idem-table", dynamodb.WithFormat(idempotency.FormatTypeScript))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := idempotency.Do(ctx, ts, tsRec.KafkaKey(), nil, func(context.Context) (string, error) { return "done", nil }); err != nil {
		t.Fatal(err)
	}
	if es := effectsOf(l, tsRec, "IdempotencyTable"); len(es) != 2 || es[0].Op != ledger.OpClaim || es[1].Op != ledger.OpComplete {
		t.Errorf("a TypeScript-layout entry: %+v", es)
	}
	// A record package batch sent to its sink completes its entry with the outcome "sunk":
	// bookkeeping, not the record applied, in either layout.
	for i, st := range []*dynamodb.Store{store, ts} {
		sunk := ledger.RecordID{Topic: "orders", Partition: 2, Offset: int64(45 + i)}
		l.Produced(ledger.Input{ID: sunk, Key: []byte("k"), At: time.Now()})
		ev := kafkaeventtest.NewBuilder().Add("orders", 2, []byte("poison"), kafkaeventtest.WithOffset(sunk.Offset)).Event()
		resp, err := batch.ProcessKafka(ctx, ev, func(context.Context, *kafkaevent.Record) error { return batch.Permanent(errors.New("poison")) },
			batch.WithLogger(slog.New(slog.DiscardHandler)), batch.WithIdempotency(st),
			batch.WithSink(sinkFunc(func(context.Context, *batch.Envelope) error { return nil }), batch.SinkPermanent))
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("the sunk record: %+v, %v", resp, err)
		}
		es := effectsOf(l, sunk, "IdempotencyTable")
		if len(es) != 2 || es[0].Op != ledger.OpClaim || es[1].Op != ledger.OpSunk || ledger.Applies(es[1]) {
			t.Errorf("a sunk record's entry (%s): %+v, want its claim and its completion as sunk, which applies nothing", st.Format(), es)
		}
	}
	put := func(it map[string]ddbtypes.AttributeValue) {
		if _, err := client.PutItem(ctx, &awsdynamodb.PutItemInput{TableName: aws.String("items-table"), Item: it}); err != nil {
			t.Fatal(err)
		}
	}
	put(map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "order-1"},
		"source": &ddbtypes.AttributeValueMemberS{Value: "orders-2-42"}})
	put(map[string]ddbtypes.AttributeValue{"id": &ddbtypes.AttributeValueMemberS{Value: "order-2"}})

	var ops []string
	for _, e := range effectsOf(l, rec, "IdempotencyTable") {
		if e.Function != "ConsumerFunction" || e.Via != ledger.ViaIdempotencyKey || e.Kind != ledger.EffectTable {
			t.Errorf("entry effect %+v", e)
		}
		op := e.Op
		if e.Repeat {
			op += " (repeat)"
		}
		ops = append(ops, op)
	}
	if strings.Join(ops, ", ") != "claim, complete, claim (repeat)" {
		t.Errorf("the entry's writes: %q, want a claim, its completion and the replay's refused claim", ops)
	}
	items := effectsOf(l, rec, "ItemsTable")
	if len(items) != 1 || items[0].Via != ledger.ViaItemKey || items[0].Op != "PutItem" || items[0].Repeat || items[0].Target != `{"id":{"S":"order-1"}}` {
		t.Errorf("item effects %+v", items)
	}
	if u := l.UnattributedEffects(); len(u) != 1 || u[0].Resource != "ItemsTable" {
		t.Errorf("unattributed: %+v", u)
	}
	if o.DynamoDB.Faults("PutItem") != 1 {
		t.Errorf("PutItem faults: %d", o.DynamoDB.Faults("PutItem"))
	}
}

// The functions' messages, through the proxy, land in the ledger with their record: a
// fanout Dispatcher's (the record attribute) and a batch sink's envelope, whose error is the
// effect's Failure. A message with neither is unattributed. The failure queue's message is
// also read by the lister there: a second fact about the same message (its MessageId).
func TestQueuesObserved(t *testing.T) {
	srv := standintest.StartSQS(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	urls := map[string]string{}
	for _, q := range []string{"WorkQueue", "FailureQueue"} {
		out, err := srv.Client().CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("local-" + q)})
		if err != nil {
			t.Fatal(err)
		}
		urls[q] = *out.QueueUrl
	}
	l := ledger.New()
	o, err := startObservation(ctx, observationConfig{Ledger: l, SQSEndpoint: srv.Endpoint(), Queues: urls,
		SQS: srv.Client(), List: []string{"FailureQueue"}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	url, err := o.SQS.URL("DispatcherFunction")
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client(func(opt *sqs.Options) { opt.BaseEndpoint = aws.String(url) })
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 1, []byte(`{"n":1}`), kafkaeventtest.WithOffset(7)).
		Add("orders", 1, []byte(`{"n":2}`), kafkaeventtest.WithOffset(8)).Event()
	d, err := fanout.NewDispatcher(client, urls["WorkQueue"])
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, ev); err != nil {
		t.Fatal(err)
	}
	sink := sqssink.New(client, urls["FailureQueue"])
	if err := sink.Send(ctx, &batch.Envelope{Version: batch.EnvelopeVersion, Source: "kafka", Topic: "orders", Partition: 1, Offset: 9,
		Error: "invalid order", Permanent: true, Attempts: 1}); err != nil {
		t.Fatal(err)
	}
	if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(urls["WorkQueue"]), MessageBody: aws.String("hello")}); err != nil {
		t.Fatal(err)
	}
	if at := l.EffectsAt(ledger.EffectQueue, "WorkQueue"); len(at) != 2 || at[0].At.After(at[1].At) {
		t.Errorf("effects at WorkQueue: %+v", at)
	}
	for _, off := range []int64{7, 8} {
		es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 1, Offset: off}, "WorkQueue")
		if len(es) != 1 || es[0].Via != ledger.ViaRecordAttribute || es[0].Function != "DispatcherFunction" || es[0].Failure != "" {
			t.Errorf("offset %d: %+v", off, es)
		}
	}
	if err := o.settle(ctx); err != nil {
		t.Fatal(err)
	}
	es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 1, Offset: 9}, "FailureQueue")
	if len(es) == 2 && es[0].Op == "listed" { // the lister read it before the proxy's report: a race the ledger allows
		es[0], es[1] = es[1], es[0]
	}
	if len(es) != 2 || es[0].Via != ledger.ViaEnvelope || es[0].Failure != "invalid order" || es[0].Function != "DispatcherFunction" ||
		es[0].Op != "SendMessage" || es[1].Op != "listed" || es[1].Failure != "invalid order" || es[0].ID == "" || es[1].ID != es[0].ID {
		t.Errorf("envelope: %+v, want the proxy's sighting and the lister's, with one message ID", es)
	}
	if u := l.UnattributedEffects(); len(u) != 1 || u[0].Resource != "WorkQueue" {
		t.Errorf("unattributed: %+v", u)
	}
}

// The lister reads every message of a dead-letter queue into the ledger, and leaves every
// message there: a fanout message redrive moved (its record), a Kafka on-failure record
// (each offset of its range, with the condition), a batch sink's envelope, and one it
// cannot read (noted and unattributed). After a scan, the queue still holds all four, and
// the next scans read none of them twice.
func TestListerLeavesMessages(t *testing.T) {
	srv := standintest.StartSQS(t)
	client := srv.Client()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	q, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String("dlq")})
	if err != nil {
		t.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().Add("orders", 3, []byte(`{"orderId":1}`), kafkaeventtest.WithOffset(41)).Event()
	d, err := fanout.NewDispatcher(client, *q.QueueUrl)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := d.Dispatch(ctx, ev); err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{
		`{"requestContext":{"condition":"RetryAttemptsExhausted","functionArn":"arn:aws:lambda:us-east-1:123456789012:function:ConsumerFunction"},` +
			`"KafkaBatchInfo":{"recordsInfo":{"orders-2":{"firstRecordOffset":"5","lastRecordOffset":"7"}}}}`,
		`{"version":1,"source":"kafka","topic":"orders","partition":0,"offset":3,"key":null,"value":null,"error":"poison","permanent":true,"attempts":1,"firstAttempt":"2026-01-01T00:00:00Z","failedAt":"2026-01-01T00:00:00Z"}`,
		"hello",
	} {
		if _, err := client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: q.QueueUrl, MessageBody: aws.String(body)}); err != nil {
			t.Fatal(err)
		}
	}
	l := ledger.New()
	o, err := startObservation(ctx, observationConfig{Ledger: l, SQS: client, Queues: map[string]string{"DeadLetterQueue": *q.QueueUrl},
		List: []string{"DeadLetterQueue"}})
	if err != nil {
		t.Fatal(err)
	}
	defer o.close()
	for range 2 { // the second settle: messages released by the first scan are not read again
		sctx, scancel := context.WithTimeout(ctx, 20*time.Second)
		if err := o.settle(sctx); err != nil {
			t.Fatal(err)
		}
		scancel()
	}
	if es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 3, Offset: 41}, "DeadLetterQueue"); len(es) != 1 || es[0].Via != ledger.ViaRecordAttribute ||
		!strings.Contains(es[0].Failure, "dead-letter queue") {
		t.Errorf("redriven fanout message: %+v", es)
	}
	for off := int64(5); off <= 7; off++ {
		if es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 2, Offset: off}, "DeadLetterQueue"); len(es) != 1 || es[0].Via != ledger.ViaOnFailure ||
			es[0].Failure != "RetryAttemptsExhausted" || es[0].Function != "ConsumerFunction" {
			t.Errorf("on-failure offset %d: %+v", off, es)
		}
	}
	if es := effectsOf(l, ledger.RecordID{Topic: "orders", Partition: 0, Offset: 3}, "DeadLetterQueue"); len(es) != 1 || es[0].Failure != "poison" {
		t.Errorf("envelope: %+v", es)
	}
	if p := o.problems(); len(p) != 1 || !strings.Contains(p[0], "not a batch sink's envelope") {
		t.Errorf("problems: %q", p)
	}
	if n := l.UnattributedCount(); n != 1 {
		t.Errorf("unattributed: %d", n)
	}
	o.close()
	msgs, err := standintest.Receive(ctx, client, *q.QueueUrl, 4, 5*time.Second)
	if err != nil || len(msgs) != 4 {
		t.Fatalf("after listing, the queue holds %d messages (%v), want all 4", len(msgs), err)
	}
}

// The mappings' observer turns a Kafka mapping's events into steps of their records, and
// an SQS mapping's into steps of the records their fan-out attribute names; a message
// without it is unattributed.
func TestMappingObserver(t *testing.T) {
	l := ledger.New()
	obs := (&observation{ledger: l}).mappings("p1")
	now := time.Now()
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "Kafka", Invocation: 1, At: now,
		Records: []esm.RecordRef{{Topic: "orders", Partition: 0, Offset: 5}}})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "Work", Invocation: 3, At: now, Records: []esm.RecordRef{
		{MessageID: "m-1", Attributes: map[string]string{fanout.RecordAttribute: `{"v":1,"topic":"orders","partition":0,"offset":5,"timestamp":1,"value":"text"}`}},
		{MessageID: "m-2", Attributes: map[string]string{}},
	}})
	_, steps, _ := l.History(ledger.RecordID{Topic: "orders", Partition: 0, Offset: 5})
	if len(steps) != 2 || steps[0].Mapping != "Kafka" || steps[0].Kind != esm.Delivered || steps[1].Mapping != "Work" || steps[1].Invocation != 3 {
		t.Errorf("steps: %+v", steps)
	}
	if u := l.UnattributedEffects(); len(u) != 1 || !strings.Contains(u[0].Why, "m-2") {
		t.Errorf("unattributed: %+v", u)
	}
}

// BatchWriteItem's items are effects of the records their items name. dynalite has no
// TransactWriteItems: the transaction's request, as the SDK writes it (caught at the proxy),
// is read with the answers DynamoDB gives, applied (200) and cancelled because its condition
// failed (400 TransactionCanceledException, a Repeat of each of its writes).
func TestTableBatchAndTransaction(t *testing.T) {
	srv := standintest.StartDynamoDB(t)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if err := standin.CreateTable(ctx, srv.Client(), dynamodb.TableInput("items-table")); err != nil {
		t.Fatal(err)
	}
	l := ledger.New()
	a, b := ledger.RecordID{Topic: "orders", Partition: 0, Offset: 1}, ledger.RecordID{Topic: "orders", Partition: 0, Offset: 2}
	l.Produced(ledger.Input{ID: a, At: time.Now()})
	l.Produced(ledger.Input{ID: b, At: time.Now()})
	tables := newTableObserver(l, map[string]string{"items-table": "ItemsTable"}, nil, nil)
	var tx []faultproxy.Exchange
	p, err := faultproxy.Start(srv.Endpoint(), faultproxy.WithObserver(func(x faultproxy.Exchange) {
		if x.Operation == "TransactWriteItems" {
			tx = append(tx, x)
			return
		}
		tables.exchange(x)
	}))
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	url, err := p.URL("Writer")
	if err != nil {
		t.Fatal(err)
	}
	client := srv.Client(func(opt *awsdynamodb.Options) { opt.BaseEndpoint = aws.String(url) })
	s := func(v string) ddbtypes.AttributeValue { return &ddbtypes.AttributeValueMemberS{Value: v} }
	if _, err := client.BatchWriteItem(ctx, &awsdynamodb.BatchWriteItemInput{RequestItems: map[string][]ddbtypes.WriteRequest{
		"items-table": {{PutRequest: &ddbtypes.PutRequest{Item: map[string]ddbtypes.AttributeValue{"id": s("x"), "src": s(a.KafkaKey())}}}},
	}}); err != nil {
		t.Fatal(err)
	}
	if es := effectsOf(l, a, "ItemsTable"); len(es) != 1 || es[0].Op != "PutItem" || es[0].Via != ledger.ViaItemKey || es[0].Function != "Writer" {
		t.Errorf("batch write: %+v", es)
	}
	_, _ = client.TransactWriteItems(ctx, &awsdynamodb.TransactWriteItemsInput{TransactItems: []ddbtypes.TransactWriteItem{{Put: &ddbtypes.Put{
		TableName: aws.String("items-table"), Item: map[string]ddbtypes.AttributeValue{"id": s(b.KafkaKey())},
		ConditionExpression: aws.String("attribute_not_exists(id)"),
	}}}})
	if len(tx) == 0 {
		t.Fatal("no TransactWriteItems request reached the proxy")
	}
	x := tx[0]
	x.Status, x.Response = 200, []byte(`{}`)
	tables.exchange(x)
	x.Status = 400
	x.Response = []byte(`{"__type":"com.amazonaws.dynamodb.v20120810#TransactionCanceledException",` +
		`"Message":"Transaction cancelled, please refer cancellation reasons for specific reasons [ConditionalCheckFailed]",` +
		`"CancellationReasons":[{"Code":"ConditionalCheckFailed","Message":"The conditional request failed"}]}`)
	tables.exchange(x)
	es := effectsOf(l, b, "ItemsTable")
	if len(es) != 2 || es[0].Repeat || !es[1].Repeat || es[0].Op != "PutItem" {
		t.Errorf("transactions: %+v, want one write and one repeat", es)
	}
}
