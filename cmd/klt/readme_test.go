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
	"unicode"

	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kfake"
)

// TestMain lets the test binary act as klt: testscript.Main installs it under the name klt on
// the PATH of every script, so scripts, and the shells they start, run klt as a user would.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){"klt": func() { os.Exit(kltMain()) }})
}

// The pages TestREADME runs are README.md and every docs/*.md. Their fenced blocks follow one
// convention:
//
//   - ```sh holds commands for the reader to type, and only those. Every line runs, from the
//     root of a fresh copy of the repository's tracked files (one copy per page, the page's
//     blocks in order, so a file one block writes is there for the next), with klt on the
//     PATH. A "# " line after a command shows its output, which must match; a command must
//     exit 0. A command that cannot run here (it needs AWS, the network, or minutes) is in
//     readmeSkips with the reason; it is reported, not run.
//   - ```text holds what is not a command to run: output, log lines, file contents, diagrams.
//   - Other shell tags (bash, shell, console, zsh) are refused, so that no block of commands
//     escapes the test by its tag.

// skip names a command of a page that the test does not run.
type skip struct {
	file string // the page, relative to the repository root: "README.md", "docs/deploy.md"
	cmd  string // the command as the page writes it, continuation lines included
}

// Reasons shared by several skips.
const (
	needsAWS      = "needs an AWS account and a deployed stack"
	needsKafkaVPC = "needs the MSK cluster's brokers, from inside its VPC"
)

