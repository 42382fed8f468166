package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kfake"
)

// helpExampleSkips are the example lines of the help texts that TestHelpExamplesRun does not
// run, each with the reason. An entry that no longer matches an example fails the test, so the
// list stays true.
var helpExampleSkips = map[string]string{
	`klt consume --iam --brokers "$B" --topic orders --from-beginning --max 5 --event > event.json`:  "needs an Amazon MSK cluster and AWS credentials (MSK IAM)",
	"klt produce --iam --topic orders < records.jsonl":                                               "needs an Amazon MSK cluster and AWS credentials (MSK IAM)",
	"klt consume --iam --topic orders --from-beginning --max 3 --event > testdata/orders-event.json": "needs an Amazon MSK cluster and AWS credentials (MSK IAM)",
	"klt local --partitions 5": "serves until interrupted; TestLocalServe runs it",
	`klt local --partitions 5 --http-sink OrdersApiUrl --work 300ms --generate '{"orderId":{{seq}},"customer":"{{key}}","total":1,"currency":"EUR"}' --keys 1000 --load ConsumerFunction=500 --load 5000 --report demo`: "minutes of load (make demo runs it); TestLocalStack runs a smaller one",
	"klt local --template stack/template.yaml --records readings.jsonl --fault kafka:3 --fault timeout:seq=4":                                                                                                           "needs a stack and records of the reader's; TestLocalEnricher runs one of another shape",
}

// helpExamples returns the example command lines of every help text, each once: the lines that
// start with "klt ", joined with the lines they continue onto (a trailing \ or |).
func helpExamples() []string {
	seen := map[string]bool{}
	var out []string
	for _, text := range helpTopics() {
		lines := strings.Split(text, "\n")
		for i := 0; i < len(lines); i++ {
			line := strings.TrimSpace(lines[i])
			if !strings.HasPrefix(line, "klt ") || !strings.HasPrefix(lines[i], "  ") || strings.Contains(line, "<command>") {
				continue // not an example, or the usage line "klt <command> [arguments]"
			}
			for (strings.HasSuffix(line, `\`) || strings.HasSuffix(line, "|")) && i+1 < len(lines) {
				i++
				line = strings.TrimSuffix(line, `\`)
				line = strings.TrimSpace(line) + " " + strings.TrimSpace(lines[i])
			}
			if !seen[line] {
				seen[line] = true
				out = append(out, line)
			}
		}
	}
	sort.Strings(out)
	return out
}

func TestHelpExamplesRun(t *testing.T) {
	// Every example of every help text runs, as written, from the root of this repository,
	// with klt (this test binary, see TestMain) on the PATH and a Kafka broker (kfake) at
	// localhost:9092, the address the examples name; KAFKA_BOOTSTRAP_SERVERS and
	// KAFKA_AUTH=plaintext stand in for the cluster of the examples that take it from the
	// environment. The examples write their files in a scratch copy of the root (its entries
	// linked), which holds the two files the examples take as given: event.json (the
	// repository's fixture event) and records.jsonl (its records). Examples that need AWS or
	// run for minutes are in helpExampleSkips.
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(dir, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	event, err := os.ReadFile(filepath.Join(root, "testdata/events/msk.json"))
	if err != nil {
		t.Fatal(err)
	}
	writeIn(t, dir, "event.json", string(event))
	r := klt(t, string(event), "event", "decode")
	if r.code != 0 {
		t.Fatalf("decoding the fixture: %s", r.stderr)
	}
	writeIn(t, dir, "records.jsonl", r.stdout)

	kafka, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.Ports(9092), kfake.SeedTopics(3, "orders", "o", "orders-copy"))
	if err != nil {
		t.Fatalf("starting kfake at localhost:9092, the address of the examples: %v", err)
	}
	defer kafka.Close()
	if r := klt(t, r.stdout, "produce", "--brokers", "localhost:9092", "--no-tls", "--topic", "orders"); r.code != 0 {
		t.Fatalf("seeding topic orders: %s", r.stderr)
	}

	used := map[string]bool{}
	for _, line := range helpExamples() {
		if _, ok := helpExampleSkips[line]; ok {
			used[line] = true
			continue
		}
		t.Run(line, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
			defer cancel()
			cmd := exec.CommandContext(ctx, "bash", "-e", "-o", "pipefail", "-c", line)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "KAFKA_BOOTSTRAP_SERVERS=localhost:9092", "KAFKA_AUTH=plaintext")
			out, err := cmd.CombinedOutput()
			if err != nil {
				t.Errorf("%s: %v\n%s", line, err, out)
			}
		})
	}
	for line := range helpExampleSkips {
		if !used[line] {
			t.Errorf("helpExampleSkips: %q is no longer an example of any help text", line)
		}
	}
}

// writeIn writes content to the file name in dir.
func writeIn(t *testing.T, dir, name, content string) {
	t.Helper()
	if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}
