// Package avrojson converts between Avro values and JSON, one way each, for the two places
// the toolkit shows Avro as JSON: the mapping emulator's JSON mode (esm: the JSON a Lambda
// event carries for an Avro value when the event source mapping has a schema registry) and
// klt's schema flags ("klt event decode" prints that JSON; "klt produce" reads it back).
//
// [Append] writes a value hamba/avro decoded into an any as JSON; [FromJSON] gives a JSON value
// (decoded with json.Decoder.UseNumber) the Go types hamba/avro encodes with that schema. The
// forms agree for records, arrays, maps, unions, enums, bytes and fixed: what Append writes of
// them, FromJSON reads back.
package avrojson
