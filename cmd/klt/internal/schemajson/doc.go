// Package schemajson converts record keys and values between JSON and the Avro or Protobuf
// encoding of a schema, framed for a schema registry (Confluent or AWS Glue), for "klt event
// decode" (SchemaFlags) and "klt produce" (ProduceSchemaFlags). AvroFromJSON gives a JSON value
// the Go types an Avro schema is written from.
package schemajson
