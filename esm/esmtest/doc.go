// Package esmtest puts a Lambda handler behind an emulated event source mapping inside a Go
// test, as net/http/httptest puts one behind an HTTP server: the test produces records (or
// sends messages), waits until the mapping is idle, and asserts on what the mapping did by
// the rules AWS documents, with the handler's own code, in process.
//
//	k := esmtest.NewKafka(t, handler, esmtest.KafkaConfig{Partitions: 2},
//		esm.WithBatchSize(10), esm.WithReportBatchItemFailures())
//	k.Produce(kgo.StringRecord(`{"id":1}`), kgo.StringRecord(`{"id":2}`))
//	if err := k.WaitIdle(10 * time.Second); err != nil {
//		t.Fatal(err)
//	}
//	for _, inv := range k.Invocations() { ... }  // each event, its records, the response or error
//	k.Committed()                              // the offset committed per partition
//
// [NewKafka] runs an [esm.Kafka] mapping on a kfake cluster of its own (in process: no Docker,
// no Node, no network beyond the loopback). [NewSQS] runs an [esm.SQS] mapping on any SQS
// endpoint the test gives, or on local-aws-sqs, which it starts when given none (that one needs
// Node). The mapping's settings are esm's options ([esm.WithBatchSize],
// [esm.WithReportBatchItemFailures], [esm.WithOnFailure]...), and a template's mapping can be
// read with its settings by [ReadMapping], so that a test runs the handler behind the mapping
// the stack deploys.
//
// # The handler, in process
//
// The handler is any [github.com/aws/aws-lambda-go/lambda.Handler]: a batch.KafkaFunc, a
// fanout worker, lambda.NewHandler of a typed function. Each invocation gets a context with a
// deadline, the function timeout (KafkaConfig.FunctionTimeout, else [DefaultFunctionTimeout],
// Lambda's default), and a lambdacontext.LambdaContext with a new AwsRequestID and the
// function's InvokedFunctionArn. Its outcome reaches the mapping as Lambda reports it:
//
//   - a returned error is an [esm.InvokeError] whose Type is the error's type name, as the Go
//     runtime reports it ("errorString" for errors.New, "wrapError" for fmt.Errorf with %w),
//     and whose Message is its text;
//   - a panic is recovered and reported the same way (Type the panic value's type name,
//     "string" for panic("..."), Message the value printed with %v): the test binary does not
//     crash;
//   - a handler still running at the deadline fails the invocation as "Sandbox.Timedout"
//     ("Task timed out after 3.00 seconds"). Lambda would stop the sandbox; a goroutine cannot
//     be killed, so the handler runs on until it returns (its context is done at the
//     deadline: a handler that honors its context returns) and its result is dropped;
//   - a response over [limits.MaxLambdaResponseBytes] (6 MB) fails the invocation as
//     "Function.ResponseSizeTooLarge" ([esm.ResponseTooLarge]), as on Lambda: the mapping
//     retries its records and never commits or deletes them on that response;
//   - a handler whose goroutine exits without returning (runtime.Goexit, which t.FailNow,
//     t.Fatal and t.SkipNow call: in a handler they end its goroutine, not the test) fails the
//     invocation at once as "Runtime.ExitError", with a message that says so, rather than at
//     the deadline. On Lambda the runtime's loop would end with it, and the invocation fail
//     when the process died or timed out: no answer could come either way.
//
// What in-process invoking cannot show: a crash of the process (os.Exit, a fatal error),
// memory limits, cold starts and init, a sandbox reused between invocations (package-level
// state is shared by all of them here), and concurrency limits of the account. klt local runs
// the built function in its own process for those.
//
// # Idle
//
// WaitIdle returns once every record of the topic is committed (it succeeded, was filtered
// out, or was given up on) and no invocation is under way, or for SQS once the queue holds no
// message (each deleted or moved to the dead-letter queue); it fails after a timeout, saying
// what is left, and at once when the mapping stopped on an error. A mapping that retries
// forever (no destination, infinite retries) is never idle, as on AWS.
package esmtest
