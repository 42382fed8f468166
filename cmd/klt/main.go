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
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Exit codes.
const (
	exitOK    = 0 // success
	exitFail  = 1 // bad input or a failed read or write
	exitUsage = 2 // bad command line
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
		return exitUsage
	}
	switch args[0] {
	case "help", "-h", "-help", "--help":
		return runHelp(args[1:], stdout, stderr)
	case "version", "-version", "--version":
		if len(args) > 1 {
			return usageError(stderr, "version", fmt.Errorf("unexpected argument %q", args[1]))
		}
		fmt.Fprintln(stdout, versionLine())
		return exitOK
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
	return exitUsage
}

// runEvent runs "klt event ...".
func runEvent(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usageEvent)
		return exitUsage
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
	return exitUsage
}

// helpTopics maps "klt help" arguments to their text.
var helpTopics = map[string]string{
	"":             usageKLT,
	"event":        usageEvent,
	"event build":  usageBuild + buildFlagsHelp(),
	"event decode": usageDecode + flagsHelp(newDecodeFlags(new(schemaFlags))) + usageDecodeExamples,
	"filter":       usageFilter,
	"filter test":  usageFilterTest + flagsHelp(newFilterTestFlags(new(filterTestConfig))) + usageFilterTestExamples,
	"filter lint":  usageFilterLint + flagsHelp(newFilterLintFlags(new(engineFlags))) + usageFilterLintExamples,
	"produce":      usageProduce + flagsHelp(newProduceFlags(new(produceConfig))) + usageProduceExamples,
	"consume":      usageConsume + flagsHelp(newConsumeFlags(new(consumeConfig))) + usageConsumeExamples,
	"lint":         usageLint,
}

// runHelp runs "klt help [COMMAND...]".
func runHelp(topic []string, stdout, stderr io.Writer) int {
	text, ok := helpTopics[strings.Join(topic, " ")]
	if !ok {
		fmt.Fprintf(stderr, "klt help: unknown command %q\n\n%s", strings.Join(topic, " "), usageKLT)
		return exitUsage
	}
	fmt.Fprint(stdout, text)
	return exitOK
}

// parseFlags parses args with fs, letting flags and arguments mix as in
// "klt event build records.jsonl -o event.json"; "--" ends the flags. It returns the
// arguments that are not flags.
//
// For -h or --help it prints help to stdout and returns ok false with code exitOK; for a bad
// flag it prints the error and a short usage to stderr and returns ok false with code exitUsage.
func parseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (rest []string, code int, ok bool) {
	fs.SetOutput(io.Discard) // errors are reported below, in klt's words
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return nil, exitOK, false
		}
		if err != nil {
			return nil, usageError(stderr, fs.Name(), err), false
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, exitOK, true
		}
		if i := len(args) - len(left); i > 0 && args[i-1] == "--" {
			return append(rest, left...), exitOK, true
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// usageError reports a command-line mistake of command cmd ("event build") on stderr, with a
// pointer to its help, and returns exitUsage.
func usageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "klt %s: %s\nRun \"klt help %s\" for usage.\n", cmd, oneLine(err.Error()), cmd)
	return exitUsage
}

// inputName returns the name of the input file args name, for messages: "<stdin>" when there is
// none or it is "-".
func inputName(args []string) string {
	if len(args) == 0 || args[0] == "-" {
		return "<stdin>"
	}
	return args[0]
}

// eventKind returns kindKafka or kindSQS when data is a whole Kafka or SQS event rather than
// JSON Lines, and "" otherwise: a single JSON object with the members of an event.
func eventKind(data []byte) string {
	if !json.Valid(data) {
		return ""
	}
	var top map[string]json.RawMessage
	if json.Unmarshal(data, &top) != nil {
		return ""
	}
	_, hasSource := top["eventSource"]
	_, hasKafkaRecords := top["records"]
	_, hasSQSRecords := top["Records"]
	switch {
	case hasKafkaRecords || hasSource && !hasSQSRecords:
		return kindKafka
	case hasSQSRecords:
		return kindSQS
	}
	return ""
}

// shellQuote quotes name for a command line shown in a message, when it needs quoting.
func shellQuote(name string) string {
	if name == "<stdin>" {
		return "FILE"
	}
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@") == "" {
		return name
	}
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// errorf prints a "klt: " line on stderr, formatted as by fmt.Sprintf and made one line of
// printable text by oneLine, so that input quoted in the message never reaches the terminal raw.
func errorf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "klt: %s\n", oneLine(fmt.Sprintf(format, args...)))
}

// oneLine returns s for a message of one line: printable text stays as it is, and anything
// else (control characters, line breaks, bytes that are not UTF-8) is escaped as Go escapes it
// in a quoted string, so input never reaches the terminal raw.
func oneLine(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsPrint(r) || r == ' ':
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
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
