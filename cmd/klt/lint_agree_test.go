package main

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
)

// cfnLintCounts is which of cfn-lint's rules are a refusal: E0000 (the template does not
// parse), E0001 (the SAM transform refuses it) and E3xxx (the CloudFormation resource
// schemas refuse it). Warnings (W) and informational notes (I) are not, nor are E1xxx and
// E2xxx (functions and parameters, which klt lint does not claim to check).
var cfnLintCounts = regexp.MustCompile(`^E(000[01]|3[0-9]{3})$`)

// TestLintAgreesWithCfnLint holds klt lint against cfn-lint (AWS's CloudFormation linter,
// which runs the real SAM transform and then the resource schemas) on the public templates
// of testdata/lint/corpus (SOURCES.md) and on klt's own lint fixtures. It fails on a
// template cfn-lint refuses and klt lint passes, and on one cfn-lint passes and klt lint
// refuses for a reason of the SAM transform or schema (klt's pitfall checks may refuse what
// deploys: that is what they are for). It runs wherever cfn-lint is on PATH, as on CI:
// cfn-lint once on every file (its time is logged), klt lint in process.
//
//	go test ./cmd/klt -run TestLintAgreesWithCfnLint -v
//
// prints the counts (templates, refused, disagreements).
func TestLintAgreesWithCfnLint(t *testing.T) {
	if _, err := exec.LookPath("cfn-lint"); err != nil {
		fmt.Fprintln(os.Stderr, "SKIP TestLintAgreesWithCfnLint: cfn-lint is not on PATH, so klt lint is not held against it here (pip install cfn-lint; CI has it)")
		t.Skip("cfn-lint is not on PATH: klt lint not held against it")
	}
	corpus, err := filepath.Glob("testdata/lint/corpus/*.yaml")
	if err != nil || len(corpus) < 30 {
		t.Fatalf("corpus: %d templates (%v), want at least 30", len(corpus), err)
	}
	fixtures, err := filepath.Glob("testdata/lint/*.yaml")
	if err != nil || len(fixtures) == 0 {
		t.Fatalf("fixtures: %v", err)
	}
	samRules, err := filepath.Glob("testdata/lint/samrules/*.yaml")
	if err != nil || len(samRules) == 0 {
		t.Fatalf("testdata/lint/samrules: %v", err)
	}
	transformed, err := filepath.Glob("testdata/lint/transform/*.yaml")
	if err != nil || len(transformed) == 0 {
		t.Fatalf("testdata/lint/transform: %v", err)
	}
	all := append(append(append(append([]string{"../../template.yaml"}, corpus...), fixtures...), samRules...), transformed...)
	start := time.Now()
	refused := runCfnLint(t, all)
	t.Logf("cfn-lint: %d templates in one run, %v", len(all), time.Since(start).Round(time.Millisecond))
	checkSAMRulesWording(t, samRules, refused)
	checkTransformRules(t, transformed, refused)

	var rejected, disagree int
	for _, file := range corpus {
		name := filepath.Base(file)
		problems, err := samlint.LintFile(context.Background(), file)
		kltAny, kltSAM := err != nil || len(problems) > 0, err != nil
		for _, p := range problems {
			kltSAM = kltSAM || p.FromSAM()
		}
		cfn := refused[file]
		if len(cfn) > 0 {
			rejected++
		}
		switch {
		case len(cfn) > 0 && !kltAny:
			disagree++
			t.Errorf("%s: cfn-lint refuses it and klt lint passes it:\n  %s", name, strings.Join(cfn, "\n  "))
		case len(cfn) == 0 && kltSAM:
			disagree++
			t.Errorf("%s: cfn-lint passes it and klt lint refuses it for the SAM transform or schema:\n  %v\n  %v", name, err, problems)
		}
	}
	t.Logf("klt lint and cfn-lint: %d templates, %d refused by cfn-lint (the transform or the schemas), %d disagreements",
		len(corpus), rejected, disagree)

	// klt's own templates pass cfn-lint, but for the one mistake each is about, where
	// cfn-lint catches that mistake too (the rule it catches it with).
	// The schema-*.yaml fixtures (but schema-good.yaml) hold several resource-schema mistakes
	// each (TestLintResourceSchemas): cfn-lint must refuse them with schema rules (E3xxx) only.
	caught := map[string]string{
		"schema.yaml": "E0001 ", "esm-kafka-batch.yaml": "E3034 ", "kafka-batch.yaml": "E3034 ",
		"kafka-window.yaml": "E3034 ", "fifo-batch.yaml": "E3705 ", "pitfall-lmi-concurrency-range.yaml": "E3034 ",
	}
	for _, file := range append([]string{"../../template.yaml"}, fixtures...) {
		base := filepath.Base(file)
		cfn, want := refused[file], caught[base]
		if strings.HasPrefix(base, "schema-") && base != "schema-good.yaml" {
			want = "E3"
		}
		if want != "" && len(cfn) == 0 {
			t.Errorf("%s: cfn-lint passes it, but should refuse its mistake with %s", file, want)
		}
		for _, line := range cfn {
			if want == "" || !strings.HasPrefix(line, want) {
				t.Errorf("%s: cfn-lint refuses it for more than the mistake it is about: %s", file, line)
			}
		}
	}
}

