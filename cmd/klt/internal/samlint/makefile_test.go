package samlint

import (
	"errors"
	"go/parser"
	"go/token"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestMakefileTargetPackage: the package of build-Fn's go build, read from the Makefile's
// text, or the reason it cannot be known without running make.
func TestMakefileTargetPackage(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name, mk string
		want     string // the package directory, relative to dir
		unknown  string // or a part of the unknownMakeError
		err      string // or of another error
	}{
		{name: "literal", mk: "build-Fn:\n\tGOOS=linux go build -tags lambda.norpc -o $(ARTIFACTS_DIR)/bootstrap ./cmd/fn\n", want: "cmd/fn"},
		{name: "no package", mk: "build-Fn:\n\tgo build -o \"$(ARTIFACTS_DIR)/bootstrap\"\n", want: "."},
		{name: "cd", mk: "build-Fn:\n\tcd ../x && CGO_ENABLED=0 go build -ldflags='-s -w' -o $(ARTIFACTS_DIR)/bootstrap .\n", want: "../x"},
		{name: "-C", mk: "build-Fn:\n\tgo build -C sub -o $(ARTIFACTS_DIR)/bootstrap ./fn\n", want: "sub/fn"},
		{name: "continued", mk: "build-Fn:\n\tGOOS=linux \\\n\tgo build \\\n\t  ./cmd/fn\n", want: "cmd/fn"},
		{name: "recipe after ;", mk: "build-Fn: ; go build ./a # comment\n", want: "a"},
		{name: "simple variable", mk: "P := ./a\nQ = $(P)/b\nbuild-Fn:\n\tgo build $(Q)\n", want: "a/b"},
		{name: "recursive takes the last value", mk: "Q = $(P)\nP = ./a\nbuild-Fn:\n\tgo build $(Q)\nP = ./c\n", want: "c"},
		{name: "target variable", mk: "FNS = Fn Other\n$(addprefix build-,$(FNS)): GOARCH = arm64\nbuild-Fn: PKG = ./a\nbuild-Other: PKG = ./b\n$(addprefix build-,$(FNS)):\n\tGOARCH=$(GOARCH) go build -o x $(PKG)\n", want: "a"},
		{name: "computed name", mk: "Fn_PKG = ./a\nbuild-Fn:\n\tgo build $($(subst build-,,$@)_PKG)\n", want: "a"},
		{name: "go from ?=", mk: "GO ?= go\nbuild-Fn:\n\t$(GO) build ./a\n", want: "a"},
		{name: "test line before", mk: "build-Fn:\n\t@test -n \"$(ARTIFACTS_DIR)\" || { echo \"$@: no ARTIFACTS_DIR\" >&2; exit 1; }\n\tgo build ./a 2>&1\n", want: "a"},

		{name: "shell in recipe", mk: "build-Fn:\n\t@echo $(shell touch M)\n\tgo build ./a\n", unknown: "$(shell touch M) runs a command"},
		{name: "shell in variable", mk: "P := $(shell echo ./a)\nbuild-Fn:\n\tgo build $(P)\n", unknown: "Makefile:1: $(shell echo ./a) runs a command"},
		{name: "!=", mk: "P != echo ./a\nbuild-Fn:\n\tgo build $(P)\n", unknown: "set by running a shell command"},
		{name: "environment", mk: "build-Fn:\n\tgo build $(PKG)\n", unknown: "$(PKG) is not set in the Makefile"},
		{name: "package from ?=", mk: "PKG ?= ./a\nbuild-Fn:\n\tgo build $(PKG)\n", unknown: "a variable set with ?="},
		{name: "include", mk: "include other.mk\nbuild-Fn:\n\tgo build ./a\n", unknown: "includes other.mk"},
		{name: "conditional rule", mk: "ifeq ($(X),1)\nbuild-Fn:\n\tgo build ./a\nendif\n", unknown: "inside the conditional at line 1"},
		{name: "conditional variable", mk: "ifdef X\nP = ./a\nendif\nbuild-Fn:\n\tgo build $(P)\n", unknown: "P is set inside the conditional"},
		{name: "pattern rule", mk: "build-%:\n\tgo build ./$*\n", unknown: "a pattern rule"},
		{name: "eval", mk: "$(eval $(call RULE,Fn))\n", unknown: "neither a rule nor a variable"},
		{name: "other function", mk: "build-Fn:\n\tgo build $(firstword ./a ./b)\n", unknown: "$(firstword ...)"},
		{name: "ONESHELL", mk: ".ONESHELL:\nbuild-Fn:\n\tcd a\n\tgo build .\n", unknown: ".ONESHELL"},
		{name: "SHELL", mk: "SHELL = /bin/bash\nbuild-Fn:\n\tgo build ./a\n", unknown: "sets SHELL"},
		{name: "shell variable", mk: "build-Fn:\n\tgo build $$PKG\n", unknown: "one the shell computes"},
		{name: "command substitution", mk: "build-Fn:\n\tgo build \"$$(cat pkg)\"\n", unknown: "one the shell computes"},
		{name: "cd computed", mk: "build-Fn:\n\tcd $$DIR && go build .\n", unknown: "follows a cd"},
		{name: "subshell", mk: "build-Fn:\n\t(cd a && go build .)\n", unknown: "subshell"},
		{name: "program from the shell", mk: "build-Fn:\n\t$${GO} build ./a\n", unknown: "a command the shell names"},
		{name: "automatic variable", mk: "build-Fn: ./a\n\tgo build $<\n", unknown: "automatic variable $<"},
		{name: "self reference", mk: "P = $(P)x\nbuild-Fn:\n\tgo build $(P)\n", unknown: "nested more than"},
		{name: "rule of unknown targets", mk: "$(shell ls):\n\techo\nbuild-Fn:\n\tgo build ./a\n", unknown: "its targets cannot be expanded"},

		{name: "no target", mk: "build-Other:\n\tgo build ./a\n", err: "has no build-Fn target"},
		{name: "no go build", mk: "build-Fn:\n\tcp prebuilt $(ARTIFACTS_DIR)/bootstrap\n", err: "no go build command"},
		{name: "two packages", mk: "build-Fn:\n\tgo build ./a\n\tgo build ./b\n", err: "builds two packages"},
		{name: "pattern", mk: "build-Fn:\n\tgo build ./...\n", err: "the pattern ./..."},
	} {
		t.Run(tc.name, func(t *testing.T) {
			file := filepath.Join(dir, "Makefile")
			got, err := func() (string, error) {
				recipe, err := parseMakefile(file, tc.mk).targetRecipe("build-Fn")
				if err != nil {
					return "", err
				}
				p, _, err := goBuildPackage(file, dir, recipe)
				return p, err
			}()
			var ue *unknownMakeError
			switch {
			case tc.want != "":
				if err != nil || got != filepath.Join(dir, tc.want) {
					t.Fatalf("got %q, %v; want %s", got, err, filepath.Join(dir, tc.want))
				}
			case tc.unknown != "":
				if !errors.As(err, &ue) || !strings.Contains(err.Error(), tc.unknown) || !strings.Contains(err.Error(), "without running make") {
					t.Fatalf("got %q, %v; want an unknownMakeError saying %q", got, err, tc.unknown)
				}
			default:
				if err == nil || errors.As(err, &ue) || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("got %q, %v; want an error saying %q", got, err, tc.err)
				}
			}
		})
	}
}

