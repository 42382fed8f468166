package lambdalog

import (
	"log/slog"
	"os"
	"testing"

	"github.com/aws/aws-lambda-go/lambdacontext"
)

// BenchmarkLine: one INFO line with two attributes, inside an invocation, written to
// /dev/null (a real write, as to Lambda's stdout), through
//   - lambdalog: this Handler over slog.JSONHandler (Powertools' keys);
//   - slog.JSONHandler alone (no Lambda keys at all: the floor);
//   - lambdacontext.NewLogHandler, aws-lambda-go's (requestId only). It reads
//     AWS_LAMBDA_LOG_FORMAT at init: run with AWS_LAMBDA_LOG_FORMAT=JSON to compare JSON with
//     JSON, as docs/ records.
func BenchmarkLine(b *testing.B) {
	devnull, err := os.OpenFile(os.DevNull, os.O_WRONLY, 0)
	if err != nil {
		b.Fatal(err)
	}
	defer devnull.Close()
	ctx := lambdaCtx("52fdfc07-2182-154f-163f-5f0f9a621d72", "arn:aws:lambda:eu-west-1:123456789012:function:orders",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1")
	ctx, _, _ = begin(ctx)

	// lambdacontext writes to os.Stdout, read when the handler is made.
	stdout := os.Stdout
	os.Stdout = devnull
	lc := slog.New(lambdacontext.NewLogHandler())
	os.Stdout = stdout

	loggers := []struct {
		name string
		log  *slog.Logger
	}{
		{"lambdalog", slog.New(NewHandler(slog.NewJSONHandler(devnull, &slog.HandlerOptions{Level: LevelTrace, ReplaceAttr: ReplaceAttr}), WithService("orders")))},
		{"slog.JSONHandler", slog.New(slog.NewJSONHandler(devnull, nil))},
		{"lambdacontext.NewLogHandler", lc},
	}
	for _, l := range loggers {
		b.Run(l.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l.log.InfoContext(ctx, "order stored", "order", "o-1", "partition", 3)
			}
		})
	}
}
