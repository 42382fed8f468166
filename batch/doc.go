// Package batch processes the records of a Kafka or SQS batch one by one and returns the
// partial-batch response, so that one bad record does not make Lambda retry the whole batch.
//
// By default a Kafka event source mapping retries a whole batch until it succeeds or its
// records expire: one record that always fails stalls its partition. With
// FunctionResponseTypes ReportBatchItemFailures, a function reports just the records that
// failed. A function gives [KafkaHandler] its [RecordFunc], called once per record, and hands
// the handler it returns to lambda.Start:
//
//	func main() {
//		lambda.Start(batch.KafkaHandler(func(ctx context.Context, r *kafkaevent.Record) error {
//			var o Order
//			if err := json.Unmarshal(r.Value, &o); err != nil {
//				return batch.Permanent(err) // not retried here: reported (or to the sink)
//			}
//			return save(ctx, o) // an error is retried, then reported
//		}))
//	}
//
// KafkaHandler returns a [KafkaFunc], which implements lambda.Handler: lambda.Start then
// gives it the payload's bytes, which go straight to kafkaevent.Parse, without the pass
// encoding/json would make over the whole batch first. [ProcessKafka] does the same work on an
// event already parsed, and [SQSHandler] and [ProcessSQS] on SQS batches, with a
// [MessageFunc] per message.
//
// # Order and failures
//
// The records of a partition are handled strictly in order, one at a time; partitions are
// processed in parallel ([WithConcurrency] bounds how many at once). When a record fails, it
// and every later record of its partition are reported, so that they come back in order;
// the other partitions go on. A record fails when its handler returns an error on every
// attempt ([WithRetry]: 3 attempts with backoff by default), at once when the error is
// marked [Permanent] or the handler panics ([PanicError]), and without a call when its
// Record.Err is set (a field that did not decode).
//
// A failed record is reported unless a sink takes it ([WithSink]). Permanent only stops the
// retries within the invocation: without a sink, a permanent record is reported like any
// other, its partition (or FIFO message group) stops there, and the event source mapping
// delivers it again, and again, until its own retry limits end it (MaximumRetryAttempts,
// MaximumRecordAgeInSeconds; then its on-failure destination, if any; for SQS, the queue's
// redrive policy). Give a sink to move past records that cannot succeed.
//
// # Key concurrency
//
// Order often matters per key only: [WithKeyConcurrency](n) handles the records of one
// partition whose keys differ at the same time, at most n records in flight for the whole
// invocation (every partition together), and the records of one key strictly one after
// another, in offset order. The records of a partition are split into key sequences, one per
// distinct Key; the records without a key (a nil or empty Key) are one more sequence of
// their own, in partition order among themselves, and interleave freely with the keyed ones:
// a producer that sends no key asks for no order against keyed records, and Kafka's own
// partitioners spread such records over partitions as it suits them, but a consumer that
// meant the partition's order for them keeps it. Each sequence runs as a partition would
// without the option: a worker takes it and handles its records in turn; the sequences are
// taken in turn across partitions, so that no partition's keys wait behind another's.
//
// When a record fails (an error on every attempt, Permanent, a panic, Record.Err) and the
// sink does not take it, its key stops: the later records of that key are not started.
// The other keys go on. The partition is then reported from its lowest offset not done: that
// record and every later record of the partition, including those that succeeded, so the
// response is right whether Lambda resumes a partition from the lowest offset reported (as it
// documents for Kinesis: "Lambda uses the record with the lowest sequence number as the
// checkpoint", https://docs.aws.amazon.com/lambda/latest/dg/services-kinesis-batchfailurereporting.html)
// or delivers again just the records reported (its Kafka page says "retry only the failed
// records", https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html).
// The records after that offset that succeeded come back, and must not be applied twice:
// the option needs [WithIdempotency], whose store acknowledges them as done (Replayed)
// without calling the handler, while those not done run, each key in order again. One
// partition of ten records, keys A, B, C and keyless (-), n = 3:
//
//	offset   0   1   2   3   4   5   6   7   8   9
//	key      A   B   A   C   B   A   -   C   -   A
//	         ok  ok  ERR ok  ok  .   ok  ok  ok  .     ERR: A@2 failed, not sunk
//	                 ^                                 .:   not started (A is stopped)
//	3 workers:       A: A@0, A@2 ERR (A stops)  B: B@1, B@4  C: C@3, C@7
//	                 then the keyless sequence on the first worker free: -@6, -@8
//	response:        t-0 offsets 2 3 4 5 6 7 8 9    (from the lowest not done: 2)
//	redelivery:      2 3 4 5 6 7 8 9 come back
//	                 A@2 A@5 A@9 run, in order;  C@3 B@4 -@6 C@7 -@8 replayed from the store
//
// At the deadline less the margin, each partition is reported from its lowest offset not
// done: a record in flight (ErrAbandoned), or not started (ErrDeadline), whichever comes
// first in the partition. Counts keep their meaning (BatchResult.Reported is the records in
// the response, so a record that succeeded after the partition's lowest failure is both
// Processed and Reported); a Failure's Reported, and a "record failed" line's, count the
// records of its key that it holds back. Retry, the sink, the filter, idempotency, metrics,
// the deadline margin and the panic guards work per record as without the option. The
// [GroupHook]'s group is a key sequence: OnGroupStart before its first record, OnGroupEnd
// after its last, with reported the number of that key's records it did not finish; its
// GroupInfo has the partition's ID, and a Partition that holds that key's records only.
//
// SQS FIFO queues work alike with the MessageGroupId as the key: groups run at once, at
// most n messages in flight, each group in order, and a failed message is reported with the
// rest of its group (SQS takes back exactly the messages reported). A standard queue keeps
// no order: a batch of one under the option fails with a *toolkit.OptionError, as does the
// option without WithIdempotency, or with [WithConcurrency] (n already bounds what runs at
// once).
//
// # The deadline
//
// At the function's deadline less [WithDeadlineMargin] (500 ms by default), the handler's
// context is cancelled, no record is started, and the batch answers, whether or not every
// handler has returned: the records not started fail with [ErrDeadline], and a record whose
// handler has not returned (one that does not watch its context) fails with [ErrAbandoned],
// with the rest of its partition or message group. Its goroutine is left running: nothing
// it does after the answer changes the response, the counts, the hooks or the logs, and it
// sends nothing to the sink. A handler left running may still apply its effect: under
// [WithIdempotency] its key stays in progress until it ends (at most until the function's
// deadline), so the redelivery is skipped as done or comes back later; without it, the
// redelivery applies the effect again. With no deadline in the context, the batch waits for
// every handler.
//
// A batch that starts with that time already spent (Lambda Managed Instances do not stop a
// function at its timeout, and the time left can be zero or below: AWS, "Understanding the
// Lambda Managed Instances execution environment") is answered at once: every record is
// reported, one line at level Warn ("batch not processed: no time left") says so, and no
// handler, hook or store is called.
//
// # Panics
//
// A panic of code of the caller's never leaves the package, so that it never ends a process
// that serves several invocations at once (Lambda Managed Instances), whose other invocations
// it would end too. With a record in hand (the handler, OnGroupStart for the group's first
// record, OnRecordStart, OnRecordEnd, the sink's Send, the functions of WithIdempotencyKey and
// WithSQSKafkaRecord, the store), the record fails as a [PanicError] (or the store's error),
// reported like any failure, with its stack in its "record failed" line. With none
// (OnBatchStart, OnBatchEnd, OnGroupEnd, the WithMetrics writer), the invocation fails: the
// error returned is the [PanicError], after one "batch invocation failed" line. A panic of
// OnFailure, whose record has failed already, adds one "hook panicked" line.
//
// # What happens to a record
//
//	what went wrong                          the record                                 counted as
//	the handler's error, every attempt       reported, or to the sink (SinkExhausted)   Failed
//	a Permanent error, a panic, Record.Err   not retried; reported, or to the sink      Failed
//	the store fails at acquire               handler not called; reported, never sunk   Failed
//	the store fails at complete              a success: not reported (see below)        Processed, NotRecorded
//	  (idempotency.ErrNotRecorded)
//	the store fails at release               as the handler's error says; the key       Failed
//	                                         stays in progress until the release,
//	                                         retried in the background, is made or the
//	                                         lease ends (a redelivery before:
//	                                         ErrInProgress)
//	the deadline, handler ignores ctx        reported with the rest of its partition    Failed
//	                                         (ErrAbandoned); the handler left running,
//	                                         its key held (lease renewed) until it ends
//	the lease cannot be renewed              the handler's context ends; a result not   Failed
//	  (idempotency.ErrLeaseLost)             stored then is reported, never sunk
//	sunk before, delivered again             skipped (WithIdempotency: see WithSink)    Processed, Replayed
//
// Every Failed record has one "record failed" line and one [FailureHook] call. A record
// whose completion was not stored has happened: reporting it would apply its effect a second
// time, so it counts as processed, with one "record completion not stored" line at level
// Error; its key stays in progress, its lease renewed, while the completion is retried in the
// background (the next batch on the store waits a second at most for it), and a redelivery
// meanwhile fails with idempotency.ErrInProgress.
//
// SQS works alike: messages of a standard queue in parallel, those of a FIFO queue in order
// within each message group.
//
// # Seeing failures
//
// Each failed record is logged, one line at level Error ("record failed") with where it is
// (partition and offset, or message ID and group), its attempts, whether it was permanent or
// went to the sink, how many records the response reports because of it, and the error; a
// panic's stack is in its own attribute. Keys, values and bodies are never logged. Each batch
// ends with one summary line ("batch processed") of the counts of [BatchResult]: processed,
// failed (the "record failed" lines, whether the record then went to the sink or was
// reported), reported (the records in the response: the failed ones the sink did not take,
// and those held behind them), filtered, sentToSink, replayed and notRecorded. The metrics
// of [WithMetrics] are the same counts. [WithLogger] chooses the logger.
//
// [WithHooks] adds hooks: a [FailureHook] sees each failure as a [Failure], and the tracing
// adapters (packages xraytrace and oteltrace) are [BatchHook], [GroupHook] and [RecordHook]
// values. [WithMetrics] writes CloudWatch Embedded Metric Format counts, off by default
// because custom metrics cost money, through package metrics (the toolkit's one EMF writer),
// in a document of the batch's own beside the function's.
//
// # Options
//
// [WithSink] sends the records that cannot succeed to a failure destination (an SQS queue
// with package batch/sqssink, a Kafka topic with package batch/kafkasink, or any [Sink]) so
// that their partition moves on; [ReadEnvelope] reads what it wrote back. The sinks are
// packages of their own so that batch links neither an SQS nor a Kafka client. [WithFilter]
// skips the records FilterCriteria do not match, as the event source mapping would, and fails
// those it cannot decide on. [WithIdempotency] skips the records already handled by an
// earlier delivery. [WithCorrelationIDFrom] gives each record the correlation ID its producer
// wrote in a header (or SQS message attribute): the contexts of its handler, hooks and sink, and
// of its "record failed" line, carry it, so that each line logged for it through package
// lambdalog has "correlation_id" (make the logger of [WithLogger] a lambdalog one for batch's
// own lines to have it too).
//
// Options are checked once, where they are applied, never per record: [KafkaHandler] and
// [SQSHandler] check theirs when they make the handler, and with an option given an invalid
// value every invocation of that handler fails with its error, without a record handled (as
// aws-lambda-go's handler fails every invocation of a function it cannot call);
// [ProcessKafka] and [ProcessSQS] check theirs at each call. The error is a
// *toolkit.OptionError, which matches toolkit.ErrInvalidOption, and names the option and the
// value: "batch: invalid option WithRetry(0, 100ms): want at least 1 attempt and a backoff of
// 0 or more". Every package of the toolkit reports a bad option this way; those with a
// constructor that returns an error (producer.NewClient, fanout.NewDispatcher,
// codec.NewDeserializer,
// dynamodb.NewStore) return it there, as kgo.NewClient does.
package batch
