// Package consume is the command "klt consume": it reads records of a Kafka topic and prints
// them as JSON Lines (package jsonl's format) or as one event of Lambda's Kafka event source
// mapping (--event). Connection flags are package kafkaconn's.
package consume
