// Package fanout moves Kafka records through an SQS queue, so that they are processed with
// more parallelism than the topic has partitions, without losing a record, breaking per-key
// order, or applying a redelivered record twice.
//
// A Kafka event source mapping runs at most one invocation per partition at a time: with a
// 300 ms handler and 5 partitions, about 16 records a second, however much traffic arrives.
// The pattern is a thin dispatcher function on the Kafka event source mapping that sends each
// record to an SQS queue, and worker functions on an SQS event source mapping, which scales to
// hundreds of concurrent invocations, that run the real handler:
//
//	Kafka --ESM--> dispatcher --SendMessageBatch--> SQS --ESM--> workers
//
// The dispatcher is a [Dispatcher] ([NewDispatcher]); the workers give their handler, the one
// that would run on Kafka, to [WorkerHandler]:
//
//	func main() {
//		lambda.Start(fanout.WorkerHandler(func(ctx context.Context, r *kafkaevent.Record) error {
//			return apply(ctx, r.Key, r.Value) // the Kafka handler, unchanged
//		}, batch.WithIdempotency(store)))
//	}
//
// # Order
//
// On a FIFO queue, the dispatcher puts the records of one Kafka key in one message group, in
// their Kafka order, and the workers process each group in order (batch.ProcessSQS): per key,
// the workers see the records in the order Kafka has them. On a standard queue, records go as
// fast as SQS takes them, with no order at all.
//
// # Duplicates
//
// A record can reach the queue twice: the Kafka event source mapping retries a batch whose
// response it did not get, and a standard queue may deliver a message twice. The two copies
// have different SQS message IDs, so the workers' idempotency keys each message on the record
// it carries, its topic, partition and offset (idempotency.KafkaKey), never on the message
// ID: under batch.WithIdempotency, a record dispatched twice is applied once. A FIFO queue
// also drops a copy sent within five minutes of the first (see MessageDeduplicationId below).
//
// # The message
//
// A record travels in one SQS message, and [ReadRecord] rebuilds it byte for byte: value, key,
// headers (order, repeated names, null values, bytes that are not UTF-8), topic, partition,
// offset, timestamp and its type, and schema metadata.
//
// The body is the record's value when SQS can carry it as text: valid UTF-8, not empty, made
// only of the characters SQS allows in a body (#x9, #xA, #xD, #x20 to #xD7FF, #xE000 to
// #xFFFD, #x10000 to #x10FFFF). The workers' SQS FilterCriteria, which match the body, then
// see the document that Kafka FilterCriteria saw as the value. A value SQS cannot carry as
// text (binary, say Avro or Protobuf) travels in the Binary attribute kafka.value
// ([ValueAttribute]), and the body says so in words; so does the body of an empty value and
// of a null one (a tombstone), which stay apart. SQS refuses an empty body.
//
// The rest travels in message attributes, as few as possible, since SQS allows 10 per message
// and users may want their own:
//
//   - kafka.record ([RecordAttribute], String): compact JSON, readable in the console,
//     {"v":1,"topic":"orders","partition":3,"offset":42,"timestamp":1700000000123,
//     "timestampType":"CreateTime","key":"b3JkZXItNw==","value":"text"}: "v" is the format's
//     version; "timestamp" is in milliseconds, -1 when the record has none; "key" is the key
//     in base64, "" when it is empty, absent when it is null; "value" is "text" (the body),
//     "binary" (kafka.value), "empty" or "null"; "keySchema" and "valueSchema", when the
//     event source mapping has a schema registry, are {"dataFormat":..,"schemaId":..}.
//     Strings are escaped to ASCII, so that any topic name is a string SQS takes.
//   - kafka.headers ([HeadersAttribute], Binary), when the record has headers: each header in
//     order, as its name's length (unsigned varint) and bytes, then 0 for a null value or the
//     value's length plus one (unsigned varint) and its bytes.
//   - kafka.value ([ValueAttribute], Binary), when the value is not text.
//   - traceparent and tracestate ([TraceParentAttribute], [TraceStateAttribute], String), when
//     the record has these W3C Trace Context headers: copies where OpenTelemetry's SQS
//     instrumentation (and package oteltrace on the workers) looks for them.
//
// An X-Ray trace header on the record (X-Amzn-Trace-Id) travels, when it is well formed, as
// the message's AWSTraceHeader system attribute, where X-Ray and Lambda look for it. So a message takes one
// attribute for a text value without headers, two with headers, five at most, and leaves
// users at least five.
//
// On a FIFO queue the message group ID (MessageGroupId) is the record's key when it is a
// valid group ID as it is (1 to 128 ASCII letters, digits and punctuation), otherwise the hex
// SHA-256 of the key; a record with a null key goes to the group of its partition
// ("topic-N"). The deduplication ID (MessageDeduplicationId) is the hex SHA-256 (64
// characters, within SQS's 128 whatever the topic's length) of the record's topic,
// partition and offset: the same record sent twice within five minutes is enqueued once.
//
// # Limits
//
// SQS takes messages of at most 1 MiB ([limits.MaxSQSMessageBytes]), counting the body and each
// attribute's name, data type and value; the SQS API reference does not say whether a binary
// value counts as its bytes or as its base64, and the local emulator the tests run counts the
// base64, so this package counts the base64: a text value can be up to 1 MiB less a few
// hundred bytes of attributes, a binary one about 768 KiB. A record too large, or with a
// string SQS cannot carry, fails with an [*EncodeError] (wrapping batch.ErrMessageTooLarge
// for the size) and is reported by the dispatcher, never dropped. A message that does not
// carry a record fails [ReadRecord] with a [*DecodeError] naming the attribute at fault; the
// worker reports it as a failed message.
//
// # Options
//
// The Dispatcher's own options ([Option]) are those of fanning out: message groups
// ([WithMessageGroup], [WithPartitionGroups]), the message size ([WithMaxMessageSize]) and
// the SendMessageBatch calls ([WithSendConcurrency], [WithSendRetry]). What it shares with
// every processor of Kafka batches (logger, metrics, deadline margin, failure sink, the
// records' correlation IDs) it takes as package batch's options, through
// [WithBatchOptions], and the workers take batch's options alone: each option is defined once, in the package that owns the behaviour, with
// one default. [NewDispatcher] checks its options once and returns the error of an invalid
// one, a *toolkit.OptionError naming the option and value (wrapping batch's error, for one of
// batch's); [WorkerHandler] checks its options as batch.SQSHandler does.
package fanout