// readmeSkips are the pages' shell lines the test does not run, each with the reason. Every
// other line of every sh block runs. An entry that no longer matches a line of its page fails
// the test, so the list stays true.
var readmeSkips = map[skip]string{
	{"README.md", "make demo"}:                                                          "minutes of load; TestLocalStack runs klt local on the same stack with a smaller load, faults included",
	{"README.md", "go get github.com/kafkalambda/toolkit@latest"}:                       "needs a Go module of the reader's and the module proxy",
	{"README.md", "git clone https://github.com/kafkalambda/toolkit.git && cd toolkit"}: "needs the network; the test runs in a copy of this clone's files instead",
	{"README.md", "make test"}:                                                          "runs this test among all the others",
	{"README.md", "go install ./cmd/klt"}:                                               "builds the binary the test stands in for: the test binary is klt on the scripts' PATH",
	{"README.md", "go install github.com/kafkalambda/toolkit/cmd/klt@latest"}:           "needs a release of the cmd/klt module on the module proxy",

	{"docs/codec.md", "CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags=lambda.norpc -o /tmp/fn ./internal/linkcheck/testdata/codec"}: "a measurement, with the next line: internal/linkcheck's tests hold its figures (TestBinarySizes, TestCodecInit)",
	{"docs/codec.md", "go run ./internal/linkcheck/testdata/coldstart -n 21 -callgrind /tmp/fn"}:                                             "a minute under valgrind's callgrind, which the test machine need not have; internal/linkcheck's tests hold the figures",

	{"docs/development.md", "make test    # gofmt, go vet, staticcheck, and every test under -race (fuzz seed corpora included)"}: "runs this test among all the others",
	{"docs/development.md", "make fuzz    # a short run of every fuzz target (FUZZTIME=15s each by default)"}:                     "minutes of fuzzing; CI runs the seed corpora through make test",
	{"docs/development.md", "make bench   # every benchmark beside its alternative, summarised by benchstat"}:                     "minutes of benchmarks, and needs npm for the servers",
	{"docs/development.md", "make test-arm64  # the arm64 code (NEON base64) tested under qemu-user; make test runs it too"}:      "minutes under qemu-user; make test runs it after the tests",

	{"docs/local.md", "make demo"}: "minutes of load; TestLocalStack runs klt local on the same stack with a smaller load, faults included",
	{"docs/local.md", "klt local --template template.yaml --partitions 5 \\\n  --http-sink OrdersApiUrl --work 300ms --generate '{\"orderId\":{{seq}},\"customer\":\"{{key}}\",\"total\":{{seq}}.5,\"currency\":\"EUR\",\"status\":\"placed\"}' --keys 1000 \\\n  --header 'correlation-id=order-{{seq}}' \\\n  --variant KeyConcurrentConsumer=ConsumerFunction:KeyConcurrency=100 \\\n  --load ConsumerFunction=500 --load 5000 \\\n  --fault-load 60 --fault 'value:seq=12:{\"orderId\":{{seq}},\"customer\":\"{{key}}\",\"total\":-1,\"currency\":\"EUR\",\"status\":\"placed\"}' --fault http:seq=20 --fault timeout:seq=30 \\\n  --report demo"}: "make demo; minutes of load, which TestLocalStack runs smaller",
	{"docs/local.md", "klt local --template template.yaml --partitions 5 --lmi-concurrency ConsumerFunction=8 \\\n  --http-sink OrdersApiUrl --work 300ms --generate '{\"orderId\":{{seq}},\"customer\":\"{{key}}\",\"total\":{{seq}}.5,\"currency\":\"EUR\",\"status\":\"placed\"}' --keys 1000 \\\n  --header 'correlation-id=order-{{seq}}' \\\n  --load ConsumerFunction=500 --load 5000 \\\n  --fault-load 60 --fault 'value:seq=12:{\"orderId\":{{seq}},\"customer\":\"{{key}}\",\"total\":-1,\"currency\":\"EUR\",\"status\":\"placed\"}' --fault http:seq=20 --fault timeout:seq=30 \\\n  --report demo-lmi"}:                                  "make demo's minutes of load with the consumer as an LMI function; TestConsumerAsLMIFunction runs the consumer so",
	{"docs/local.md", "klt local --partitions 2"}: "serves until Ctrl-C; TestLocalServe runs it and produces these records",
	{"docs/local.md", "klt produce --brokers 127.0.0.1:PORT --no-tls --topic orders cmd/klt/testdata/local/orders.jsonl"}:                                                                                                                                                                        "needs the stack klt local serves, at the port it prints; TestLocalServe runs it",
	{"docs/local.md", "klt local --template cmd/klt/testdata/local/enricher/template.yaml --partitions 3 \\\n  --parameter-overrides SubnetIds=subnet-1,subnet-2 --parameter-overrides SecurityGroupIds=sg-1 \\\n  --records readings.jsonl --fault kafka:3 --fault timeout:seq=4 --report out"}: "needs a readings.jsonl; TestLocalEnricher runs it on readings of its own",

	{"docs/deploy.md", `aws kafka get-bootstrap-brokers --cluster-arn "$CLUSTER_ARN" --query BootstrapBrokerStringSaslIam --output text`}:                                      needsAWS,
	{"docs/deploy.md", `aws kafka describe-cluster-v2 --cluster-arn "$CLUSTER_ARN" --query 'ClusterInfo.Provisioned.BrokerNodeGroupInfo.[ClientSubnets,SecurityGroups]'`}:      needsAWS,
	{"docs/deploy.md", `kafka-topics.sh --bootstrap-server "$BROKERS" --command-config client.properties --create --topic orders --partitions 6 --replication-factor 3`}:       needsKafkaVPC + ", and Kafka's own tools",
	{"docs/deploy.md", `kafka-topics.sh --bootstrap-server "$BROKERS" --command-config client.properties --create --topic order-events --partitions 6 --replication-factor 3`}: needsKafkaVPC + ", and Kafka's own tools",
	{"docs/deploy.md", "sam build                # make build-<LogicalId> for each function: linux/arm64 bootstrap"}:                                                           "needs SAM CLI; go test ./samples/internal/sambuild builds every function of the template the same way",
	{"docs/deploy.md", "sam deploy --guided      # asks for the parameters below; can save them in samconfig.toml"}:                                                            needsAWS + " (it deploys one), and answers to its questions",
	{"docs/deploy.md", `klt produce --iam --brokers "$BROKERS" --topic orders order.jsonl`}:                                                                                    needsKafkaVPC + ", with IAM credentials",
	{"docs/deploy.md", "sam logs --stack-name kafkalambda-samples -n ConsumerFunction --tail"}:                                                                                 needsAWS + "; it follows the logs until interrupted",
	{"docs/deploy.md", "sam list stack-outputs --stack-name kafkalambda-samples"}:                                                                                              needsAWS,
	{"docs/deploy.md", `aws sqs get-queue-attributes --queue-url "$CONSUMER_FAILURE_QUEUE_URL" --attribute-names ApproximateNumberOfMessagesVisible`}:                          needsAWS,
	{"docs/deploy.md", `aws sqs receive-message --queue-url "$WORK_DLQ_URL" --max-number-of-messages 10`}:                                                                      needsAWS,
	{"docs/deploy.md", "sam deploy"}:                                  needsAWS,
	{"docs/deploy.md", "sam delete --stack-name kafkalambda-samples"}: needsAWS,
}

