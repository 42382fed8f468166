package lambdalog_test

import (
	"context"
	"log/slog"
	"os"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-lambda-go/lambdacontext"
	"github.com/kafkalambda/toolkit/lambdalog"
)

// The examples write to standard output without the timestamp, the location and cold_start,
// which change from run to run (cold_start is true on the process's first invocation only).
func exampleHandler() slog.Handler {
	return slog.NewJSONHandler(os.Stdout, &slog.HandlerOptions{
		Level: lambdalog.LevelTrace,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if len(groups) == 0 && (a.Key == slog.TimeKey || a.Key == "location" || a.Key == "cold_start") {
				return slog.Attr{}
			}
			return lambdalog.ReplaceAttr(groups, a)
		},
	})
}

// aws-lambda-go gives each invocation's handler such a context.
func exampleInvocationContext() context.Context {
	return lambdacontext.NewContext(context.Background(), &lambdacontext.LambdaContext{
		AwsRequestID:       "52fdfc07-2182-154f-163f-5f0f9a621d72",
		InvokedFunctionArn: "arn:aws:lambda:eu-west-1:123456789012:function:orders",
	})
}

type order struct{ ID string }

// New is the logger of a function: JSON lines on standard output with Powertools' keys. Wrap
// puts each invocation's values in its context.
func ExampleNew() {
	log := lambdalog.New(lambdalog.WithService("orders"))
	handle := func(ctx context.Context, o order) (string, error) {
		log.InfoContext(ctx, "order stored", "order", o.ID)
		return o.ID, nil
	}
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" { // in Lambda only
		lambda.Start(lambdalog.Wrap(handle))
	}
}

// NewHandler wraps the handler you choose; ReplaceAttr names slog's keys as Powertools does.
func ExampleNewHandler() {
	log := slog.New(lambdalog.NewHandler(exampleHandler(), lambdalog.WithService("orders")))
	_, _ = lambdalog.Wrap(func(ctx context.Context, o order) (string, error) {
		log.InfoContext(ctx, "order stored", "order", o.ID)
		return o.ID, nil
	})(exampleInvocationContext(), order{ID: "o-1"})
	// Output:
	// {"level":"INFO","message":"order stored","order":"o-1","service":"orders","function_name":"","function_memory_size":0,"function_arn":"arn:aws:lambda:eu-west-1:123456789012:function:orders","function_request_id":"52fdfc07-2182-154f-163f-5f0f9a621d72"}
}

// WrapHandler does for a lambda.Handler (batch's handlers, for one) what Wrap does for a
// function.
func ExampleWrapHandler() {
	var h lambda.Handler = lambda.NewHandler(func(ctx context.Context) error { return nil })
	if os.Getenv("AWS_LAMBDA_RUNTIME_API") != "" {
		lambda.Start(lambdalog.WrapHandler(h))
	}
}

// WithCorrelationID marks every line logged with the returned context, as batch will do per
// record from a header you name.
func ExampleWithCorrelationID() {
	log := slog.New(lambdalog.NewHandler(exampleHandler(), lambdalog.WithService("orders")))
	ctx := lambdalog.WithCorrelationID(context.Background(), "order-o-1")
	log.InfoContext(ctx, "record done")
	id, _ := lambdalog.CorrelationID(ctx)
	_ = id
	// Output:
	// {"level":"INFO","message":"record done","service":"orders","correlation_id":"order-o-1"}
}

// WithBuffer keeps DEBUG lines back until an ERROR line (or Flush) says they are wanted.
func ExampleWithBuffer() {
	log := slog.New(lambdalog.NewHandler(exampleHandler(),
		lambdalog.WithService("orders"), lambdalog.WithBuffer(slog.LevelDebug, slog.LevelError, 100)))
	run := lambdalog.Wrap(func(ctx context.Context, o order) (string, error) {
		log.DebugContext(ctx, "payload decoded")
		if o.ID == "" {
			log.ErrorContext(ctx, "order without an ID")
		}
		return o.ID, nil
	})
	_, _ = run(context.Background(), order{ID: "o-1"}) // the DEBUG line is discarded
	_, _ = run(context.Background(), order{})          // the DEBUG line is written before the ERROR
	// Output:
	// {"level":"DEBUG","message":"payload decoded","service":"orders","function_name":"","function_memory_size":0,"function_arn":"","function_request_id":""}
	// {"level":"ERROR","message":"order without an ID","service":"orders","function_name":"","function_memory_size":0,"function_arn":"","function_request_id":""}
}

// Flush writes the buffered lines when a record failed without an ERROR line.
func ExampleFlush() {
	log := slog.New(lambdalog.NewHandler(exampleHandler(), lambdalog.WithBuffer(slog.LevelDebug, slog.LevelError, 0)))
	_, _ = lambdalog.Wrap(func(ctx context.Context, _ order) (string, error) {
		log.DebugContext(ctx, "retrying")
		return "", lambdalog.Flush(ctx)
	})(context.Background(), order{})
	// Output:
	// {"level":"DEBUG","message":"retrying","service":"service_undefined","function_name":"","function_memory_size":0,"function_arn":"","function_request_id":""}
}
