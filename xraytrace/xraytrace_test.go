package xraytrace_test

import (
	"context"
	"encoding/json"
	"net"
	"strings"
	"testing"
	"time"

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

// With tracing, the batch and each partition are X-Ray subsegments, sent to the daemon over
// UDP, annotated, and the handler runs inside its partition's subsegment.
func TestTracingSubsegments(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close()
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", "")
	t.Setenv("LAMBDA_TASK_ROOT", "/var/task")
	if err := xray.Configure(xray.Config{DaemonAddr: pc.LocalAddr().String()}); err != nil {
		t.Fatal(err)
	}
	// aws-lambda-go puts the trace header in the context under this string key, and the SDK
	// reads it from there.
	//lint:ignore SA1029 the key is the SDK's own.
	ctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	var inSegment bool
	_, err = batch.ProcessKafka(ctx, twoPartitions(), func(ctx context.Context, r *kafkaevent.Record) error {
		if seg := xray.GetSegment(ctx); seg != nil && strings.HasPrefix(seg.Name, "partition ") {
			inSegment = true
		}
		return nil
	}, batch.WithHooks(xraytrace.New()), batch.WithMetrics(nil, ""), batch.WithLogger(nil), batch.WithConcurrency(1))
	if err != nil {
		t.Fatal(err)
	}
	if !inSegment {
		t.Error("handler did not run inside a partition subsegment")
	}
	got := map[string]map[string]any{}
	buf := make([]byte, 64<<10)
	_ = pc.SetReadDeadline(time.Now().Add(3 * time.Second))
	for len(got) < 3 {
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
	for _, name := range []string{"kafka batch", "partition orders-0", "partition orders-1"} {
		doc, ok := got[name]
		if !ok {
			t.Errorf("no subsegment %q received (got %d documents)", name, len(got))
			continue
		}
		if doc["trace_id"] != "1-5759e988-bd862e3fe1be46a994272793" {
			t.Errorf("%s: trace_id %v", name, doc["trace_id"])
		}
		if name != "kafka batch" && doc["parent"] != "kafka batch" {
			t.Errorf("%s: not inside the batch subsegment (parent %v)", name, doc["parent"])
		}
	}
	if p, ok := got["partition orders-1"]; ok {
		ann, _ := p["annotations"].(map[string]any)
		if ann["topic"] != "orders" || ann["partition"] != float64(1) || ann["first_offset"] != "0" || ann["last_offset"] != "2" || ann["failed"] != float64(0) {
			t.Errorf("annotations = %v", ann)
		}
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
