// Package esmtest puts a Lambda handler behind an emulated event source mapping inside a Go
// test, as net/http/httptest puts one behind an HTTP server: the test produces records (or
// sends messages), waits until the mapping is idle, and asserts on what the mapping did by
// the rules AWS documents, with the handler's own code, in process. A test imports esmtest
// alone: the emulator itself (package esm) is the engine behind it.
//
// # A Kafka mapping
//
// [NewKafka] starts a Kafka cluster of the test's own (franz-go's kfake, in process: no
// Docker, no Node, no network beyond the loopback) and runs on it the mapping a
// [KafkaMapping] describes. Its fields are the properties of the
// AWS::Lambda::EventSourceMapping resource, under the same names; a field left out is a
// property left out, with AWS's default:
//
//	k := esmtest.NewKafka(t, handler, esmtest.KafkaMapping{
//		Topics:                []string{"orders"},
//		BatchSize:             10,
//		FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures},
//	}, esmtest.WithPartitions(2))
//	k.Produce(kgo.StringRecord(`{"id":1}`), kgo.StringRecord(`{"id":2}`))
//	if err := k.WaitIdle(10 * time.Second); err != nil {
//		t.Fatal(err)
//	}
//	for _, inv := range k.Invocations() { ... } // each event, its records, the response or error
//	k.Committed()                               // the offset committed per partition
//
// An [Option] says only what the resource does not: the cluster ([WithPartitions],
// [WithTopics]), the function ([WithFunctionName], [WithFunctionTimeout]), the SQS endpoint
// of an on-failure queue ([WithSQS]) and the emulator's own switches
// ([WithOnePartitionPerInvocation]). [Kafka.Cluster] gives the kfake cluster, for faults.
//
// # An SQS mapping
//
// [NewSQS] runs the mapping an [SQSMapping] describes on a queue: one the test made on its
// own endpoint ([WithSQS], [WithQueue] with the queue's URL), or one NewSQS creates, on
// local-aws-sqs, which it starts when given no endpoint (that one needs Node and the toolkit's
// node_modules). A [Queue] with MaxReceiveCount gives the created queue a dead-letter queue,
// which [SQS.DeadLetters] reads:
//
//	q := esmtest.NewSQS(t, handler,
//		esmtest.SQSMapping{FunctionResponseTypes: []string{esmtest.ReportBatchItemFailures}},
//		esmtest.WithQueue(esmtest.Queue{Attributes: map[string]string{"VisibilityTimeout": "1"}, MaxReceiveCount: 2}))
//	q.Send("a", "poison", "b")
//
// # The mapping of a template
//
// [ReadMapping] reads a mapping of a SAM template as klt local reads it, by its logical ID
// (or Function.Event for a SAM event), and returns its properties as a KafkaMapping or an
// SQSMapping, with the options the template implies ([Mapping.Options]: the function's name
// and timeout, the SQS endpoint, the queue), so that a test runs the handler behind the
// mapping the stack deploys:
//
//	m, err := esmtest.ReadMapping("../template.yaml", "OrdersMapping", esmtest.TemplateEnv{})
//	...
//	k := esmtest.NewKafka(t, handler, *m.Kafka, m.Options()...)
//
// # Failures and redelivery
//
// A failed batch is retried as AWS retries it: the whole batch after a function error, from
// the lowest offset reported with ReportBatchItemFailures (Kafka), or each message the
// response names once the queue's visibility timeout ends (SQS). A Kafka mapping gives
// records up after MaximumRetryAttempts retries or past MaximumRecordAge, to the
// DestinationConfig's on-failure destination, kafka://TOPIC or an SQS queue, which
// [Kafka.OnFailure] reads as [OnFailureRecord] values (the Condition says why:
// [ConditionRetryAttemptsExhausted]...); an SQS queue moves a message to its dead-letter queue
// after maxReceiveCount receives. [Invocation] shows each attempt: its records, its response,
// or its [InvokeError].
//
// # The handler, in process
//
// The handler is any [github.com/aws/aws-lambda-go/lambda.Handler]: a batch.KafkaFunc, a
// fanout worker, lambda.NewHandler of a typed function. Each invocation gets a context with a
// deadline, the function timeout ([WithFunctionTimeout], else [DefaultFunctionTimeout],
// Lambda's default), and a lambdacontext.LambdaContext with a new AwsRequestID and the
// function's InvokedFunctionArn. Its outcome reaches the mapping as Lambda reports it:
//
//   - a returned error is an [InvokeError] whose Type is the error's type name, as the Go
//     runtime reports it ("errorString" for errors.New, "wrapError" for fmt.Errorf with %w),
//     and whose Message is its text;
//   - a panic is recovered and reported the same way (Type the panic value's type name,
//     "string" for panic("..."), Message the value printed with %v): the test binary does not
//     crash;
//   - a handler still running at the deadline fails the invocation as "Sandbox.Timedout"
//     ("Task timed out after 3.00 seconds"). Lambda would stop the sandbox; a goroutine cannot
//     be killed, so the handler runs on until it returns (its context is done at the
//     deadline: a handler that honors its context returns) and its result is dropped;
//   - a response over 6 MB ([limits.MaxLambdaResponseBytes]) fails the invocation as
//     "Function.ResponseSizeTooLarge", as on Lambda: the mapping retries its records and
//     never commits or deletes them on that response;
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
