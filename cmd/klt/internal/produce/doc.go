// Package produce is the command "klt produce": it sends records written as JSON Lines
// (package jsonl) to a Kafka topic, with the connection flags of package kafkaconn and the
// schemas of package schemajson.
package produce
