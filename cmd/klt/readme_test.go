package main

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestMain lets the test binary act as klt: testscript.Main installs it under the name klt on
// the PATH of every script, so scripts, and the shells they start, run klt as a user would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"klt": func() { os.Exit(kltMain()) }})
}

// readmeSkips are the README's shell lines the test does not run, each with the reason. Every
// other line of every sh block runs. An entry that no longer matches a README line fails the
// test, so the list stays true.
var readmeSkips = map[string]string{
	"go get github.com/kafkalambda/toolkit@latest":                       "needs a Go module of the reader's and the module proxy",
	"git clone https://github.com/kafkalambda/toolkit.git && cd toolkit": "needs the network; the test runs in a copy of this clone's files instead",
	"go install ./cmd/klt": "builds the binary the test stands in for: the test binary is klt on the scripts' PATH",
	"make test    # gofmt, go vet, staticcheck, and every test under -race (fuzz seed corpora included)": "runs this test among all the others",
	"make fuzz    # a short run of every fuzz target (FUZZTIME=15s each by default)":                     "minutes of fuzzing; CI runs the seed corpora through make test",
	"make bench   # every benchmark beside its alternative, summarised by benchstat":                     "minutes of benchmarks, and needs npm for the servers",
	"make demo": "minutes of load; TestLocalStack runs klt local on the same stack with a smaller load, faults included",
}

// TestREADME runs every shell snippet of README.md, in order, as a new user would: from the
// root of a fresh clone (a copy of the files git tracks here), with klt on the PATH. Each
// command runs in sh; what it prints (standard output and error together) must be what the
// README shows after it, as "# " lines, and nothing when it shows none; "..." in a shown line
// stands for any text. A command must exit 0. The lines in readmeSkips are reported, not run.
// $KAFKA_BOOTSTRAP_SERVERS names a kfake broker with a two-partition topic "orders", for the
// klt produce and consume snippets.
func TestREADME(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	steps, err := readmeSteps(readme)
	if err != nil {
		t.Fatalf("README.md: %v", err)
	}
	if len(steps) == 0 {
		t.Fatal("README.md has no sh blocks")
	}
	script, skipped := readmeScript(steps)
	for cmd := range readmeSkips {
		if !skipped[cmd] {
			t.Errorf("readmeSkips has %q, which is no longer a line of README.md", cmd)
		}
	}
	for _, s := range steps {
		if reason, ok := readmeSkips[s.cmd]; ok {
			t.Logf("README.md:%d: skipped %q: %s", s.line, s.cmd, reason)
		}
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "readme.txtar"), script, 0o644); err != nil {
		t.Fatal(err)
	}
	files, err := cloneFiles("../..")
	if err != nil {
		t.Fatal(err)
	}
	testscript.Run(t, testscript.Params{
		Dir:                 dir,
		RequireExplicitExec: true,
		Setup: func(env *testscript.Env) error {
			clone := filepath.Join(env.WorkDir, "toolkit")
			if err := copyFiles("../..", clone, files); err != nil {
				return err
			}
			env.Cd = clone
			// The klt produce and consume snippets need a broker: kfake, in this process.
			kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "orders"))
			if err != nil {
				return fmt.Errorf("starting kfake for the klt produce and consume snippets: %w", err)
			}
			env.Defer(kafka.Close)
			env.Setenv("KAFKA_BOOTSTRAP_SERVERS", strings.Join(kafka.ListenAddrs(), ","))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){"shows": cmdShows},
	})
}

// readmeStep is one command of a README sh block and the output the README shows for it.
type readmeStep struct {
	line int      // line of the command in README.md
	cmd  string   // the command, with its here-document or continuation lines
	want []string // the lines shown after it, without "# "
}

