package base

import (
	"bytes"
	"context"
	"flag"
	"io"
	"strings"
)

// A Command is one command of klt, as cmd/go's base.Command: "klt produce", or a group such as
// "klt event" whose Commands are the two-word commands under it ("klt event build"). Each
// command package exports one; klt's main package lists them in one table, and help, usage
// and dispatch all come from it.
type Command struct {
	// UsageLine is the command's usage: "klt event build [flags] [FILE]". Its words before
	// the first flag or argument ("klt event build") name the command.
	UsageLine string
	// Short is its line in the command list of "klt help".
	Short string
	// Long is its help after the usage line and before the list of its flags.
	Long string
	// Flag returns a new flag set of the command, its flags bound to a new configuration: the
	// help lists its flags (none when it defines none), and Run, made by [WithFlags], parses
	// the arguments with it. nil for a command that parses no flags.
	Flag func() *flag.FlagSet
	// FlagsInLong says that Long describes the flags, so that the help lists none.
	FlagsInLong bool
	// Examples ends the help, after the flags.
	Examples string
	// Run runs the command with the arguments after its name and returns the exit code.
	// A group has no Run.
	Run func(ctx context.Context, cmd *Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// Commands are the commands of a group.
	Commands []*Command
}

// LongName returns the command's name after "klt": "event build".
func (c *Command) LongName() string {
	var words []string
	for _, w := range strings.Fields(c.UsageLine)[1:] {
		if w == "" || w[0] == '-' || w[0] == '[' || w[0] == '<' || w[0] < 'a' || w[0] > 'z' {
			break
		}
		words = append(words, w)
	}
	return strings.Join(words, " ")
}

// Name returns the command's word: "build" in "klt event build".
func (c *Command) Name() string {
	name := c.LongName()
	if i := strings.LastIndex(name, " "); i >= 0 {
		name = name[i+1:]
	}
	return name
}

// Help returns the command's help text: the usage line, Long, the list of its flags and
// Examples.
func (c *Command) Help() string {
	h := "Usage: " + c.UsageLine + "\n\n" + c.Long
	if c.Flag != nil && !c.FlagsInLong {
		if fs := c.Flag(); hasFlags(fs) {
			h += FlagsHelp(fs)
		}
	}
	return h + c.Examples
}

// hasFlags reports whether fs defines a flag.
func hasFlags(fs *flag.FlagSet) bool {
	n := 0
	fs.VisitAll(func(*flag.Flag) { n++ })
	return n > 0
}

// Lookup returns the command of the group c named name, or nil.
func (c *Command) Lookup(name string) *Command {
	for _, sub := range c.Commands {
		if sub.Name() == name {
			return sub
		}
	}
	return nil
}

// A RunFunc runs a command whose flags are parsed: conf is the configuration they were bound
// to, fs their set, and args the arguments that are not flags.
type RunFunc[C any] func(ctx context.Context, conf *C, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int

// A FlagErrorer is a configuration whose flags word a refused value themselves: when parsing
// fails and FlagError is not nil, the usage error says it instead of the flag package's
// message (which says the value twice).
type FlagErrorer interface{ FlagError() error }

// WithFlags sets cmd's Flag and Run from a command's configuration type C and returns cmd:
// newFlags binds a flag set to a configuration, and run runs the command on it. Run makes a
// new configuration and its flag set for each run, so that runs share nothing, parses the
// arguments with ParseFlags (-h and --help print the command's help), and calls run.
func WithFlags[C any](cmd *Command, newFlags func(*C) *flag.FlagSet, run RunFunc[C]) *Command {
	cmd.Flag = func() *flag.FlagSet { return newFlags(new(C)) }
	cmd.Run = func(ctx context.Context, cmd *Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
		conf := new(C)
		fs := newFlags(conf)
		var parseErr bytes.Buffer
		args, code, ok := ParseFlags(fs, args, cmd.Help(), stdout, &parseErr)
		if !ok {
			if fe, isFE := any(conf).(FlagErrorer); isFE && fe.FlagError() != nil {
				return UsageError(stderr, cmd.LongName(), fe.FlagError())
			}
			_, _ = io.Copy(stderr, &parseErr)
			return code
		}
		return run(ctx, conf, fs, args, stdin, stdout, stderr)
	}
	return cmd
}
