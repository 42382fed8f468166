package batch_test

// Sunk once: under WithIdempotency a record handed to the sink completes its key with the
// outcome "sunk", so that a batch delivered again does not send it again. Against dynalite
// (the idempotency store) and local-aws-sqs (the sink's queue), started by the test.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/batch/sqssink"
	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// sunkEnv is a dynalite table and a local-aws-sqs queue for one subtest.
type sunkEnv struct {
	db    *ddb
	table string
	store *dynamodb.Store
	sqs   *standin.SQS
	queue string
}

var sunkTables atomic.Int64

func newSunkEnv(t *testing.T, db *ddb, sqsSrv *standin.SQS, format idempotency.Format) *sunkEnv {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := sunkTables.Add(1)
	e := &sunkEnv{db: db, table: fmt.Sprintf("sunk-%d", n), sqs: sqsSrv}
	client := db.srv.Client()
	if err := standin.CreateTable(ctx, client, dynamodb.TableInput(e.table)); err != nil {
		t.Fatal(err)
	}
	var err error
	if e.store, err = dynamodb.NewStore(client, e.table, dynamodb.WithFormat(format)); err != nil {
		t.Fatal(err)
	}
	if e.queue, err = standin.CreateQueue(ctx, sqsSrv.Client(), fmt.Sprintf("sunk-dlq-%d", n), nil); err != nil {
		t.Fatal(err)
	}
	return e
}

// messages drains the queue: every message the sink sent, as envelopes.
func (e *sunkEnv) messages(t *testing.T) []*batch.Envelope {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	var out []*batch.Envelope
	for _, m := range receive(t, ctx, e.sqs.Client(), e.queue, 10, 2*time.Second) {
		env, err := batch.ReadEnvelope([]byte(aws.ToString(m.Body)))
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, env)
	}
	return out
}

// sunkItems reads the entries that hold data, raw: under batch, only a sunk record's.
func (e *sunkEnv) sunkItems(t *testing.T) []map[string]types.AttributeValue {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	out, err := e.db.srv.Client().Scan(ctx, &awsdynamodb.ScanInput{TableName: aws.String(e.table)})
	if err != nil {
		t.Fatal(err)
	}
	var sunk []map[string]types.AttributeValue
	for _, it := range out.Items {
		if _, ok := it["data"]; ok {
			sunk = append(sunk, it)
		}
	}
	return sunk
}

// logLines is a JSON logger's output, read back line by line.
type logLines struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (l *logLines) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.Write(p)
}

// take returns the lines since the last take.
func (l *logLines) take(t *testing.T) []map[string]any {
	t.Helper()
	l.mu.Lock()
	defer l.mu.Unlock()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(l.buf.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("log line %s: %v", line, err)
		}
		out = append(out, m)
	}
	l.buf.Reset()
	return out
}

// only returns the lines whose message is msg.
func only(lines []map[string]any, msg string) []map[string]any {
	var out []map[string]any
	for _, m := range lines {
		if m["msg"] == msg {
			out = append(out, m)
		}
	}
	return out
}

