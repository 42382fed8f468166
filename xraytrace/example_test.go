package xraytrace_test

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net"

	"github.com/aws/aws-xray-sdk-go/v2/xray"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/xraytrace"
)

// In Lambda with active tracing, aws-lambda-go puts the trace header in the invocation's
// context and the X-Ray daemon listens on the address in AWS_XRAY_DAEMON_ADDRESS; here a UDP
// socket stands in for the daemon. Each handler runs inside its partition's subsegment.
func Example() {
	daemon, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer daemon.Close()
	if err := xray.Configure(xray.Config{DaemonAddr: daemon.LocalAddr().String(), LogLevel: "warn"}); err != nil {
		fmt.Println(err)
		return
	}
	//lint:ignore SA1029 the key is the SDK's own.
	ctx := context.WithValue(context.Background(), xray.LambdaTraceHeaderKey,
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")

	ev := kafkaeventtest.NewBuilder().Add("orders", 0, []byte("a")).Add("orders", 1, []byte("b")).Event()
	handle := func(ctx context.Context, r *kafkaevent.Record) error {
		fmt.Printf("offset %d of %s-%d in %q\n", r.Offset, r.Topic, r.Partition, xray.GetSegment(ctx).Name)
		return nil
	}
	quiet := batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	if _, err := batch.ProcessKafka(ctx, ev, handle, batch.WithHooks(xraytrace.New()), batch.WithConcurrency(1), quiet); err != nil {
		fmt.Println(err)
	}
	// Output:
	// offset 0 of orders-0 in "partition orders-0"
	// offset 0 of orders-1 in "partition orders-1"
}
