package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// result is what one run of klt did.
type result struct {
	stdout, stderr string
	code           int
}

// klt runs the command line with args and stdin, as main would.
func klt(t *testing.T, stdin string, args ...string) result {
	t.Helper()
	var stdout, stderr bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(stdin), &stdout, &stderr)
	return result{stdout.String(), stderr.String(), code}
}

// writeFile writes content to name in a new temporary directory and returns its path.
func writeFile(t *testing.T, name, content string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestHelp(t *testing.T) {
	// Every way of asking for help prints to stdout and exits 0.
	tests := []struct {
		args []string
		want []string // substrings of stdout
	}{
		{[]string{"help"}, []string{"klt <command>", "event build", "event decode",
			"klt event build < records.jsonl > event.json && klt event decode event.json"}},
		{[]string{"--help"}, []string{"klt <command>"}},
		{[]string{"-h"}, []string{"klt <command>"}},
		{[]string{"help", "event"}, []string{"klt event <command>", "build [flags] [FILE]"}},
		{[]string{"event", "--help"}, []string{"klt event <command>"}},
		{[]string{"event", "help"}, []string{"klt event <command>"}},
		{[]string{"event", "help", "build"}, []string{"klt event build [flags] [FILE]"}},
		{[]string{"help", "event", "build"}, []string{"klt event build [flags] [FILE]"}},
		{[]string{"event", "build", "--help"}, []string{
			"klt event build [flags] [FILE]",
			// the line format, every field of it
			`"topic"`, "partition", "offset", "timestamp", "timestampType", "keyBase64",
			"valueBase64", "headers", "keySchema", "valueSchema", "tombstone",
			// the flags
			"-source", "-arn", "-bootstrap-servers", "-start-time", "-compact", "-o FILE",
			// an example pipeline
			"klt event build < records.jsonl > event.json && klt event decode event.json",
		}},
		{[]string{"event", "build", "-h"}, []string{"klt event build [flags] [FILE]"}},
		{[]string{"event", "build", "-o", "x.json", "--help"}, []string{"klt event build [flags] [FILE]"}},
		{[]string{"event", "decode", "--help"}, []string{"klt event decode [flags] [FILE]", "--value-schema", "keyBase64", "valueBase64", "error ",
			"klt event decode event.json | klt event build"}},
		{[]string{"help", "event", "decode"}, []string{"klt event decode [flags] [FILE]"}},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := klt(t, "", tt.args...)
			if r.code != base.ExitOK || r.stderr != "" {
				t.Errorf("exit %d, stderr %q; want 0 and nothing", r.code, r.stderr)
			}
			for _, w := range tt.want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("help does not contain %q:\n%s", w, r.stdout)
				}
			}
		})
	}
}

func TestHelpLinesFit(t *testing.T) {
	// Help is read in terminals: no line of it is wider than 100 columns, except the flag
	// default that holds the whole example ARN.
	for topic, text := range helpTopics() {
		for i, line := range strings.Split(text, "\n") {
			if len(line) > 100 && !strings.Contains(line, "arn:aws:kafka") {
				t.Errorf("klt help %s: line %d is %d wide: %q", topic, i+1, len(line), line)
			}
		}
	}
}

