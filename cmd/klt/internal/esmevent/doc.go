// Package esmevent makes the events Lambda's Kafka event source mapping sends to a function
// from klt's records (BuildEvent, SourceOptions), and writes them indented as fixtures are
// (IndentJSON).
package esmevent