// FuzzMakefile: reading any Makefile text ends, bounded, without a panic, and gives either a
// recipe or an error.
func FuzzMakefile(f *testing.F) {
	for _, s := range []string{
		"build-Fn:\n\tgo build ./a\n",
		"FNS = Fn\n$(addprefix build-,$(FNS)): P = ./a\n$(addprefix build-,$(FNS)):\n\tcd x && go build -C y $(P) 2>&1\n",
		"A = $(B)$(B)\nB = $(C)$(C)\nC = $(A)\nbuild-Fn:\n\tgo build $(A)\n",
		"define X\nbuild-Fn:\nendef\nifeq (a,b)\nelse\nendif\nbuild-Fn: ; \"go\" 'build' \\\n ./a\n",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		dir := t.TempDir()
		recipe, err := parseMakefile(filepath.Join(dir, "Makefile"), text).targetRecipe("build-Fn")
		if err != nil {
			return
		}
		_, _, _ = goBuildPackage(filepath.Join(dir, "Makefile"), dir, recipe)
	})
}

// TestLintStartsNoProcess: klt lint's packages do not import os/exec (nor syscall, nor
// os.StartProcess's other doors), so nothing of a linted repository can run through them.
func TestLintStartsNoProcess(t *testing.T) {
	for _, dir := range []string{".", "../lint"} {
		files, err := filepath.Glob(filepath.Join(dir, "*.go"))
		if err != nil || len(files) == 0 {
			t.Fatalf("%s: %v, %d files", dir, err, len(files))
		}
		for _, f := range files {
			if strings.HasSuffix(f, "_test.go") {
				continue
			}
			file, err := parser.ParseFile(token.NewFileSet(), f, nil, parser.ImportsOnly)
			if err != nil {
				t.Fatal(err)
			}
			for _, imp := range file.Imports {
				if p, _ := strconv.Unquote(imp.Path.Value); p == "os/exec" || p == "syscall" || p == "golang.org/x/sys/unix" {
					t.Errorf("%s imports %s", f, p)
				}
			}
		}
	}
}
