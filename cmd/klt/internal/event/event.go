package event

import "github.com/kafkalambda/toolkit/cmd/klt/internal/base"

// Cmd is the command group "klt event": build and decode.
var Cmd = &base.Command{
	UsageLine: "klt event <command> [arguments]",
	Long:      usageEvent,
	Commands:  []*base.Command{cmdBuild, cmdDecode},
}

// usageEvent is the help of "klt event".
const usageEvent = `Commands for events of Lambda's Kafka event source mapping, the JSON payload a function
receives:

  build [flags] [FILE]   make an event from JSON Lines records, one per line
  decode [flags] [FILE]  print the records of an event as JSON Lines

Run "klt help event build" or "klt help event decode" for details.

Examples:

  klt event build < records.jsonl > event.json && klt event decode event.json
  klt event decode event.json | klt event build    # the same records again
`