// A permanent failure under WithIdempotency with a sink, delivered twice: the sink gets the
// record once, the key is completed with the outcome "sunk" in the layout of Powertools'
// edition (a JSON string for Python, a map for TypeScript, status COMPLETED either way), and
// the redelivery skips it with one "record already sent to the sink" line.
func TestSunkOnceKafka(t *testing.T) {
	t.Parallel()
	db, sqsSrv := startDDB(t), standintest.StartSQS(t)
	for _, format := range []idempotency.Format{idempotency.FormatPython, idempotency.FormatTypeScript} {
		t.Run(format.String(), func(t *testing.T) {
			e := newSunkEnv(t, db, sqsSrv, format)
			var calls sync.Map // "partition@offset" -> *atomic.Int32
			h := func(_ context.Context, r *kafkaevent.Record) error {
				n, _ := calls.LoadOrStore(fmt.Sprintf("%d@%d", r.Partition, r.Offset), new(atomic.Int32))
				n.(*atomic.Int32).Add(1)
				if r.Partition == 0 && r.Offset == 2 {
					return batch.Permanent(errors.New("poison order: total -1"))
				}
				return nil
			}
			var logs logLines
			opts := []batch.Option{
				batch.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
				batch.WithIdempotency(e.store, idempotency.WithKeyPrefix(idemPrefix)),
				batch.WithSink(sqssink.New(e.sqs.Client(), e.queue), batch.SinkPermanent),
			}
			ev := kafkaParts("orders", []int32{0, 1}, 3, 1)
			for delivery := 1; delivery <= 3; delivery++ {
				resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
				if err != nil || kafkaJSON(t, resp) != wantKafka() {
					t.Fatalf("delivery %d: %s, %v; want no failure (the poison record went to the sink)", delivery, kafkaJSON(t, resp), err)
				}
				lines := logs.take(t)
				failed, skipped := only(lines, "record failed"), only(lines, "record already sent to the sink")
				if delivery == 1 {
					if len(failed) != 1 || failed[0]["sentToSink"] != true || failed[0]["offset"] != float64(2) || len(skipped) != 0 {
						t.Errorf("delivery 1: record failed lines %v, skip lines %v; want one failed line for offset 2, sent to the sink", failed, skipped)
					}
					continue
				}
				if len(failed) != 0 {
					t.Errorf("delivery %d: record failed lines %v, want none (the record was sunk before)", delivery, failed)
				}
				if len(skipped) != 1 || skipped[0]["partition"] != "orders-0" || skipped[0]["offset"] != float64(2) || skipped[0]["source"] != "kafka" {
					t.Errorf("delivery %d: skip lines %v, want one for orders-0 offset 2", delivery, skipped)
				}
			}
			if n, _ := calls.Load("0@2"); n.(*atomic.Int32).Load() != 1 {
				t.Errorf("the handler ran %d times for the poison record, want 1", n.(*atomic.Int32).Load())
			}
			envs := e.messages(t)
			if len(envs) != 1 || envs[0].Partition != 0 || envs[0].Offset != 2 {
				t.Fatalf("the failure queue holds %d messages %+v, want the poison record once", len(envs), envs)
			}
			items := e.sunkItems(t)
			if len(items) != 1 {
				t.Fatalf("%d entries with data, want 1 (the sunk record's): %v", len(items), items)
			}
			it := items[0]
			if s, ok := it["status"].(*types.AttributeValueMemberS); !ok || s.Value != "COMPLETED" {
				t.Errorf("status %#v, want COMPLETED (a status every Powertools edition reads)", it["status"])
			}
			switch format {
			case idempotency.FormatPython:
				if s, ok := it["data"].(*types.AttributeValueMemberS); !ok || s.Value != `{"outcome":"sunk"}` {
					t.Errorf("data %#v, want the JSON string {\"outcome\":\"sunk\"} (Python's json.loads reads it)", it["data"])
				}
			case idempotency.FormatTypeScript:
				m, ok := it["data"].(*types.AttributeValueMemberM)
				if !ok {
					t.Fatalf("data %#v, want a map (TypeScript's unmarshall reads it)", it["data"])
				}
				if s, ok := m.Value["outcome"].(*types.AttributeValueMemberS); !ok || s.Value != "sunk" || len(m.Value) != 1 {
					t.Errorf("data %#v, want {outcome: sunk}", m.Value)
				}
			}
		})
	}
}

// failFirst is a sink that refuses its first n sends, then sends with next.
type failFirst struct {
	n    atomic.Int32
	next batch.Sink
}

func (s *failFirst) Send(ctx context.Context, e *batch.Envelope) error {
	if s.n.Add(-1) >= 0 {
		return errors.New("sink unavailable")
	}
	return s.next.Send(ctx, e)
}

// A sink that refuses the record leaves its key released, as before: the record is reported,
// its redelivery runs the handler again and sinks it, and the delivery after that skips it.
// Never lost, sunk once.
func TestSunkOnceSinkRefuses(t *testing.T) {
	t.Parallel()
	db, sqsSrv := startDDB(t), standintest.StartSQS(t)
	e := newSunkEnv(t, db, sqsSrv, idempotency.FormatPython)
	var calls atomic.Int32
	h := func(_ context.Context, r *kafkaevent.Record) error {
		if r.Offset == 2 {
			calls.Add(1)
			return batch.Permanent(errors.New("poison"))
		}
		return nil
	}
	sink := &failFirst{next: sqssink.New(e.sqs.Client(), e.queue)}
	sink.n.Store(1)
	opts := silent(batch.WithIdempotency(e.store, idempotency.WithKeyPrefix(idemPrefix)), batch.WithSink(sink, batch.SinkPermanent))
	ev := kafkaParts("orders", []int32{0}, 3, 1)
	want := []string{wantKafka("orders-0@2", "orders-0@3"), wantKafka(), wantKafka()}
	for i, w := range want {
		resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
		if err != nil || kafkaJSON(t, resp) != w {
			t.Fatalf("delivery %d: %s, %v, want %s", i+1, kafkaJSON(t, resp), err, w)
		}
	}
	if n := calls.Load(); n != 2 {
		t.Errorf("the handler ran %d times for the poison record, want 2 (the sink refused the first)", n)
	}
	if envs := e.messages(t); len(envs) != 1 {
		t.Errorf("the failure queue holds %d messages, want 1", len(envs))
	}
}

