// Package kafkaevent decodes and encodes the events that AWS Lambda's event source mapping
// sends to a function consuming Apache Kafka, from Amazon MSK (eventSource "aws:kafka") or from
// a self-managed cluster ("SelfManagedKafka").
//
// # The payload
//
// Lambda delivers a batch as one JSON document. Its records object is keyed "topic-partition";
// each record carries its key and value in standard base64, its headers as arrays of Java's
// signed byte numbers, its timestamp in epoch milliseconds, and, when the mapping uses a schema
// registry, keySchemaMetadata and valueSchemaMetadata. [Parse] turns that into an [Event]:
//
//	ev, err := kafkaevent.Parse(payload)
//	if err != nil {
//		return err // the envelope is malformed; err names the JSON path
//	}
//	for r := range ev.All() {
//		if r.Err != nil {
//			// this record's own fields are malformed; report it, go on with the rest
//		}
//		// r.Key, r.Value, r.Headers, r.Timestamp ...
//	}
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
//   - Partitions are sorted by topic, then number, whatever the order of the JSON object; each
//     record's topic and partition are checked against the key it came under.
//   - Schema-registry metadata is kept ([Record.KeySchema], [Record.ValueSchema]).
//
// # Errors
//
// Malformed input never panics and is never dropped in silence. A malformed envelope (invalid
// JSON, an unknown eventSource, a key that is not "topic-N", a record whose offset is missing)
// makes Parse fail with an [*Error] whose Path says where, for example
//
//	kafkaevent: records["orders-0"][3].offset: want integer, got "x"
//
// A record whose own fields are malformed (bad base64, a header byte out of range) does not
// fail the batch: Parse sets that record's Err, an *Error too, and the record keeps its topic,
// partition and offset so that it can be reported as a batch item failure.
//
// # Speed
//
// Parse reads the payload in one pass and decodes every key, value and header into one buffer
// per event, so a batch costs a few allocations per partition rather than several per record:
// 20 against 190,079 for encoding/json on the benchmark batch. On a 6 MB batch of 10,000 records it is more than twenty times
// faster than encoding/json into events.KafkaEvent plus base64 (README, BenchmarkParse).
//
// A function that takes the payload as a lambda.Handler (Invoke(ctx, payload []byte)) gets the
// whole gain. An *Event parameter also works, since Event implements json.Unmarshaler, but
// encoding/json then scans the payload first, which costs more than Parse itself.
//
// # Writing events
//
// [Event.MarshalJSON] writes the wire format back, so Parse(MarshalJSON(e)) equals e. A
// [Builder] makes events for tests and fixtures, with automatic offsets and timestamps.
// [FromAWS] and [ToAWS] convert from and to aws-lambda-go's events.KafkaEvent, for code that
// already uses it.
package kafkaevent
