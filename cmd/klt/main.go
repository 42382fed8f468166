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
//	klt plan --rate 100 --duration 300ms            # partitions, pollers, cost of both designs
//
// Run "klt help" for the commands and "klt help event build" for the record line format.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/consume"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/envvars"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/event"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/filtercmd"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/invoke"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/lint"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/local"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/plancmd"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/produce"
)

func main() { os.Exit(kltMain()) }

// kltMain runs klt with the process's arguments and standard streams and returns the exit
// code. Tests register it as the klt command of their scripts.
func kltMain() int {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	return run(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
}

// commands returns the command table: every command of klt, once. The command list of
// "klt help", the help of each command, and dispatch all come from it; adding a command
// touches this list. (A function, not a variable: "klt help" reads the table it is in.)
func commands() *base.Command {
	return &base.Command{
		UsageLine: "klt <command> [arguments]",
		Commands: []*base.Command{
			event.Cmd,
			filtercmd.Cmd,
			produce.Cmd,
			consume.Cmd,
			invoke.Cmd,
			envvars.Cmd,
			local.Cmd,
			plancmd.Cmd,
			lint.Cmd,
			{UsageLine: "klt help [COMMAND]", Short: `show help: "klt help event build" shows the record line format`,
				Long: usageHelp, Run: runHelp},
			base.WithFlags(&base.Command{UsageLine: "klt version", Short: "print klt's module version and the commit it was built from (also --version)",
				Long: usageVersion}, noFlags, runVersion),
		},
	}
}

// run runs klt with the command-line arguments args (without the program name) and returns the
// exit code. Help goes to stdout; errors and usage after a mistake go to stderr.
func run(ctx context.Context, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage())
		return base.ExitUsage
	}
	switch args[0] {
	case "-h", "-help", "--help":
		args[0] = "help"
	case "-version", "--version":
		args[0] = "version"
	}
	root := commands()
	cmd := root.Lookup(args[0])
	if cmd == nil {
		fmt.Fprintf(stderr, "klt: unknown command %q\n\n%s", args[0], usage())
		return base.ExitUsage
	}
	args = args[1:]
	if cmd.Commands != nil { // a group: "klt event build"
		if len(args) == 0 {
			fmt.Fprint(stderr, cmd.Help())
			return base.ExitUsage
		}
		if isHelp(args[0]) {
			return showHelp(append([]string{cmd.Name()}, args[1:]...), stdout, stderr)
		}
		sub := cmd.Lookup(args[0])
		if sub == nil {
			fmt.Fprintf(stderr, "klt %s: unknown command %q\n\n%s", cmd.Name(), args[0], cmd.Help())
			return base.ExitUsage
		}
		cmd, args = sub, args[1:]
	}
	return cmd.Run(ctx, cmd, args, stdin, stdout, stderr)
}

// isHelp reports whether arg asks for help.
func isHelp(arg string) bool {
	return arg == "help" || arg == "-h" || arg == "-help" || arg == "--help"
}

// usage returns the help of klt itself, its command list made from the table.
func usage() string {
	var b strings.Builder
	b.WriteString(usageKLT)
	root := commands()
	for _, cmd := range root.Commands {
		for _, sub := range cmd.Commands {
			fmt.Fprintf(&b, "  %-14s %s\n", sub.LongName(), sub.Short)
		}
		if cmd.Commands == nil {
			fmt.Fprintf(&b, "  %-14s %s\n", cmd.LongName(), cmd.Short)
		}
	}
	b.WriteString(usageKLTEnd)
	return b.String()
}

// lookup returns the command that topic names ("event build"), or nil. No topic is klt
// itself.
func lookup(topic []string) *base.Command {
	cmd := commands()
	for _, name := range topic {
		if cmd = cmd.Lookup(name); cmd == nil {
			return nil
		}
	}
	return cmd
}

// runHelp runs "klt help [COMMAND...]".
func runHelp(_ context.Context, cmd *base.Command, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 && isHelp(args[0]) && args[0] != "help" {
		fmt.Fprint(stdout, cmd.Help())
		return base.ExitOK
	}
	return showHelp(args, stdout, stderr)
}

// showHelp prints the help of the command that topic names.
func showHelp(topic []string, stdout, stderr io.Writer) int {
	cmd := lookup(topic)
	switch {
	case cmd == nil:
		fmt.Fprintf(stderr, "klt help: unknown command %q\n\n%s", strings.Join(topic, " "), usage())
		return base.ExitUsage
	case cmd.LongName() == "":
		fmt.Fprint(stdout, usage())
	default:
		fmt.Fprint(stdout, cmd.Help())
	}
	return base.ExitOK
}

// noFlags is the flag set of a command without flags: it still answers -h and --help, and
// refuses any other flag.
func noFlags(*struct{}) *flag.FlagSet { return flag.NewFlagSet("version", flag.ContinueOnError) }

// runVersion runs "klt version".
func runVersion(_ context.Context, _ *struct{}, _ *flag.FlagSet, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return base.UsageError(stderr, "version", fmt.Errorf("unexpected argument %q", args[0]))
	}
	fmt.Fprintln(stdout, base.VersionLine())
	return base.ExitOK
}

// usageHelp is the help of "klt help".
const usageHelp = `Help prints the help of klt, or of a command: "klt help event build" is the help of
"klt event build", the same as "klt event build --help". Help goes to standard output.
`

// usageVersion is the help of "klt version".
const usageVersion = `Version prints klt's module path and version, the commit it was built from and the Go version
that built it, as the build recorded them; a part not recorded is said to be unknown. It is
the same as "klt --version".
`

// usageKLT is the help of klt itself, before its command list.
const usageKLT = `klt is the command line of the kafkalambda toolkit. It makes and inspects the events that
AWS Lambda's Kafka event source mapping (Amazon MSK or self-managed Kafka) sends to a function.

Usage:

  klt <command> [arguments]

Commands:

`

// usageKLTEnd ends the help of klt, after its command list.
const usageKLTEnd = `
Every command also takes -h or --help. The exit status is 0 on success, 1 when the input is
bad, a file cannot be read or written, or a Kafka cluster cannot be reached, refuses the
credentials or a record (produce, consume), and 2 when the command line is wrong.

Example: write records, make a fixture event from them and read it back:

  klt event build < records.jsonl > event.json && klt event decode event.json

Example: check the FilterCriteria of a SAM template, then see which records of an event they let
through to the function:

  klt filter lint template.yaml
  klt filter test --criteria template.yaml#ConsumerMSKMapping --event event.json

Example: capture records of a real topic as a fixture event:

  klt consume --iam --brokers "$B" --topic orders --from-beginning --max 5 --event > event.json
`
