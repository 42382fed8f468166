// Package plancmd is "klt plan": it sizes and prices a Kafka -> Lambda stack before it is
// built, printing package capacity's plan for the designs the toolkit ships (direct,
// key-concurrent with --key-concurrency, and the fan-out through SQS) as text for people, as JSON for tools, and, with --report, as a page
// of charts made by planning again over a range of partitions, of concurrency and of rates.
//
// Its inputs are capacity.Input's fields, each defined once in options.go: a flag (--rate,
// --batch-size, --queue ...) and the same field's JSON name as a key of a --config file (YAML
// or JSON), read by the same parser (sizes as 1024, 1KB or 1MiB, durations in Go's syntax). The
// figures of a klt local report (--from-report) come first, --config's over them, the flags
// given last: what the user typed wins.
package plancmd
