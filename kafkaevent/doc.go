// Package kafkaevent decodes and encodes the events that AWS Lambda's event source mapping
// sends to a function consuming Apache Kafka, from Amazon MSK (eventSource "aws:kafka") or from
// a self-managed cluster ("SelfManagedKafka").
//
// # Reading an event
//
// Lambda delivers a batch as one JSON document. Its records object is keyed "topic-partition";
// each record carries its key and value in standard base64, its headers as arrays of Java's
// signed byte numbers, its timestamp in epoch milliseconds, and, when the mapping uses a schema
// registry, keySchemaMetadata and valueSchemaMetadata. [Parse] turns those bytes into an
// [Event]. Give it the payload as Lambda sent it: a type with an Invoke method is a
// lambda.Handler, which aws-lambda-go calls with the raw payload, and lambda.Start accepts it.
//
//	type handler struct{}
//
//	func (handler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
//		ev, err := kafkaevent.Parse(payload)
//		if err != nil {
//			return nil, err // the envelope is malformed; err names the JSON path
//		}
//		for r := range ev.All() {
//			if r.Err != nil {
//				// this record's own fields are malformed; report it, go on with the rest
//				continue
//			}
//			// r.Key, r.Value, r.Headers, r.Timestamp ...
//		}
//		return nil, nil
//	}
//
//	func main() { lambda.Start(handler{}) }
//
// Package batch's KafkaHandler is such a handler, with partial-batch responses, retries and
// idempotency on top. A handler function that takes *Event as its parameter also works, since
// Event implements json.Unmarshaler, but then encoding/json scans the whole payload before
// Parse sees it, which costs many times what Parse itself costs (docs/performance.md, BenchmarkParse).
//
// Keys and values are most of a batch's bytes; Parse decodes their base64 in vector registers,
// with AVX2 on amd64 and NEON on arm64 (Graviton), and in plain Go on other processors or when
// built with the tag purego. Which code ran never shows in the result: the tests hold each to
// encoding/base64 and to the other.
//
// # What Parse keeps
//
// The decoding is exact where aws-lambda-go's events.KafkaEvent is not:
//
//   - A key or value that is absent or null is nil; one that is "" is empty but not nil. A nil
//     Value is a tombstone ([Record.IsTombstone]); an empty one is an empty payload.
//   - Header values are bytes, from numbers in -128..255 (Lambda sends Java's signed bytes; some
//     producers write unsigned ones). Headers keep their order and repeated names; a null header
//     value is nil. See [Record.Header] and [Record.HeaderValues].
//   - A timestamp of -1 (Kafka's "no timestamp") is the zero time, not 1969. Other timestamps
//     are UTC.
//   - Offsets are int64 read digit by digit, never through float64, so 2^53+1 stays exact.
//     A partition given as a numeric string, as hand-written fixtures do, is accepted.
//   - Partitions are sorted by topic, then number, whatever the order of the JSON object.
//   - Schema-registry metadata is kept ([Record.KeySchema], [Record.ValueSchema]).
//
// Parse also reads what hand-written fixtures contain: records keys that do not match their
// records ("mytopic-01", "topic1", or records of partition 12 under "mytopic-0"), and
// "aws:SelfManagedKafka" for self-managed Kafka. A record's own topic and partition are
// authoritative ([Record.PartitionID]); its [Partition] keeps the key as the event wrote it
// ([Partition.ID]), which is what a partial-batch response must name.
//
// # Errors
//
// Malformed input never panics and is never dropped in silence. A malformed envelope (invalid
// JSON, an unknown eventSource, a record whose offset is missing) makes Parse fail with an
// [*Error] whose Path says where, for example
//
//	kafkaevent: records["orders-0"][3].offset: want integer, got "x"
//
// What an error shows of the payload is printable text on one line: anything else is quoted
// with escapes. A payload that starts with a UTF-8 byte order mark gets an error that says so.
// Invalid JSON is worded as encoding/json words it ("invalid character '}' after object
// key"), and the SQS decoder behind package batch words it alike: both read with the same
// reader, which also sets the one limit of nesting, encoding/json's (10,000 levels of arrays and
// objects, in unknown members too), and both fail with an *Error, the SQS decoder's prefixed
// "SQS event" ("SQS event: Records[3].body: want a string, got 42").
//
// A record whose own fields are malformed (bad base64, a header byte out of range) does not
// fail the batch: Parse sets that record's Err, an *Error too, and the record keeps its topic,
// partition and offset so that it can be reported as a batch item failure.
//
// A member given twice is never read as the last one, as encoding/json reads it, nor as the
// first. Given twice in the envelope (eventSource, eventSourceArn, bootstrapServers, records),
// or as a record's topic, partition or offset, it fails Parse: a second records object would
// drop the first one's records, and a record whose identity is in doubt cannot be named in a
// batch item failure. Any other member of a record given twice (timestamp, timestampType, key,
// value, headers, keySchemaMetadata, valueSchemaMetadata, or dataFormat or schemaId in either
// metadata object) sets that record's Err and leaves the field zero:
//
//	kafkaevent: records["orders-0"][3].value: member appears twice in the record
//
// A records key given twice fails Parse too. Repeats that are not duplicates are read: a
// header name that repeats (Kafka allows it; each member of a header object is a header of its
// own, in order), and an unknown member given twice. Parse skips unknown members, so there is
// no value to choose between, and Lambda may add members that a release of this package does
// not know yet; remembering every name of every record would cost the hot path a set per
// object for members whose values are never read.
//
// # Writing events
//
// [Event.MarshalJSON] writes the wire format back, so Parse(MarshalJSON(e)) equals e. Package
// kafkaevent/kafkaeventtest makes events for tests and fixtures, with automatic offsets and
// timestamps. [FromAWS] and [ToAWS] convert from and to aws-lambda-go's events.KafkaEvent, for
// code that already uses it.
package kafkaevent
