// Package schemajson converts record keys and values between JSON and the Avro or Protobuf
// encoding of a schema, framed for a schema registry (Confluent or AWS Glue), for "klt event
// decode" (SchemaFlags) and "klt produce" (ProduceSchemaFlags). Avro's JSON form is the one
// the event source mapping delivers in JSON mode, from package internal/avrojson, which the
// mapping emulator (esm) shares.
package schemajson
