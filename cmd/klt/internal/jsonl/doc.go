// Package jsonl is klt's JSON Lines record format: one Kafka record per line, read by
// "klt event build" and "klt produce" (ReadRecords, ReadLines, DecodeLine) and written by
// "klt event decode" and "klt consume" (DecodedRecordOf).
//
// A line is a JSON object with "topic", "partition", "offset", "timestamp", "timestampType",
// "key"/"keyBase64", "value"/"valueBase64", "headers", "keySchema" and "valueSchema" (see
// "klt help event build"). Reading is bounded (MaxLineBytes a line, LinesLimit in all) and
// reports up to MaxLineErrors errors, each as a *LineError naming FILE:LINE.
package jsonl
