// Package lambdalog is a log/slog Handler for AWS Lambda that writes the lines Powertools for
// AWS Lambda writes (Python, TypeScript), so that one CloudWatch Logs Insights query reads a
// team's Go, Python and TypeScript functions alike. It is not a new logging API: you log with
// *slog.Logger as anywhere else.
//
// # A line
//
// Inside an invocation, each line carries Powertools' keys with Powertools' names and types:
//
//	{"timestamp":"2026-12-07T23:40:12.494Z","level":"INFO","message":"order stored",
//	 "location":"main.handle:42","service":"orders","cold_start":true,
//	 "function_name":"orders","function_memory_size":512,
//	 "function_arn":"arn:aws:lambda:eu-west-1:123456789012:function:orders",
//	 "function_request_id":"52fdfc07-2182-154f-163f-5f0f9a621d72",
//	 "xray_trace_id":"1-5759e988-bd862e3fe1be46a994272793","order":"o-1"}
//
// sampling_rate (a number) is added when sampling is on, correlation_id when the context
// carries one (WithCorrelationID). Outside an invocation (at init) a line has location and
// service only. timestamp is UTC with milliseconds (Powertools TypeScript's and Lambda's own
// format; Python's default differs in form, not in type); location is "pkg.Func:line", the
// form of Python's "module.function:line"; levels are TRACE, DEBUG, INFO, WARN, ERROR and
// CRITICAL.
//
// # Use
//
// Make the logger once, at init, and wrap the handler so that each invocation's values (request
// ID, cold start, trace ID) reach the logger through the context, never through process
// globals: on Lambda Managed Instances one process serves several invocations at once, and each
// line must carry its own. The trace ID (xray_trace_id, the Root of the invocation's X-Ray trace
// header) is the one aws-lambda-go puts in the invocation's context, never _X_AMZN_TRACE_ID
// while the context has one: under concurrency aws-lambda-go does not set the variable
// (aws-lambda-go #602); it is read only for a handler called without aws-lambda-go's context.
// Log with the *Context methods, passing the invocation's context:
//
//	var log = lambdalog.New(lambdalog.WithService("orders"))
//
//	func handle(ctx context.Context, e events.KafkaEvent) (Out, error) {
//		log.InfoContext(ctx, "order stored", "order", id)
//		...
//	}
//
//	func main() { lambda.Start(lambdalog.Wrap(handle)) }
//
// Wrap is for a handler function; WrapHandler for a lambda.Handler such as batch's. To keep your
// own handler (another writer, other options), wrap it: NewHandler(next). Give next ReplaceAttr so
// that slog's built-in keys are named as Powertools names them.
//
// # Settings and their precedence
//
// The level written is, first found (Powertools' order, Python docs/core/logger.md "Log level
// precedence"): AWS_LAMBDA_LOG_LEVEL (Lambda's Advanced Logging Controls), WithLevel,
// POWERTOOLS_LOG_LEVEL, INFO. Lambda drops JSON lines below AWS_LAMBDA_LOG_LEVEL, so nothing
// below it is written or buffered, not even a sampled DEBUG line. The service is WithService,
// else POWERTOOLS_SERVICE_NAME, else "service_undefined". POWERTOOLS_LOGGER_SAMPLE_RATE (or
// WithSampleRate) is the probability that an invocation logs at DEBUG: decided once per
// invocation, by Wrap, as Powertools decides it per invocation. New writes JSON unless
// AWS_LAMBDA_LOG_FORMAT is Text (then slog's key=value text, with the same keys); note that
// Powertools writes JSON whatever that variable says. A setting that cannot be read (a misspelt
// level, a rate outside [0, 1]) is reported by one WARN line when the Handler is made, and
// the default is used.
//
// # Buffering
//
// WithBuffer holds low-level lines (DEBUG, say) per invocation and writes them only when they
// help: when a line at the flush level (ERROR, say) is written, or when the caller calls Flush
// (a record failed). The buffer has a cap in lines; beyond it the oldest line goes, and the
// flush says how many went in one WARN line. What is left when the invocation ends is
// discarded by Wrap. Buffered records are written as they were logged (their context, their
// keys); values they point to are read when written.
//
// # What it never does
//
// It writes no line of its own that carries a record's key or value: its own lines (a setting
// it could not read, the count of dropped buffered lines) name settings and counts only. It
// does not log events or payloads.
package lambdalog
