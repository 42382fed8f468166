package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// kltCommand returns a command that runs klt (this test binary, which acts as klt under that
// name: see TestMain) with args, in dir, with the checkout's node_modules named by
// KLT_NODE_MODULES, as a user who installed klt runs it from their own stack's directory.
func kltCommand(t *testing.T, ctx context.Context, dir string, args ...string) *exec.Cmd {
	t.Helper()
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	bin := t.TempDir()
	if err := os.Symlink(exe, filepath.Join(bin, "klt")); err != nil {
		t.Fatal(err)
	}
	nm, err := filepath.Abs("../../node_modules")
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.CommandContext(ctx, filepath.Join(bin, "klt"), args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), standin.NodeModulesEnv+"="+nm)
	cmd.WaitDelay = 10 * time.Second
	return cmd
}

// TestLocalEnricher runs klt local on a stack of another shape than the sample
// (testdata/local/enricher: its own module and Makefile, its own parameter names, Kafka ->
// EnricherFunction -> Kafka), from a directory outside the checkout, with records of the
// test's own (--records: readings, a few of them not numbers) and faults: the function's first
// three produce requests fail (kafka:3), the invocation carrying the 4th record times out and
// the process of the one carrying the 17th is killed, each as it answers (its work done, its
// answer not taken: the batch comes again, and producer.ProduceOnce must not produce it again).
// The report's account of every record must match what the test counts from its own inputs:
// each reading that is a number applied once at the output topic (the source header of the
// output names it), each that is not in the failure queue, none lost or applied twice, and
// the faults where they happened.
func TestLocalEnricher(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	work := t.TempDir() // outside the checkout: no go.mod above it
	tmpl, err := filepath.Abs("testdata/local/enricher/template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	const n = 24
	bad := map[int]bool{6: true, 13: true, 20: true}
	var lines bytes.Buffer
	for i := 1; i <= n; i++ {
		var reading any = float64(i) / 2
		if bad[i] {
			reading = "n/a"
		}
		v, _ := json.Marshal(map[string]any{"id": i, "reading": reading})
		fmt.Fprintf(&lines, `{"key":"sensor-%02d","value":%s}`+"\n", i, v)
	}
	if err := os.WriteFile(filepath.Join(work, "readings.jsonl"), lines.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	var stdout, stderr bytes.Buffer
	cmd := kltCommand(t, ctx, work, "local", "--template", tmpl, "--partitions", "3",
		"--parameter-overrides", "SubnetIds=subnet-1,subnet-2", "--parameter-overrides", "SecurityGroupIds=sg-1",
		"--records", "readings.jsonl", "--fault", "kafka:3", "--fault", "timeout:seq=4", "--fault", "crash:seq=17", "--report", "out")
	// The enricher is a module of its own, as a user's is, not one of the checkout's go.work.
	cmd.Env = append(cmd.Env, "GOWORK=off")
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("klt local: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	t.Logf("%s", stdout.String())
	rep := readReport(t, filepath.Join(work, "out", "report.json"))
	if len(rep.Pipelines) != 1 {
		t.Fatalf("pipelines: %+v\nstderr:\n%s", rep.Pipelines, stderr.String())
	}
	p := rep.Pipelines[0]
	if p.Records != n || !p.Lost.Is(0) || !p.AppliedTwice.Is(0) || !p.FailureQueue.Is(int64(len(bad))) ||
		p.Fates[report.FateApplied] != int64(n-len(bad)) || p.Fates[report.FateFailureQueue] != int64(len(bad)) {
		t.Errorf("pipeline: records %d, lost %s, applied twice %s, failure queue %s, fates %v",
			p.Records, p.Lost, p.AppliedTwice, p.FailureQueue, p.Fates)
	}
	seen := map[string]bool{}
	for _, r := range rep.Records {
		var i int
		if _, err := fmt.Sscanf(r.Key, "sensor-%d", &i); err != nil || seen[r.Key] {
			t.Errorf("record %s: key %q unknown or twice", r.Record, r.Key)
			continue
		}
		seen[r.Key] = true
		want, wantApplied := report.FateApplied, int64(1)
		if bad[i] {
			want, wantApplied = report.FateFailureQueue, 0
		}
		if r.Fate != want || !r.Applied.Is(wantApplied) || r.Attempts < 1 {
			t.Errorf("record %d (%s): fate %s, applied %s, attempts %d; want %s, applied %d", i, r.Record, r.Fate, r.Applied, r.Attempts, want, wantApplied)
		}
		if want == report.FateApplied && !strings.Contains(r.Where, "readings-enriched") {
			t.Errorf("record %d applied at %q, want the output topic readings-enriched", i, r.Where)
		}
	}
	if len(seen) != n {
		t.Errorf("the report follows %d records, want all %d", len(seen), n)
	}
	// Each refused reading is listed as read on the failure queue, saying why. A batch
	// delivered again after the timeout or the crash may send one a second time: the queue
	// then holds two messages of that record, and the listing shows both.
	failed := map[string]bool{}
	for _, m := range rep.FailedMessages {
		if m.Queue != "FailureQueue" || m.Kind != report.FailureQueueKind || !strings.Contains(m.Why, "not a number") {
			t.Errorf("failed message %+v", m)
		}
		failed[m.Record] = true
	}
	if len(failed) != len(bad) {
		t.Errorf("failed messages: of %d records, want the %d refused: %+v", len(failed), len(bad), rep.FailedMessages)
	}
	checkFaults(t, rep.Faults, map[string]string{
		"kafka:3":       "3 calls failed",
		"timeout:seq=4": "the invocation of EnricherFunction carrying it timed out",
		"crash:seq=17":  "the invocation of EnricherFunction carrying it crashed (kill -9)",
	})
}

// readReport reads a report.json.
func readReport(t *testing.T, name string) *report.Report {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	var rep report.Report
	if err := json.Unmarshal(data, &rep); err != nil {
		t.Fatal(err)
	}
	return &rep
}

// checkFaults checks that each fault's outcome starts with want[fault], and that a faulted
// record that is not poison was applied once.
func checkFaults(t *testing.T, faults []report.Fault, want map[string]string) {
	t.Helper()
	got := map[string]bool{}
	for _, f := range faults {
		got[f.Fault] = true
		w, ok := want[f.Fault]
		if !ok {
			t.Errorf("fault %s of %s not expected: %+v", f.Fault, f.Pipeline, f)
			continue
		}
		if !strings.Contains(f.Outcome, w) {
			t.Errorf("fault %s of %s: %q, want %q", f.Fault, f.Pipeline, f.Outcome, w)
		}
	}
	for f := range want {
		if !got[f] {
			t.Errorf("no outcome for fault %s", f)
		}
	}
}