// heredoc finds the delimiter of a here-document: <<EOF, <<'EOF', <<"EOF" or <<-EOF.
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// readmeSteps returns the commands of the sh blocks of readme, in order. A line starting with
// "#" shows output of the command before it, so a block cannot start with one.
func readmeSteps(readme []byte) ([]readmeStep, error) {
	var steps []readmeStep
	sc := bufio.NewScanner(bytes.NewReader(readme))
	inBlock, n := false, 0
	var heredocEnd string // the delimiter line ending the here-document being read
	var cur *readmeStep
	for sc.Scan() {
		n++
		line := sc.Text()
		switch {
		case !inBlock:
			inBlock = strings.TrimSpace(line) == "```sh"
			cur = nil
		case heredocEnd != "":
			cur.cmd += "\n" + line
			if line == heredocEnd {
				heredocEnd = ""
			}
		case strings.HasPrefix(line, "```"):
			if cur != nil && strings.HasSuffix(cur.cmd, `\`) {
				return nil, fmt.Errorf("line %d: the block ends in a continuation line", n)
			}
			inBlock = false
		case cur != nil && strings.HasSuffix(cur.cmd, `\`):
			cur.cmd += "\n" + line
		case strings.TrimSpace(line) == "":
		case line == "#" || strings.HasPrefix(line, "# "):
			if cur == nil {
				return nil, fmt.Errorf("line %d: output %q shown before any command of its block", n, line)
			}
			cur.want = append(cur.want, strings.TrimPrefix(strings.TrimPrefix(line, "#"), " "))
		case strings.HasPrefix(line, "#"):
			return nil, fmt.Errorf("line %d: %q: shown output lines start with \"# \"", n, line)
		default:
			steps = append(steps, readmeStep{line: n, cmd: line})
			cur = &steps[len(steps)-1]
			if m := heredoc.FindStringSubmatch(line); m != nil {
				heredocEnd = m[1]
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if inBlock {
		return nil, fmt.Errorf("an sh block is not closed")
	}
	return steps, nil
}

// readmeScript returns a testscript script that runs steps in order, and the commands it
// skips. Each command is a file run by sh with standard error joined to standard output, and
// its shown output a file the "shows" command compares with what it printed.
func readmeScript(steps []readmeStep) (script []byte, skipped map[string]bool) {
	var b, files bytes.Buffer
	skipped = make(map[string]bool)
	for i, s := range steps {
		if reason, ok := readmeSkips[s.cmd]; ok {
			skipped[s.cmd] = true
			fmt.Fprintf(&b, "# README.md:%d skipped: %s\n# %s\n\n", s.line, reason, strings.ReplaceAll(s.cmd, "\n", "\n# "))
			continue
		}
		name := "step" + strconv.Itoa(i)
		fmt.Fprintf(&b, "# README.md:%d\nexec sh $WORK/%s.sh\nshows $WORK/%s.out\n\n", s.line, name, name)
		fmt.Fprintf(&files, "-- %s.sh --\nexec 2>&1\n%s\n-- %s.out --\n", name, s.cmd, name)
		for _, w := range s.want {
			files.WriteString(w + "\n")
		}
	}
	return append(b.Bytes(), files.Bytes()...), skipped
}

// cmdShows is the script command "shows FILE": the standard output of the last exec must be
// FILE's lines, where "..." in a line of FILE stands for any text.
func cmdShows(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: shows FILE")
	}
	got := ts.ReadFile("stdout")
	want := ts.ReadFile(args[0])
	if !showsMatch(got, want) {
		ts.Fatalf("the README shows\n%s\nbut the command printed\n%s", indent(want), indent(got))
	}
}

// showsMatch reports whether got is the text want shows, "..." matching any text within a line.
func showsMatch(got, want string) bool {
	parts := strings.Split(want, "...")
	for i := range parts {
		parts[i] = regexp.QuoteMeta(parts[i])
	}
	return regexp.MustCompile(`\A` + strings.Join(parts, `.*`) + `\z`).MatchString(got)
}

func indent(s string) string {
	if s == "" {
		return "    (nothing)"
	}
	return "    " + strings.ReplaceAll(strings.TrimSuffix(s, "\n"), "\n", "\n    ")
}

// cloneFiles lists the files a clone of the repository at root has: those git tracks.
func cloneFiles(root string) ([]string, error) {
	out, err := exec.Command("git", "-C", root, "ls-files", "-z").Output()
	if err != nil {
		return nil, fmt.Errorf("git ls-files, to copy the files of a clone: %w", err)
	}
	return strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00"), nil
}

// copyFiles copies files, relative to from, into the directory to. A tracked file deleted from
// the working tree is left out, as it will be from the next commit.
func copyFiles(from, to string, files []string) error {
	for _, f := range files {
		data, err := os.ReadFile(filepath.Join(from, f))
		if os.IsNotExist(err) {
			continue
		}
		if err != nil {
			return err
		}
		dst := filepath.Join(to, f)
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, data, 0o644); err != nil {
			return err
		}
	}
	return nil
}

func TestReadmeSteps(t *testing.T) {
	// The parser behind TestREADME: commands, their here-documents and continuations, and the
	// output shown after each; prose and other blocks are not commands.
	in := "text\n```go\nx := 1\n```\n```sh\n" +
		"cat > f <<'EOF'\n# not output\nEOF\n" +
		"a --x \\\n  --y   # trailing comment\n# out 1\n#\n# out 3\n\n" +
		"b\n```\n"
	steps, err := readmeSteps([]byte(in))
	if err != nil {
		t.Fatal(err)
	}
	want := []readmeStep{
		{6, "cat > f <<'EOF'\n# not output\nEOF", nil},
		{9, "a --x \\\n  --y   # trailing comment", []string{"out 1", "", "out 3"}},
		{15, "b", nil},
	}
	if fmt.Sprint(steps) != fmt.Sprint(want) {
		t.Errorf("steps\n%v\nwant\n%v", steps, want)
	}
	for _, bad := range []string{"```sh\n# output first\n```\n", "```sh\n#no space\n```\n", "```sh\na\n", "```sh\na \\\n```\n"} {
		if _, err := readmeSteps([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if !showsMatch("klt x v1 (commit 1)\n", "klt x ... (commit ...)\n") || showsMatch("a\nb\n", "a\n") || showsMatch("", "a\n") {
		t.Error("showsMatch")
	}
}