func TestUsageErrors(t *testing.T) {
	// Mistakes on the command line print usage or a pointer to it on stderr and exit 2.
	tests := []struct {
		args []string
		want string // first line of stderr
	}{
		{nil, "klt is the command line"},
		{[]string{"frobnicate"}, `klt: unknown command "frobnicate"`},
		{[]string{"--verbose"}, `klt: unknown command "--verbose"`},
		{[]string{"help", "nope"}, `klt help: unknown command "nope"`},
		{[]string{"event"}, "Usage: klt event <command>"},
		{[]string{"event", "encode"}, `klt event: unknown command "encode"`},
		{[]string{"event", "build", "--nope"}, "klt event build: flag provided but not defined: -nope"},
		{[]string{"event", "build", "-o"}, "klt event build: flag needs an argument: -o"},
		{[]string{"event", "build", "--compact=maybe"}, `klt event build: invalid boolean value "maybe" for -compact: parse error`},
		{[]string{"event", "build", "a.jsonl", "b.jsonl"}, "klt event build: want at most one input file, got 2"},
		{[]string{"event", "build", "--source", "kinesis"}, `klt event build: --source: want msk or self-managed, got "kinesis"`},
		{[]string{"event", "build", "--arn", "cluster-1"}, `klt event build: --arn: want an ARN such as arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID, got "cluster-1"`},
		{[]string{"event", "build", "--source", "self-managed", "--arn", "arn:aws:kafka:x"}, "klt event build: --arn: a self-managed Kafka event has no eventSourceArn; use --source msk"},
		{[]string{"event", "build", "--bootstrap-servers", "b1:9092,b2"}, `klt event build: --bootstrap-servers: want host:port entries, got "b2": address b2: missing port in address`},
		{[]string{"event", "build", "--bootstrap-servers", "b1:99999"}, `klt event build: --bootstrap-servers: want host:port entries, got "b1:99999": port "99999" is not a number from 1 to 65535`},
		{[]string{"event", "build", "--bootstrap-servers", ":9092"}, `klt event build: --bootstrap-servers: want host:port entries, got ":9092": no host`},
		{[]string{"event", "build", "--start-time", "today"}, `klt event build: --start-time: want an RFC 3339 time such as 2026-01-15T10:00:00.250Z, got "today"`},
		{[]string{"event", "build", "--start-time", "1969-12-31T23:59:59Z"}, "klt event build: --start-time: 1969-12-31T23:59:59Z is before 1970, which Kafka cannot represent"},
		{[]string{"event", "decode", "a.json", "b.json"}, "klt event decode: want at most one input file, got 2"},
		{[]string{"event", "decode", "--compact"}, "klt event decode: flag provided but not defined: -compact"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			r := klt(t, `{"topic":"t"}`, tt.args...)
			if r.code != base.ExitUsage {
				t.Errorf("exit %d, want %d", r.code, base.ExitUsage)
			}
			if r.stdout != "" {
				t.Errorf("stdout %q, want nothing", r.stdout)
			}
			first, rest, _ := strings.Cut(r.stderr, "\n")
			if !strings.HasPrefix(first, tt.want) {
				t.Errorf("stderr starts %q, want %q", first, tt.want)
			}
			if rest == "" {
				t.Errorf("stderr has no usage or pointer to help after the error: %q", r.stderr)
			}
		})
	}
}

func TestParseFlagsInterspersed(t *testing.T) {
	// Flags may follow the file name, and "--" ends the flags.
	in := writeFile(t, "r.jsonl", `{"topic":"t","value":"v"}`+"\n")
	out := filepath.Join(t.TempDir(), "e.json")
	if r := klt(t, "", "event", "build", in, "-o", out, "--compact"); r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	data, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Count(data, []byte("\n")) != 1 {
		t.Errorf("--compact after the file was not applied:\n%s", data)
	}

	dash := writeFile(t, "-o", `{"topic":"t"}`+"\n")
	t.Chdir(filepath.Dir(dash))
	r := klt(t, "", "event", "build", "--compact", "--", "-o")
	if r.code != 0 || !strings.HasPrefix(r.stdout, `{"eventSource"`) {
		t.Errorf("after --, -o was not read as the input file: exit %d, %q, %q", r.code, r.stdout, r.stderr)
	}
}

// helpTopics returns the help of klt ("") and of every command of the table, by the topic
// "klt help" takes ("event build").
func helpTopics() map[string]string {
	topics := map[string]string{"": usage()}
	for _, cmd := range commands().Commands {
		topics[cmd.LongName()] = cmd.Help()
		for _, sub := range cmd.Commands {
			topics[sub.LongName()] = sub.Help()
		}
	}
	return topics
}
