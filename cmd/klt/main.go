// Command klt is the command line of the kafkalambda toolkit. It makes and inspects the events
// that AWS Lambda's Kafka event source mapping sends to a function:
//
//	klt event build < records.jsonl > event.json   # JSON Lines records -> one ESM event
//	klt event decode event.json                     # ESM event -> one JSON line per record
//	klt filter test --criteria c.json --event e.json # which records FilterCriteria pass
//	klt filter lint template.yaml                   # check FilterCriteria as Lambda does
//	klt produce --topic orders < records.jsonl      # JSON Lines records -> Kafka (MSK IAM too)
//	klt consume --topic orders --event > event.json # Kafka records -> one ESM event
//	klt local --partitions 5 --load 500             # the template's stack, mappings emulated
//
// Run "klt help" for the commands and "klt help event build" for the record line format.
package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

func main() { os.Exit(kltMain()) }

// kltMain runs klt with the process's arguments and standard streams and returns the exit
// code. Tests register it as the klt command of their scripts.
func kltMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// run runs klt with the command-line arguments args (without the program name) and returns the
// exit code. Help goes to stdout; errors and usage after a mistake go to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageKLT)
		return base.ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		if len(args) > 1 {
			return base.UsageError(stderr, "version", fmt.Errorf("unexpected argument %q", args[1]))
		}
		fmt.Fprintln(stdout, base.VersionLine())
		return base.ExitOK
	case "event":
		return runEvent(ctx, args[1:], stdin, stdout, stderr)
	case "filter":
		return runFilter(ctx, args[1:], stdin, stdout, stderr)
	case "produce":
		return runProduce(ctx, args[1:], stdin, stdout, stderr)
	case "consume":
		return runConsume(ctx, args[1:], stdin, stdout, stderr)
	case "invoke":
		return runInvoke(ctx, args[1:], stdin, stdout, stderr)
	case "env-vars":
		return runEnvVars(ctx, args[1:], stdin, stdout, stderr)
	case "local":
		return runLocal(ctx, args[1:], stdin, stdout, stderr)
	case "lint":
		return runLint(ctx, args[1:], stdout, stderr)
	}
	fmt.Fprintf(stderr, "klt: unknown command %q\n\n%s", args[0], usageKLT)
	return base.ExitUsage
}

// runEvent runs "klt event ...".
func runEvent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageEvent)
		return base.ExitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return runHelp(append([]string{"event"}, args[1:]...), stdout, stderr)
	case "build":
		return runBuild(ctx, args[1:], stdin, stdout, stderr)
	case "decode":
		return runDecode(ctx, args[1:], stdin, stdout, stderr)
	}
	fmt.Fprintf(stderr, "klt event: unknown command %q\n\n%s", args[0], usageEvent)
	return base.ExitUsage
}

// helpTopics maps "klt help" arguments to their text.
var helpTopics = map[string]string{
	"":             usageKLT,
	"event":        usageEvent,
	"event build":  usageBuild + buildFlagsHelp(),
	"event decode": usageDecode + base.FlagsHelp(newDecodeFlags(new(schemaFlags))) + usageDecodeExamples,
	"filter":       usageFilter,
	"filter test":  usageFilterTest + base.FlagsHelp(newFilterTestFlags(new(filterTestConfig))) + usageFilterTestExamples,
	"filter lint":  usageFilterLint + base.FlagsHelp(newFilterLintFlags(new(engineFlags))) + usageFilterLintExamples,
	"produce":      usageProduce + base.FlagsHelp(newProduceFlags(new(produceConfig))) + usageProduceExamples,
	"consume":      usageConsume + base.FlagsHelp(newConsumeFlags(new(consumeConfig))) + usageConsumeExamples,
	"lint":         usageLint,
	"invoke":       usageInvoke + base.FlagsHelp(newInvokeFlags(new(invokeConfig))) + usageInvokeExamples,
	"env-vars":     usageEnvVars + base.FlagsHelp(newEnvVarsFlags(new(envVarsConfig))),
	"local":        usageLocal + base.FlagsHelp(newLocalFlags(new(localConfig))) + usageLocalExamples,
}

// runHelp runs "klt help [COMMAND...]".
func runHelp(topic []string, stdout, stderr io.Writer) int {
	text, ok := helpTopics[strings.Join(topic, " ")]
	if !ok {
		fmt.Fprintf(stderr, "klt help: unknown command %q\n\n%s", strings.Join(topic, " "), usageKLT)
		return base.ExitUsage
	}
	fmt.Fprint(stdout, text)
	return base.ExitOK
}

// usageKLT is the help of klt itself.
const usageKLT = `klt is the command line of the kafkalambda toolkit. It makes and inspects the events that
AWS Lambda's Kafka event source mapping (Amazon MSK or self-managed Kafka) sends to a function.

Usage:

  klt <command> [arguments]

Commands:

  event build    make an event from records written as JSON Lines
  event decode   print the records of an event as JSON Lines
  filter test    show which records of an event pass FilterCriteria, and why the others do not
  filter lint    check FilterCriteria (JSON, or in a SAM template) as Lambda checks them
  produce        send records written as JSON Lines to a Kafka topic (Amazon MSK IAM too)
  consume        print records of a Kafka topic as JSON Lines, or as one event (--event)
  invoke         run a function of a SAM template with an event, as sam local invoke, without Docker
  env-vars       start local servers and write a sam local invoke --env-vars file pointing at them
  local          run a SAM stack locally, event source mappings included; --load measures it
  lint           check a SAM template: the SAM schema, and the mistakes that lose records
  help           show help: "klt help event build" shows the record line format
  version        print klt's module version and the commit it was built from (also --version)

Every command also takes -h or --help. The exit status is 0 on success, 1 when the input is
bad, a file cannot be read or written, or a Kafka cluster cannot be reached, refuses the
credentials or a record (produce, consume), and 2 when the command line is wrong.

Example: write records, make a fixture event from them and read it back:

  klt event build < records.jsonl > event.json && klt event decode event.json

Example: check the FilterCriteria of a SAM template, then see which records of an event they let
through to the function:

  klt filter lint template.yaml
  klt filter test --criteria template.yaml#OrdersConsumer.Orders --event event.json

Example: capture records of a real topic as a fixture event:

  klt consume --iam --brokers "$B" --topic orders --from-beginning --max 5 --event > event.json
`

// usageEvent is the help of "klt event".
const usageEvent = `Usage: klt event <command> [arguments]

Commands for events of Lambda's Kafka event source mapping, the JSON payload a function
receives:

  build [flags] [FILE]   make an event from JSON Lines records, one per line
  decode [flags] [FILE]  print the records of an event as JSON Lines

Run "klt help event build" or "klt help event decode" for details.

Examples:

  klt event build < records.jsonl > event.json && klt event decode event.json
  klt event decode event.json | klt event build    # the same records again
`
