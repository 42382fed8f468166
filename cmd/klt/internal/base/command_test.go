package base

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"io"
	"strings"
	"testing"
)

// A command's name is the words of its usage line before the first flag or argument.
func TestCommandNames(t *testing.T) {
	for _, tc := range []struct{ usage, long, name string }{
		{"klt <command> [arguments]", "", ""},
		{"klt event <command> [arguments]", "event", "event"},
		{"klt event build [flags] [FILE]", "event build", "build"},
		{"klt produce --topic TOPIC [flags] [FILE]", "produce", "produce"},
		{"klt filter lint [flags] SRC...", "filter lint", "lint"},
		{"klt invoke [flags] FUNCTION EVENT", "invoke", "invoke"},
		{"klt env-vars [flags]", "env-vars", "env-vars"},
		{"klt version", "version", "version"},
	} {
		c := &Command{UsageLine: tc.usage}
		if c.LongName() != tc.long || c.Name() != tc.name {
			t.Errorf("%q: LongName %q, Name %q; want %q, %q", tc.usage, c.LongName(), c.Name(), tc.long, tc.name)
		}
	}
}

type testConfig struct {
	n       int
	refused error
}

func (c *testConfig) FlagError() error { return c.refused }

type refusing struct{ c *testConfig }

func (r refusing) String() string { return "" }
func (r refusing) Set(s string) error {
	r.c.refused = errors.New("--odd " + s + ": not odd")
	return r.c.refused
}

func newTestFlags(c *testConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("test cmd", flag.ContinueOnError)
	fs.IntVar(&c.n, "n", 1, "a `N`")
	fs.Var(refusing{c}, "odd", "an odd number")
	return fs
}

// WithFlags parses a fresh configuration per run, answers --help with the help, reports a
// bad flag as a usage error (in the configuration's words when it has them), and runs the
// command with the arguments that are not flags.
func TestWithFlags(t *testing.T) {
	var got []string
	var gotN int
	cmd := WithFlags(&Command{UsageLine: "klt test cmd [flags] ARG", Long: "Long.\n"}, newTestFlags,
		func(_ context.Context, c *testConfig, _ *flag.FlagSet, args []string, _ io.Reader, _, _ io.Writer) int {
			got, gotN = args, c.n
			return ExitOK
		})
	run := func(args ...string) (int, string, string) {
		var out, errb bytes.Buffer
		code := cmd.Run(context.Background(), cmd, args, nil, &out, &errb)
		return code, out.String(), errb.String()
	}
	if code, _, _ := run("a", "-n", "3", "b"); code != ExitOK || gotN != 3 || strings.Join(got, " ") != "a b" {
		t.Errorf("run: exit %d, n %d, args %q", code, gotN, got)
	}
	if code, _, _ := run("a"); code != ExitOK || gotN != 1 {
		t.Errorf("a second run shares the first's configuration: n %d", gotN)
	}
	if code, out, _ := run("--help"); code != ExitOK || !strings.HasPrefix(out, "Usage: klt test cmd [flags] ARG\n\nLong.\n\nFlags") {
		t.Errorf("--help: exit %d, %q", code, out)
	}
	if code, _, errs := run("--nope"); code != ExitUsage || !strings.HasPrefix(errs, "klt test cmd: ") {
		t.Errorf("--nope: exit %d, %q", code, errs)
	}
	if code, _, errs := run("--odd", "2"); code != ExitUsage || errs != "klt test cmd: --odd 2: not odd\nRun \"klt help test cmd\" for usage.\n" {
		t.Errorf("--odd 2: exit %d, %q", code, errs)
	}
}
