package xraytrace_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/xraytrace"
)

func twoPartitions() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for i := 0; i < 3; i++ {
		b.Add("orders", 0, []byte("v"))
		b.Add("orders", 1, []byte("v"))
	}
	return b.Event()
}

// daemon listens on a free UDP port as the X-Ray daemon, points the SDK at it, and returns a
// context holding a Lambda trace header, as aws-lambda-go passes it.
func daemon(t *testing.T) (context.Context, net.PacketConn) {
	t.Helper()
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pc.Close() })
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", "")
	t.Setenv("LAMBDA_TASK_ROOT", t.TempDir())
	if err := xray.Configure(xray.Config{DaemonAddr: pc.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	// aws-lambda-go puts the trace header in the context under this string key, and the SDK
	// reads it from there.
	//lint:ignore SA1029 the key is the SDK's own.
	return context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root="+traceID+";Parent=53995c3f42cd8ad8;Sampled=1"), pc
}

const traceID = "1-5759e988-bd862e3fe1be46a994272793"

// receive reads segment documents until every name in want has arrived (or 3 s passed), and
// returns every subsegment received, by name.
func receive(t *testing.T, pc net.PacketConn, want ...string) map[string]map[string]any {
	t.Helper()
	got := map[string]map[string]any{}
	buf := make([]byte, 64<<10)
	_ = pc.SetReadDeadline(time.Now().Add(3 * time.Second))
	for !hasAll(got, want) {
		n, _, err := pc.ReadFrom(buf)
		if err != nil {
			break
		}
		_, body, ok := strings.Cut(string(buf[:n]), "\n")
		if !ok {
			continue
		}
		var doc map[string]any
		if json.Unmarshal([]byte(body), &doc) != nil {
			continue
		}
		collect(doc, "", got)
	}
	for _, name := range want {
		if _, ok := got[name]; !ok {
			t.Errorf("no subsegment %q received (got %v)", name, names(got))
		}
	}
	return got
}

func hasAll(got map[string]map[string]any, want []string) bool {
	for _, name := range want {
		if _, ok := got[name]; !ok {
			return false
		}
	}
	return true
}

func names(got map[string]map[string]any) []string {
	var out []string
	for k := range got {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// inside checks that a subsegment is in the trace, under parent.
func inside(t *testing.T, got map[string]map[string]any, name, parent string) {
	t.Helper()
	doc, ok := got[name]
	if !ok {
		return
	}
	if doc["trace_id"] != traceID {
		t.Errorf("%s: trace_id %v", name, doc["trace_id"])
	}
	if doc["parent"] != parent && doc["parent_id"] != got[parent]["id"] {
		t.Errorf("%s: not inside %q (parent %v, parent_id %v)", name, parent, doc["parent"], doc["parent_id"])
	}
}

func annotations(got map[string]map[string]any, name string) map[string]any {
	a, _ := got[name]["annotations"].(map[string]any)
	return a
}

func wantAnnotations(t *testing.T, got map[string]map[string]any, name string, want map[string]any) {
	t.Helper()
	a := annotations(got, name)
	for k, v := range want {
		if a[k] != v {
			t.Errorf("%s: annotation %s = %#v, want %#v (all: %v)", name, k, a[k], v, a)
		}
	}
}

// cause returns the message of the first exception recorded on a subsegment, and whether it
// is a fault.
func cause(got map[string]map[string]any, name string) (string, bool) {
	doc := got[name]
	fault, _ := doc["fault"].(bool)
	c, _ := doc["cause"].(map[string]any)
	ex, _ := c["exceptions"].([]any)
	if len(ex) == 0 {
		return "", fault
	}
	m, _ := ex[0].(map[string]any)
	msg, _ := m["message"].(string)
	return msg, fault
}

// With tracing, the batch and each partition are X-Ray subsegments, sent to the daemon over
// UDP, annotated; the handler runs inside its partition's subsegment, and a failed record's
// error is its partition's fault.
func TestKafkaSubsegments(t *testing.T) {
	ctx, pc := daemon(t)
	var inSegment []string
	_, err := batch.ProcessKafka(ctx, twoPartitions(), func(ctx context.Context, r *kafkaevent.Record) error {
		if seg := xray.GetSegment(ctx); seg != nil {
			inSegment = append(inSegment, seg.Name)
		}
		if r.Partition == 1 && r.Offset == 1 {
			return batch.Permanent(errors.New("boom"))
		}
		return nil
	}, batch.WithHooks(xraytrace.New()), batch.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"partition orders-0", "partition orders-0", "partition orders-0", "partition orders-1", "partition orders-1"}; !slices.Equal(inSegment, want) {
		t.Errorf("handlers ran in subsegments %q, want %q", inSegment, want)
	}
	got := receive(t, pc, "kafka batch", "partition orders-0", "partition orders-1")
	inside(t, got, "partition orders-0", "kafka batch")
	inside(t, got, "partition orders-1", "kafka batch")
	wantAnnotations(t, got, "kafka batch", map[string]any{"records": 6.0, "groups": 2.0, "processed": 4.0, "failed": 1.0, "reported": 2.0, "not_recorded": 0.0})
	wantAnnotations(t, got, "partition orders-0", map[string]any{"topic": "orders", "partition": 0.0, "records": 3.0,
		"first_offset": "0", "last_offset": "2", "reported": 0.0})
	wantAnnotations(t, got, "partition orders-1", map[string]any{"topic": "orders", "partition": 1.0, "reported": 2.0})
	if msg, fault := cause(got, "partition orders-1"); msg != "boom" || !fault {
		t.Errorf("partition orders-1: cause %q, fault %v; want boom, true", msg, fault)
	}
	if msg, fault := cause(got, "partition orders-0"); msg != "" || fault {
		t.Errorf("partition orders-0: cause %q, fault %v; want none", msg, fault)
	}
}

func sqsEvent(queue string, groups ...string) *events.SQSEvent {
	ev := &events.SQSEvent{}
	for i, g := range groups {
		m := events.SQSMessage{MessageId: fmt.Sprintf("m%d", i+1), Body: "b",
			EventSourceARN: "arn:aws:sqs:eu-west-1:123456789012:" + queue, Attributes: map[string]string{}}
		if g != "" {
			m.Attributes["MessageGroupId"] = g
		}
		ev.Records = append(ev.Records, m)
	}
	return ev
}

// A record that fails before its handler runs (a decode error) is its partition's fault too.
func TestDecodeErrorSubsegment(t *testing.T) {
	ctx, pc := daemon(t)
	ev := twoPartitions()
	ev.Partitions[0].Records[1].Err = errors.New("value: illegal base64 data at input byte 3")
	if _, err := batch.ProcessKafka(ctx, ev, func(ctx context.Context, r *kafkaevent.Record) error { return nil },
		batch.WithHooks(xraytrace.New())); err != nil {
		t.Fatal(err)
	}
	got := receive(t, pc, "kafka batch", "partition orders-0")
	if msg, fault := cause(got, "partition orders-0"); !strings.Contains(msg, "illegal base64") || !fault {
		t.Errorf("partition orders-0: cause %q, fault %v; want the decode error", msg, fault)
	}
	wantAnnotations(t, got, "partition orders-0", map[string]any{"reported": 2.0})
}

// An SQS FIFO batch: a subsegment per message group, in which its handler runs.
func TestSQSFIFOSubsegments(t *testing.T) {
	ctx, pc := daemon(t)
	var mu sync.Mutex
	in := map[string]string{}
	_, err := batch.ProcessSQS(ctx, sqsEvent("jobs.fifo", "g1", "g2", "g1", "cust<42>"), func(ctx context.Context, m *events.SQSMessage) error {
		mu.Lock()
		defer mu.Unlock()
		if seg := xray.GetSegment(ctx); seg != nil {
			in[m.MessageId] = seg.Name
		}
		if m.MessageId == "m2" {
			return batch.Permanent(errors.New("boom"))
		}
		return nil
	}, batch.WithHooks(xraytrace.New()))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"m1": "group g1", "m2": "group g2", "m3": "group g1", "m4": "group cust_42_"}
	if !maps.Equal(in, want) {
		t.Errorf("handlers ran in subsegments %v, want %v", in, want)
	}
	got := receive(t, pc, "sqs batch", "group g1", "group g2", "group cust_42_")
	for _, g := range []string{"group g1", "group g2", "group cust_42_"} {
		inside(t, got, g, "sqs batch")
	}
	wantAnnotations(t, got, "sqs batch", map[string]any{"records": 4.0, "groups": 3.0, "failed": 1.0, "reported": 1.0, "processed": 3.0})
	wantAnnotations(t, got, "group g1", map[string]any{"queue": "jobs.fifo", "message_group_id": "g1", "messages": 2.0, "reported": 0.0})
	wantAnnotations(t, got, "group cust_42_", map[string]any{"message_group_id": "cust<42>", "messages": 1.0})
	wantAnnotations(t, got, "group g2", map[string]any{"reported": 1.0})
	if msg, fault := cause(got, "group g2"); msg != "boom" || !fault {
		t.Errorf("group g2: cause %q, fault %v; want boom, true", msg, fault)
	}
}

// A standard queue: each message is its own subsegment.
func TestSQSStandardSubsegments(t *testing.T) {
	ctx, pc := daemon(t)
	if _, err := batch.ProcessSQS(ctx, sqsEvent("jobs", "", ""), func(ctx context.Context, m *events.SQSMessage) error {
		if seg := xray.GetSegment(ctx); seg == nil || seg.Name != "message "+m.MessageId {
			return fmt.Errorf("handler of %s not in its subsegment", m.MessageId)
		}
		return nil
	}, batch.WithHooks(xraytrace.New())); err != nil {
		t.Fatal(err)
	}
	got := receive(t, pc, "sqs batch", "message m1", "message m2")
	inside(t, got, "message m1", "sqs batch")
	wantAnnotations(t, got, "message m2", map[string]any{"queue": "jobs", "message_id": "m2", "messages": 1.0, "reported": 0.0})
	wantAnnotations(t, got, "sqs batch", map[string]any{"failed": 0.0, "processed": 2.0})
}

// Without a trace in the context nothing is recorded, and the handler runs.
func TestNoTrace(t *testing.T) {
	_, pc := daemon(t)
	ran := 0
	if _, err := batch.ProcessKafka(context.Background(), twoPartitions(), func(ctx context.Context, r *kafkaevent.Record) error {
		ran++
		if xray.GetSegment(ctx) != nil {
			t.Error("a segment without a trace")
		}
		return nil
	}, batch.WithHooks(xraytrace.New()), batch.WithConcurrency(1)); err != nil {
		t.Fatal(err)
	}
	if ran != 6 {
		t.Errorf("handler ran %d times, want 6", ran)
	}
	_ = pc.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
	if n, _, err := pc.ReadFrom(make([]byte, 64<<10)); err == nil {
		t.Errorf("a document was sent without a trace: %d bytes", n)
	}
}

// collect indexes a segment document and the subsegments nested in it by name, noting each
// one's parent and trace.
func collect(doc map[string]any, parent string, into map[string]map[string]any) {
	name, _ := doc["name"].(string)
	if parent != "" {
		doc["parent"] = parent
	}
	if _, ok := doc["trace_id"]; !ok && parent != "" {
		doc["trace_id"] = into[parent]["trace_id"]
	}
	into[name] = doc
	subs, _ := doc["subsegments"].([]any)
	for _, s := range subs {
		if m, ok := s.(map[string]any); ok {
			collect(m, name, into)
		}
	}
}