// TestREADME runs every shell snippet of README.md and docs/*.md, each page in order, as a new
// user would: from the root of a fresh clone (a copy of the files git tracks here), with klt
// on the PATH. Each command runs in sh; what it prints (standard output and error together)
// must be what the page shows after it, as "# " lines, and nothing when it shows none; "..."
// in a shown line stands for any text. A command must exit 0. The lines in readmeSkips are
// reported, not run. $KAFKA_BOOTSTRAP_SERVERS names a kfake broker with a two-partition topic
// "orders", for the klt produce and consume snippets. The pages run in parallel, each in its
// own copy with its own broker.
func TestREADME(t *testing.T) {
	pages, err := docPages("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	skipped := make(map[skip]bool)
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		steps, err := readmeSteps(data)
		if err != nil {
			t.Fatalf("%s: %v", page, err)
		}
		if len(steps) == 0 {
			if page == "README.md" {
				t.Fatal("README.md has no sh blocks")
			}
			continue
		}
		script := readmeScript(page, steps, skipped)
		for _, s := range steps {
			if reason, ok := readmeSkips[skip{page, s.cmd}]; ok {
				t.Logf("%s:%d: skipped %q: %s", page, s.line, s.cmd, reason)
			}
		}
		name := strings.NewReplacer("/", "-", ".md", "").Replace(page) + ".txtar"
		if err := os.WriteFile(filepath.Join(dir, name), script, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for k := range readmeSkips {
		if !skipped[k] {
			t.Errorf("readmeSkips has %q for %s, which is no longer a line of an sh block there", k.cmd, k.file)
		}
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

// docPages returns the pages TestREADME runs, relative to root: README.md, then docs/*.md.
func docPages(root string) ([]string, error) {
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		return nil, err
	}
	pages := []string{"README.md"}
	for _, d := range docs {
		pages = append(pages, "docs/"+filepath.Base(d))
	}
	return pages, nil
}

// TestREADMEProgram holds the README's Go program to samples/readme/main.go, byte for byte, so
// that the program most users start from is one that builds (go vet ./... and the build of
// every package compile it).
func TestREADMEProgram(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("../../samples/readme/main.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(readme, []byte("\n```go\n"))
	if !ok {
		t.Fatal("README.md has no go block")
	}
	got, _, ok := bytes.Cut(rest, []byte("\n```\n"))
	if !ok {
		t.Fatal("README.md: the first go block is not closed")
	}
	if got := append(got, '\n'); !bytes.Equal(got, want) {
		t.Errorf("the first go block of README.md is not samples/readme/main.go; copy the file into the README (or the README's block into the file)")
	}
}

// readmeStep is one command of a README sh block and the output the README shows for it.
type readmeStep struct {
	line int      // line of the command in README.md
	cmd  string   // the command, with its here-document or continuation lines
	want []string // the lines shown after it, without "# "
}

// heredoc finds the delimiter of a here-document: <<EOF, <<'EOF', <<"EOF" or <<-EOF.
var heredoc = regexp.MustCompile(`<<-?\s*['"]?([A-Za-z_][A-Za-z0-9_]*)['"]?`)

// shellTags are the fence tags, other than sh, that would hide commands from the test.
var shellTags = map[string]bool{"bash": true, "shell": true, "console": true, "zsh": true, "shell-session": true, "sh-session": true}

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
			tag := strings.TrimSpace(line)
			if shellTags[strings.TrimPrefix(tag, "```")] && strings.HasPrefix(tag, "```") {
				return nil, fmt.Errorf("line %d: %q: commands to run go in sh blocks, anything else in text blocks", n, tag)
			}
			inBlock = tag == "```sh"
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

// readmeScript returns a testscript script that runs the steps of page in order, and marks in
// skipped the commands it skips. Each command is a file run by sh with standard error joined
// to standard output, and its shown output a file the "shows" command compares with what it
// printed.
func readmeScript(page string, steps []readmeStep, skipped map[skip]bool) []byte {
	var b, files bytes.Buffer
	for i, s := range steps {
		if reason, ok := readmeSkips[skip{page, s.cmd}]; ok {
			skipped[skip{page, s.cmd}] = true
			fmt.Fprintf(&b, "# %s:%d skipped: %s\n# %s\n\n", page, s.line, reason, strings.ReplaceAll(s.cmd, "\n", "\n# "))
			continue
		}
		name := "step" + strconv.Itoa(i)
		fmt.Fprintf(&b, "# %s:%d\nexec sh $WORK/%s.sh\nshows $WORK/%s.out\n\n", page, s.line, name, name)
		fmt.Fprintf(&files, "-- %s.sh --\nexec 2>&1\n%s\n-- %s.out --\n", name, s.cmd, name)
		for _, w := range s.want {
			files.WriteString(w + "\n")
		}
	}
	return append(b.Bytes(), files.Bytes()...)
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
		ts.Fatalf("the page shows\n%s\nbut the command printed\n%s", indent(want), indent(got))
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
	for _, bad := range []string{"```sh\n# output first\n```\n", "```sh\n#no space\n```\n", "```sh\na\n", "```sh\na \\\n```\n", "```bash\na\n```\n", "```console\n$ a\n```\n"} {
		if _, err := readmeSteps([]byte(bad)); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
	if !showsMatch("klt x v1 (commit 1)\n", "klt x ... (commit ...)\n") || showsMatch("a\nb\n", "a\n") || showsMatch("", "a\n") {
		t.Error("showsMatch")
	}
}

// mdLink finds the target of a Markdown link or image: [text](target).
var mdLink = regexp.MustCompile(`\]\(([^)\s]+)\)`)

// TestDocLinks checks the links of README.md and docs/*.md that stay in the repository: each
// names a file or directory of the repository, and a "#fragment" names a heading of the page
// it points into, as GitHub makes its anchors. Moving a page or renaming a heading breaks no
// link unnoticed.
func TestDocLinks(t *testing.T) {
	pages, err := docPages("../..")
	if err != nil {
		t.Fatal(err)
	}
	for _, page := range pages {
		data, err := os.ReadFile(filepath.Join("../..", page))
		if err != nil {
			t.Fatal(err)
		}
		for n, line := range strings.Split(string(data), "\n") {
			for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
				if err := checkLink(page, m[1]); err != nil {
					t.Errorf("%s:%d: %s: %v", page, n+1, m[1], err)
				}
			}
		}
	}
}

// checkLink reports whether target, a link of page, points at something in the repository.
func checkLink(page, target string) error {
	if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
		return nil
	}
	path, fragment, _ := strings.Cut(target, "#")
	file := page
	if path != "" {
		file = filepath.ToSlash(filepath.Join(filepath.Dir(page), path))
	}
	if _, err := os.Stat(filepath.Join("../..", file)); err != nil {
		return fmt.Errorf("no such file or directory in the repository")
	}
	if fragment == "" || !strings.HasSuffix(file, ".md") {
		return nil
	}
	data, err := os.ReadFile(filepath.Join("../..", file))
	if err != nil {
		return err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if h, ok := strings.CutPrefix(strings.TrimLeft(line, "#"), " "); ok && strings.HasPrefix(line, "#") && anchor(h) == fragment {
			return nil
		}
	}
	return fmt.Errorf("%s has no heading with the anchor #%s", file, fragment)
}

// anchor is the anchor GitHub gives a heading: lower case, spaces as hyphens, and punctuation
// other than hyphens and underscores left out.
func anchor(heading string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(strings.TrimSpace(heading)) {
		switch {
		case r == ' ':
			b.WriteByte('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
