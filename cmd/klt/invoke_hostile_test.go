package main

import (
	"encoding/json"
	"io/fs"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
)

// treeOf returns every file and directory under root with its size and mode: what a command
// wrote anywhere in it shows as a difference.
func treeOf(t *testing.T, root string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		size := info.Size()
		if info.IsDir() {
			size = 0
		}
		out[p] = info.Mode().String() + " " + strconv.FormatInt(size, 10)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// checkTreeSame fails t when the tree under root differs from before.
func checkTreeSame(t *testing.T, root string, before map[string]string) {
	t.Helper()
	after := treeOf(t, root)
	for _, p := range slices.Sorted(maps.Keys(after)) {
		if before[p] != after[p] {
			t.Errorf("written outside the work and report directories: %s (%s, before %q)", p, after[p], before[p])
		}
	}
	for p := range before {
		if _, ok := after[p]; !ok {
			t.Errorf("removed: %s", p)
		}
	}
}

// hostileRoot makes a directory for one attack: dir (the template's, with files), and TMPDIR
// in root, so that the work directories are in the tree too.
func hostileRoot(t *testing.T, files map[string]string) (root, dir string) {
	t.Helper()
	root = t.TempDir()
	dir = filepath.Join(root, "stack")
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(strings.ReplaceAll(text, "ROOT", root)), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	tmp := filepath.Join(root, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	return root, dir
}

// hostileFunction is a template of one function FN (a logical ID written quoted) built by
// make, with a Kafka event, and PROPS more properties.
const hostileFunction = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Code:
    Type: String
    Default: fn
Resources:
  "FN":
    Type: AWS::Serverless::Function
    Metadata:
      BuildMethod: makefile
    Properties:
      CodeUri: CODEURI
      Runtime: provided.al2023
      Handler: HANDLER
      Timeout: 10
      Environment:
        Variables:
          ENVNAME: ENVVALUE
      Events:
        Orders:
          Type: SelfManagedKafka
          Properties:
            KafkaBootstrapServers: [127.0.0.1:9092]
            Topics: [orders]
            StartingPosition: TRIM_HORIZON
`

// hostileMakefile runs a marker command from every goal make could run.
const hostileMakefile = `all:
	touch ROOT/MARKER-default-goal
%:
	touch ROOT/MARKER-pattern
`

var placeRE = regexp.MustCompile(`template\.yaml:\d+:\d+`)

// TestInvokeHostileTemplates: for each hostile template, klt invoke and klt local refuse it
// before anything runs, with the place in the template (FILE:LINE:COL), create no marker file
// and write nothing outside their work directories (the whole tree, TMPDIR included, is as
// before).
func TestInvokeHostileTemplates(t *testing.T) {
	for _, tc := range []struct {
		name    string
		fn      string            // the logical ID
		replace map[string]string // in hostileFunction
		params  string            // --parameter-overrides
		files   map[string]string // more files, beside fn/Makefile
		symlink bool              // dir/link is a symbolic link to ../outside
		want    string            // a part of the error
	}{
		{name: "logical ID with a make assignment", fn: "x:=$(shell touch ROOT/MARKER-shell)", want: "alphanumeric"},
		{name: "logical ID with =", fn: "Fn=x", want: "alphanumeric"},
		{name: "logical ID with a path", fn: "Fn/../../ESCAPED", want: "alphanumeric"},
		{name: "logical ID too long", fn: strings.Repeat("F", 256), want: "255"},
		{name: "CodeUri outside", fn: "Fn", replace: map[string]string{"CODEURI": "../outside"},
			files: map[string]string{"../outside/Makefile": hostileMakefile}, want: "outside the template's directory"},
		{name: "CodeUri absolute", fn: "Fn", replace: map[string]string{"CODEURI": "ROOT/outside"},
			files: map[string]string{"../outside/Makefile": hostileMakefile}, want: "outside the template's directory"},
		{name: "CodeUri a link to outside", fn: "Fn", replace: map[string]string{"CODEURI": "link"}, symlink: true,
			files: map[string]string{"../outside/Makefile": hostileMakefile}, want: "outside the template's directory"},
		{name: "CodeUri from a parameter", fn: "Fn", replace: map[string]string{"CODEURI": "!Ref Code"}, params: "Code=../outside",
			files: map[string]string{"../outside/Makefile": hostileMakefile}, want: "outside the template's directory"},
		{name: "Handler outside", fn: "Fn", replace: map[string]string{"HANDLER": "../../../bin/sh"}, want: "Handler"},
		{name: "environment name with =", fn: "Fn", replace: map[string]string{"ENVNAME": `"PATH=/tmp/evil:/usr/bin"`}, want: "environment variable"},
		{name: "environment value with NUL", fn: "Fn", replace: map[string]string{"ENVVALUE": `"a\0b"`}, want: "NUL"},
	} {
		for _, command := range []string{"invoke", "local"} {
			t.Run(tc.name+"/"+command, func(t *testing.T) {
				tmpl := strings.ReplaceAll(hostileFunction, "FN", tc.fn)
				r := map[string]string{"CODEURI": "fn", "HANDLER": "bootstrap", "ENVNAME": "GREETING", "ENVVALUE": "hello"}
				maps.Copy(r, tc.replace)
				for k, v := range r {
					tmpl = strings.ReplaceAll(tmpl, k, v)
				}
				files := map[string]string{"template.yaml": tmpl, "fn/Makefile": hostileMakefile, "event.json": "{}"}
				maps.Copy(files, tc.files)
				root, dir := hostileRoot(t, files)
				if tc.symlink {
					if err := os.Symlink("../outside", filepath.Join(dir, "link")); err != nil {
						t.Fatal(err)
					}
				}
				before := treeOf(t, root)
				args := []string{command, "--template", filepath.Join(dir, "template.yaml")}
				if tc.params != "" {
					args = append(args, "--parameter-overrides", tc.params)
				}
				if command == "invoke" {
					args = append(args, strings.ReplaceAll(tc.fn, "ROOT", root), filepath.Join(dir, "event.json"))
				} else {
					args = append(args, "--phase-timeout", "10s")
				}
				code, out, errOut := runKLT(t, args...)
				matches, _ := filepath.Glob(filepath.Join(root, "MARKER*"))
				if len(matches) > 0 {
					t.Errorf("klt %s ran the template's text: %v", command, matches)
				}
				checkTreeSame(t, root, before)
				if code != base.ExitFail || !placeRE.MatchString(errOut) || !strings.Contains(errOut, tc.want) {
					t.Errorf("exit %d, want %d and an error at FILE:LINE:COL saying %q\nstdout: %s\nstderr: %s", code, base.ExitFail, tc.want, out, errOut)
				}
			})
		}
	}
}

// TestInvokeHostileValuesAreData: parameter values with shell metacharacters and environment
// values with newlines reach the function as they are, as data: nothing runs them, and
// nothing is written outside the work directory.
func TestInvokeHostileValuesAreData(t *testing.T) {
	rie := emulatorT(t) // built before TMPDIR moves into the tree the test watches
	root := t.TempDir()
	tmp := filepath.Join(root, "tmp")
	if err := os.MkdirAll(tmp, 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("TMPDIR", tmp)
	marker := filepath.Join(root, "MARKER")
	stage := "$(touch " + marker + "); touch " + marker + "2 `touch " + marker + "3` && touch " + marker + "4 | x > " + marker + "5"
	before, tdBefore := treeOf(t, root), treeOf(t, "testdata/invoke")
	code, out, errOut := runKLT(t, "invoke", "--emulator", rie, "--template", "testdata/invoke/hostile-values.yaml",
		"--parameter-overrides", "Stage="+stage, "EchoFunction", writeInvokeEvent(t, `{"mode":"env"}`))
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if got["STAGE"] != stage {
		t.Errorf("STAGE = %q, want the parameter's value as it is, %q", got["STAGE"], stage)
	}
	if want := "line 1\nline 2 $(touch MARKER6) `touch MARKER7`\nSTAGE=injected"; got["GREETING"] != want {
		t.Errorf("GREETING = %q, want %q", got["GREETING"], want)
	}
	matches, _ := filepath.Glob(filepath.Join(root, "MARKER*"))
	more, _ := filepath.Glob("testdata/invoke/*/MARKER*")
	if len(matches)+len(more) > 0 {
		t.Errorf("a value ran: %v %v", matches, more)
	}
	checkTreeSame(t, root, before)
	checkTreeSame(t, "testdata/invoke", tdBefore)
}
