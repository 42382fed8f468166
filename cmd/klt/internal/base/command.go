package base

import (
	"context"
	"flag"
	"io"
)

// A Command is one command of klt, as cmd/go's base.Command: "klt produce", or a group such as
// "klt event" whose Commands are the two-word commands under it ("klt event build"). klt's
// main package lists them all in one table; help, usage and dispatch all come from it.
type Command struct {
	// Name is the command's word: "build" in "klt event build".
	Name string
	// Short is its line in the command list of "klt help".
	Short string
	// Long is its help, before the list of its flags.
	Long string
	// Flags returns a flag set of the command, for the list of its flags in the help; nil
	// when the help lists none. Run makes its own, bound to its configuration.
	Flags func() *flag.FlagSet
	// Examples ends the help, after the flags.
	Examples string
	// Run runs the command with the arguments after its name and returns the exit code.
	// A group has no Run.
	Run func(ctx context.Context, cmd *Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int
	// Commands are the commands of a group.
	Commands []*Command
}

// Help returns the command's help text: Long, the list of its flags and Examples.
func (c *Command) Help() string {
	if c.Flags == nil {
		return c.Long + c.Examples
	}
	return c.Long + FlagsHelp(c.Flags()) + c.Examples
}

// Lookup returns the command of the group c named name, or nil.
func (c *Command) Lookup(name string) *Command {
	for _, sub := range c.Commands {
		if sub.Name == name {
			return sub
		}
	}
	return nil
}