// runCfnLint runs cfn-lint once on all files and returns, per file, the lines of the rules
// that count (cfnLintCounts).
func runCfnLint(t *testing.T, files []string) map[string][]string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute) // about 1 CPU-minute for ~180 templates; more on a busy machine
	defer cancel()
	var out, errOut bytes.Buffer
	cmd := exec.CommandContext(ctx, "cfn-lint", append([]string{"--format", "parseable", "--"}, files...)...)
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	// Its exit status is a bit mask: 2 errors, 4 warnings, 8 notes; 1 is a failure of its own.
	if ee, ok := errors.AsType[*exec.ExitError](err); err != nil && (!ok || ee.ExitCode()&1 != 0) {
		t.Fatalf("cfn-lint: %v\n%s", err, errOut.String())
	}
	refused := map[string][]string{}
	sc := bufio.NewScanner(&out)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for sc.Scan() {
		// FILE:LINE:COL:ENDLINE:ENDCOL:RULE:MESSAGE
		f := strings.SplitN(sc.Text(), ":", 7)
		if len(f) == 7 && cfnLintCounts.MatchString(f[5]) {
			refused[f[0]] = append(refused[f[0]], f[5]+" "+f[6])
		}
	}
	if len(refused) == 0 && out.Len() > 0 && !strings.Contains(out.String(), ":") {
		t.Fatalf("cfn-lint output not understood:\n%s", out.String())
	}
	return refused
}

// checkTransformRules: for each template of testdata/lint/transform, cfn-lint refuses it
// with the rule of transformWant alone, and passes the pass-* ones.
func checkTransformRules(t *testing.T, files []string, refused map[string][]string) {
	for _, file := range files {
		want, cfn := transformWant[filepath.Base(file)].rule, refused[file]
		if want == "" && len(cfn) > 0 {
			t.Errorf("%s: cfn-lint refuses it, klt lint passes it:\n  %s", file, strings.Join(cfn, "\n  "))
		}
		if want != "" && len(cfn) == 0 {
			t.Errorf("%s: cfn-lint passes it, want %s", file, want)
		}
		for _, line := range cfn {
			if !strings.HasPrefix(line, want+" ") {
				t.Errorf("%s: cfn-lint says\n  %s\nwant only %s", file, line, want)
			}
		}
	}
}

// checkSAMRulesWording: for each template of testdata/lint/samrules, cfn-lint gives the
// message klt lint quotes (samRulesWant), and passes the pass-* ones.
func checkSAMRulesWording(t *testing.T, files []string, refused map[string][]string) {
	for _, file := range files {
		want, cfn := samRulesWant[filepath.Base(file)], refused[file]
		switch {
		case want == "" && len(cfn) > 0:
			t.Errorf("%s: cfn-lint refuses it, klt lint passes it:\n  %s", file, strings.Join(cfn, "\n  "))
		case want != "" && (len(cfn) != 1 || !strings.HasSuffix(cfn[0], want)):
			t.Errorf("%s: cfn-lint says\n  %s\nwhere klt lint quotes\n  %s", file, strings.Join(cfn, "\n  "), want)
		}
	}
}
