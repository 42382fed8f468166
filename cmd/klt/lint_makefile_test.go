package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// makefileTemplate is a template whose one function is built by its Makefile (BuildMethod:
// makefile, CodeUri fn), an MSK consumer without FunctionResponseTypes.
const makefileTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Resources:
  ConsumerFunction:
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: makefile
    Properties:
      CodeUri: fn
      Runtime: provided.al2023
      Handler: bootstrap
      Architectures: [arm64]
      Events:
        Orders:
          Type: MSK
          Properties:
            Stream: arn:aws:kafka:us-east-1:123456789012:cluster/c/abc
            Topics: [orders]
            StartingPosition: TRIM_HORIZON
`

// writeMakefileFunction writes makefileTemplate with fn/Makefile holding makefile and a main
// package in fn/cmd/consumer that imports the toolkit's batch package, and returns the
// template's path.
func writeMakefileFunction(t *testing.T, dir, makefile string) string {
	t.Helper()
	for name, text := range map[string]string{
		"template.yaml":              makefileTemplate,
		"fn/Makefile":                makefile,
		"fn/cmd/consumer/main.go":    "package main\n\nimport _ \"github.com/kafkalambda/toolkit/batch\"\n\nfunc main() {}\n",
		"fn/cmd/consumer/helper.txt": "not Go\n",
	} {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return filepath.Join(dir, "template.yaml")
}

// TestLintRunsNoMake: klt lint reads a function's Makefile as text and runs nothing of it.
// GNU make runs $(shell ...) and "+" recipe lines even under -n: a Makefile whose target has
// both, and a variable set by $(shell ...), leaves no marker file after klt lint, and what
// klt cannot know without running make is a problem that says so, at the function's CodeUri.
func TestLintRunsNoMake(t *testing.T) {
	dir := t.TempDir()
	markers := []string{filepath.Join(dir, "MARKER"), filepath.Join(dir, "MARKER2"), filepath.Join(dir, "MARKER3")}
	file := writeMakefileFunction(t, dir, "PKG := $(shell touch "+markers[2]+" && echo ./cmd/consumer)\n\n"+
		"build-ConsumerFunction:\n"+
		"\t@echo $(shell touch "+markers[0]+")\n"+
		"\t+touch "+markers[1]+"\n"+
		"\tGOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -o $(ARTIFACTS_DIR)/bootstrap $(PKG)\n")
	code, out, errOut := runLintCmd(t, file)
	for _, m := range markers {
		if _, err := os.Stat(m); err == nil {
			t.Errorf("klt lint ran the Makefile: %s exists", filepath.Base(m))
		}
	}
	if code != base.ExitFail {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, base.ExitFail, out, errOut)
	}
	if !strings.Contains(out, "ConsumerFunction Properties.CodeUri:") || !strings.Contains(out, "without running make") || !strings.Contains(out, "$(shell") {
		t.Errorf("want a problem at CodeUri saying what klt cannot know without running make ($(shell ...)); stdout:\n%s\nstderr:\n%s", out, errOut)
	}
}

// TestLintReadsMakefile: the package of the target's go build, read from the Makefile's text
// (variables defined in it, target-specific ones, $(addprefix ...), a cd on the same line), is
// the code klt lint reads: here it finds the batch import and asks for
// FunctionResponseTypes.
func TestLintReadsMakefile(t *testing.T) {
	for name, mk := range map[string]string{
		"literal":         "build-ConsumerFunction:\n\tGOOS=linux GOARCH=arm64 CGO_ENABLED=0 go build -tags lambda.norpc -trimpath -o \"$(ARTIFACTS_DIR)/bootstrap\" ./cmd/consumer\n",
		"target variable": "GO ?= go\nFNS = ConsumerFunction\nbuild-ConsumerFunction: PKG = ./cmd/consumer\n$(addprefix build-,$(FNS)):\n\t@test -n \"$(ARTIFACTS_DIR)\" || { echo \"$@: no ARTIFACTS_DIR\" >&2; exit 1; }\n\tGOOS=linux CGO_ENABLED=0 $(GO) build -ldflags='-s -w' -o \"$(ARTIFACTS_DIR)/bootstrap\" $(PKG)\n",
		"cd":              ".PHONY: build-ConsumerFunction\nbuild-ConsumerFunction:\n\tcd cmd/consumer && GOOS=linux go build -o $(ARTIFACTS_DIR)/bootstrap .\n",
	} {
		t.Run(name, func(t *testing.T) {
			file := writeMakefileFunction(t, t.TempDir(), mk)
			code, out, errOut := runLintCmd(t, file)
			if code != base.ExitFail || !strings.Contains(out, "the code of ConsumerFunction returns partial-batch responses (it imports github.com/kafkalambda/toolkit/batch)") {
				t.Fatalf("exit %d; want the code's problem\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
			}
			if strings.Contains(out, "Properties.CodeUri") {
				t.Errorf("the Makefile was not read:\n%s", out)
			}
		})
	}
}
