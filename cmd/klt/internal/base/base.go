package base

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
)

// PrintErrors prints err on stderr, one "klt: " line for each error it joins, at any depth,
// each on one line with anything unprintable escaped (see errorf).
func PrintErrors(stderr io.Writer, err error) {
	for _, e := range clitext.LeafErrors(err) {
		Errorf(stderr, "%v", e)
	}
}

// FlagsHelp returns the flag list of fs, for a help text.
func FlagsHelp(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return "\nFlags (-flag and --flag are the same):\n\n" + b.String()
}

// Exit codes.
const (
	ExitOK    = 0 // success
	ExitFail  = 1 // bad input or a failed read or write
	ExitUsage = 2 // bad command line
)

// ParseFlags parses args with fs, letting flags and arguments mix as in
// "klt event build records.jsonl -o event.json"; "--" ends the flags. It returns the
// arguments that are not flags.
//
// For -h or --help it prints help to stdout and returns ok false with code exitOK; for a bad
// flag it prints the error and a short usage to stderr and returns ok false with code exitUsage.
func ParseFlags(fs *flag.FlagSet, args []string, help string, stdout, stderr io.Writer) (rest []string, code int, ok bool) {
	fs.SetOutput(io.Discard) // errors are reported below, in klt's words
	fs.Usage = func() {}
	for {
		err := fs.Parse(args)
		if errors.Is(err, flag.ErrHelp) {
			fmt.Fprint(stdout, help)
			return nil, ExitOK, false
		}
		if err != nil {
			return nil, UsageError(stderr, fs.Name(), err), false
		}
		left := fs.Args()
		if len(left) == 0 {
			return rest, ExitOK, true
		}
		if i := len(args) - len(left); i > 0 && args[i-1] == "--" {
			return append(rest, left...), ExitOK, true
		}
		rest = append(rest, left[0])
		args = left[1:]
	}
}

// UsageError reports a command-line mistake of command cmd ("event build") on stderr, with a
// pointer to its help, and returns exitUsage.
func UsageError(stderr io.Writer, cmd string, err error) int {
	fmt.Fprintf(stderr, "klt %s: %s\nRun \"klt help %s\" for usage.\n", cmd, clitext.OneLine(err.Error()), cmd)
	return ExitUsage
}

// Errorf prints a "klt: " line on stderr, formatted as by fmt.Sprintf and made one line of
// printable text by oneLine, so that input quoted in the message never reaches the terminal raw.
func Errorf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "klt: %s\n", clitext.OneLine(fmt.Sprintf(format, args...)))
}
