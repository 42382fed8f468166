// Package event is the commands "klt event build" (JSON Lines records to an event of Lambda's
// Kafka event source mapping) and "klt event decode" (an event to JSON Lines). The line format
// is package jsonl's, the events package esmevent's, schemas package schemajson's.
package event