// The same for SQS messages, keyed on their message ID.
func TestSunkOnceSQS(t *testing.T) {
	t.Parallel()
	db, sqsSrv := startDDB(t), standintest.StartSQS(t)
	e := newSunkEnv(t, db, sqsSrv, idempotency.FormatPython)
	var calls atomic.Int32
	h := func(_ context.Context, m *events.SQSMessage) error {
		if m.MessageId == "m-1" {
			calls.Add(1)
			return batch.Permanent(errors.New("poison"))
		}
		return nil
	}
	var logs logLines
	opts := []batch.Option{
		batch.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		batch.WithIdempotency(e.store, idempotency.WithKeyPrefix(idemPrefix)),
		batch.WithSink(sqssink.New(e.sqs.Client(), e.queue), batch.SinkPermanent),
	}
	ev := standardEvent(3)
	for delivery := 1; delivery <= 2; delivery++ {
		resp, err := batch.ProcessSQS(context.Background(), ev, h, opts...)
		if err != nil || len(resp.BatchItemFailures) != 0 {
			t.Fatalf("delivery %d: %+v, %v; want no failure", delivery, resp, err)
		}
	}
	if n := calls.Load(); n != 1 {
		t.Errorf("the handler ran %d times for the poison message, want 1", n)
	}
	lines := only(logs.take(t), "record already sent to the sink")
	if len(lines) != 1 || lines[0]["messageId"] != "m-1" {
		t.Errorf("skip lines %v, want one for m-1", lines)
	}
	if envs := e.messages(t); len(envs) != 1 || envs[0].Message == nil || envs[0].Message.MessageId != "m-1" {
		t.Errorf("the failure queue holds %+v, want m-1 once", envs)
	}
}

// A record that cannot be handled at all (its value did not decode: Record.Err) is sunk under
// its key too, and once.
func TestSunkOnceUndecodable(t *testing.T) {
	t.Parallel()
	db, sqsSrv := startDDB(t), standintest.StartSQS(t)
	e := newSunkEnv(t, db, sqsSrv, idempotency.FormatPython)
	var logs logLines
	opts := []batch.Option{
		batch.WithLogger(slog.New(slog.NewJSONHandler(&logs, nil))),
		batch.WithIdempotency(e.store, idempotency.WithKeyPrefix(idemPrefix)),
		batch.WithSink(sqssink.New(e.sqs.Client(), e.queue), batch.SinkPermanent),
	}
	ev := kafkaParts("orders", []int32{0}, 3, 1)
	ev.Partitions[0].Records[1].Err = errors.New("kafkaevent: records[1].value: illegal base64")
	h := func(_ context.Context, r *kafkaevent.Record) error {
		if r.Err != nil {
			t.Errorf("handler called for %d@%d, which did not decode", r.Partition, r.Offset)
		}
		return nil
	}
	for delivery := 1; delivery <= 2; delivery++ {
		resp, err := batch.ProcessKafka(context.Background(), ev, h, opts...)
		if err != nil || kafkaJSON(t, resp) != wantKafka() {
			t.Fatalf("delivery %d: %s, %v", delivery, kafkaJSON(t, resp), err)
		}
		lines := logs.take(t)
		failed, skipped := only(lines, "record failed"), only(lines, "record already sent to the sink")
		if want := map[int]int{1: 1, 2: 0}[delivery]; len(failed) != want || len(skipped) != 1-want {
			t.Errorf("delivery %d: %d failed lines, %d skip lines; want %d and %d", delivery, len(failed), len(skipped), want, 1-want)
		}
	}
	if envs := e.messages(t); len(envs) != 1 || envs[0].Offset != 2 || envs[0].Attempts != 0 {
		t.Errorf("the failure queue holds %+v, want offset 2 once, with no attempt", envs)
	}
}

func receive(t *testing.T, ctx context.Context, c *sqs.Client, queueURL string, max int, wait time.Duration) []sqstypes.Message {
	t.Helper()
	msgs, err := standintest.Receive(ctx, c, queueURL, max, wait)
	if err != nil {
		t.Fatal(err)
	}
	return msgs
}
