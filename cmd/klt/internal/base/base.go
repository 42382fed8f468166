package base

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// PrintErrors prints err on stderr, one "klt: " line for each error it joins, at any depth,
// each on one line with anything unprintable escaped (see errorf).
func PrintErrors(stderr io.Writer, err error) {
	for _, e := range LeafErrors(err) {
		Errorf(stderr, "%v", e)
	}
}

// SplitServers splits a comma-separated list of host:port entries, checking each; "" is the
// empty list.
func SplitServers(s string) ([]string, error) {
	if strings.TrimSpace(s) == "" {
		return nil, nil
	}
	var servers []string
	for _, hp := range strings.Split(s, ",") {
		hp = strings.TrimSpace(hp)
		host, port, err := net.SplitHostPort(hp)
		if err == nil && host == "" {
			err = errors.New("no host")
		}
		if err == nil {
			if n, perr := strconv.ParseUint(port, 10, 16); perr != nil || n == 0 {
				err = fmt.Errorf("port %q is not a number from 1 to 65535", port)
			}
		}
		if err != nil {
			return nil, fmt.Errorf("want host:port entries, got %q: %w", hp, err)
		}
		servers = append(servers, hp)
	}
	return servers, nil
}

// FlagsHelp returns the flag list of fs, for a help text.
func FlagsHelp(fs *flag.FlagSet) string {
	var b strings.Builder
	fs.SetOutput(&b)
	fs.PrintDefaults()
	return "\nFlags (-flag and --flag are the same):\n\n" + b.String()
}

// WithArticle returns "a Kafka" or "an SQS".
func WithArticle(kind string) string {
	if kind == KindSQS {
		return "an " + kind
	}
	return "a " + kind
}

// LeafErrors returns the errors that err joins, recursively, or err itself; nil for nil.
func LeafErrors(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var leaves []error
	for _, e := range j.Unwrap() {
		leaves = append(leaves, LeafErrors(e)...)
	}
	return leaves
}

// Plural returns "1 filter" or "N filters".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
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
	fmt.Fprintf(stderr, "klt %s: %s\nRun \"klt help %s\" for usage.\n", cmd, OneLine(err.Error()), cmd)
	return ExitUsage
}

// InputName returns the name of the input file args name, for messages: "<stdin>" when there is
// none or it is "-".
func InputName(args []string) string {
	if len(args) == 0 || args[0] == "-" {
		return "<stdin>"
	}
	return args[0]
}

// ShellQuote quotes name for a command line shown in a message, when it needs quoting.
func ShellQuote(name string) string {
	if name == "<stdin>" {
		return "FILE"
	}
	if name != "" && strings.Trim(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./+,:@") == "" {
		return name
	}
	return "'" + strings.ReplaceAll(name, "'", `'\''`) + "'"
}

// Errorf prints a "klt: " line on stderr, formatted as by fmt.Sprintf and made one line of
// printable text by oneLine, so that input quoted in the message never reaches the terminal raw.
func Errorf(stderr io.Writer, format string, args ...any) {
	fmt.Fprintf(stderr, "klt: %s\n", OneLine(fmt.Sprintf(format, args...)))
}

// OneLine returns s for a message of one line: printable text stays as it is, and anything
// else (control characters, line breaks, bytes that are not UTF-8) is escaped as Go escapes it
// in a quoted string, so input never reaches the terminal raw.
func OneLine(s string) string {
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

// OrDefault returns s, or def when s is empty.
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
