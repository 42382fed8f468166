package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// enricherDir is the stack of another shape than the sample: its own module, Makefile and
// parameter names.
const enricherDir = "testdata/local/enricher"

// enricherOutsideWorkspace builds the enricher as its author would: it is a module of its own
// (requiring the toolkit through a replace directive), not one of this repository's go.work,
// which the go command would otherwise find above it and refuse it for.
func enricherOutsideWorkspace(t *testing.T) {
	t.Setenv("GOWORK", "off")
}

func absT(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// TestInvokeEnricherFromOutside: klt invoke, from a directory outside the toolkit's checkout,
// builds the enricher with its own Makefile (make build-EnricherFunction), builds the
// emulator of the version tools/go.mod pins (go install: there is no tools/go.mod here),
// gives BrokerList (no Default) the local Kafka's address and Timeout: !Ref FunctionTimeout its
// Default, and runs it: the two readings are produced once each, the one that is not a number
// goes to the failure queue, and the response reports no failure (the sink took it).
func TestInvokeEnricherFromOutside(t *testing.T) {
	enricherOutsideWorkspace(t)
	tpl := absT(t, filepath.Join(enricherDir, "template.yaml"))
	event := absT(t, filepath.Join(enricherDir, "events", "readings.json"))
	want, err := os.ReadFile(absT(t, filepath.Join(enricherDir, "events", "readings.response.json")))
	if err != nil {
		t.Fatal(err)
	}
	// The servers from the checkout's node_modules, named as a user outside it would
	// (standin's tests install them into an empty cache).
	t.Setenv(standin.NodeModulesEnv, absT(t, "../../node_modules"))
	t.Chdir(t.TempDir())

	start := time.Now()
	code, out, errOut := runKLT(t, "invoke", "--template", tpl, "EnricherFunction", event)
	t.Logf("klt invoke took %v", time.Since(start).Round(time.Millisecond))
	if code != base.ExitOK {
		t.Fatalf("exit %d\nstdout: %s\nstderr: %s", code, out, errOut)
	}
	var got, wantV any
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("stdout is not the response JSON: %v\n%s", err, out)
	}
	if err := json.Unmarshal(want, &wantV); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(got, wantV) {
		t.Errorf("response %s, want %s", out, want)
	}
	for _, line := range []string{
		`"msg":"reading enriched","partition":"readings-0","offset":100,"to":"readings-enriched"`,
		`"msg":"reading enriched","partition":"readings-0","offset":102,"to":"readings-enriched"`,
		`"offset":101,"attempts":1,"permanent":true,"sentToSink":true`,
		`reading \"hot\": not a number`,
		`"records":3,"processed":2,"failed":1,"reported":0`,
		"Memory Size: 128 MB",
	} {
		if !strings.Contains(errOut, line) {
			t.Errorf("logs lack %s:\n%s", line, errOut)
		}
	}
}

// TestInvokeParameterOverrides: --parameter-overrides replaces a Default (a Timeout out of
// range is refused, naming it), and a name the template has no parameter of is an error.
func TestInvokeParameterOverrides(t *testing.T) {
	enricherOutsideWorkspace(t)
	tpl := filepath.Join(enricherDir, "template.yaml")
	event := filepath.Join(enricherDir, "events", "readings.json")
	for _, tc := range []struct{ param, want string }{
		{"FunctionTimeout=1000", "function EnricherFunction: Timeout must be a whole number of seconds from 1 to 900, not !Ref FunctionTimeout (\"1000\")"},
		{"Nope=1", "--parameter-overrides: " + tpl + " has no parameter Nope (its parameters: BrokerList, InputTopic, OutputTopic, SubnetIds, SecurityGroupIds, FunctionTimeout)"},
	} {
		code, _, errOut := runKLT(t, "invoke", "--emulator", "/bin/false", "--template", tpl, "--parameter-overrides", tc.param, "EnricherFunction", event)
		if code != base.ExitFail || !strings.Contains(errOut, tc.want) {
			t.Errorf("%s: exit %d, stderr\n%s\nwant %s", tc.param, code, errOut, tc.want)
		}
	}
}

// writeFiles writes files (name -> content) under a new directory and returns it.
func writeFiles(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, text := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const mainGo = "package main\n\nfunc main() {}\n"

// TestBuildMethods: each function is built as sam build builds it. BuildMethod makefile runs
// make build-<LogicalId> with ARTIFACTS_DIR in the CodeUri directory, also when that
// directory holds a main package (go build would skip what the Makefile does); go1.x runs go
// build in the CodeUri directory, in its own module; what klt cannot build says what sam build
// would do.
func TestBuildMethods(t *testing.T) {
	ctx := context.Background()
	build := func(f *samspec.FunctionSpec) (string, error) {
		return funcrun.BuildBootstrap(ctx, f, t.TempDir(), new(bytes.Buffer))
	}

	mk := writeFiles(t, map[string]string{
		"go.mod":  "module example.com/mk\n\ngo 1.26\n",
		"main.go": mainGo,
		"Makefile": "build-MadeFunction:\n\tgo build -o $(ARTIFACTS_DIR)/bootstrap .\n" +
			"\techo $(GOARCH) > $(ARTIFACTS_DIR)/made-by-make\n",
	})
	boot, err := build(&samspec.FunctionSpec{LogicalID: "MadeFunction", CodeURI: mk, BuildMethod: "makefile"})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(filepath.Dir(boot), "made-by-make")); err != nil {
		t.Errorf("BuildMethod makefile with a main package: the make target did not run (%v)", err)
	}

	// CodeUri with a go.mod of its own: its packages resolve in that module.
	own := writeFiles(t, map[string]string{
		"go.mod":         "module example.com/own\n\ngo 1.26\n",
		"main.go":        "package main\n\nimport \"example.com/own/greet\"\n\nfunc main() { println(greet.Hello) }\n",
		"greet/greet.go": "package greet\n\nconst Hello = \"hello\"\n",
	})
	if _, err := build(&samspec.FunctionSpec{LogicalID: "OwnFunction", CodeURI: own, BuildMethod: "go1.x", Runtime: "provided.al2023"}); err != nil {
		t.Errorf("BuildMethod go1.x in its own module: %v", err)
	}

	plain := writeFiles(t, map[string]string{"go.mod": "module example.com/plain\n\ngo 1.26\n", "main.go": mainGo})
	lib := writeFiles(t, map[string]string{"lib.go": "package lib\n"})
	for _, tc := range []struct {
		f    samspec.FunctionSpec
		want string
	}{
		{samspec.FunctionSpec{LogicalID: "Js", CodeURI: plain, BuildMethod: "esbuild"},
			`Js: Metadata BuildMethod "esbuild": sam build would run its esbuild builder; klt builds Go functions only, with BuildMethod makefile (make build-Js) or go1.x (go build)`},
		{samspec.FunctionSpec{LogicalID: "Node", CodeURI: plain, Runtime: "nodejs20.x"},
			"Node: Runtime nodejs20.x: sam build would build it with that runtime's builder; klt builds and runs Go functions on an OS-only runtime"},
		{samspec.FunctionSpec{LogicalID: "Lib", CodeURI: lib},
			"Lib: CodeUri " + lib + " is not a Go main package, and the function has no Metadata BuildMethod: sam build would copy the directory as it is"},
		{samspec.FunctionSpec{LogicalID: "NoMake", CodeURI: plain, BuildMethod: "makefile"},
			"NoMake: BuildMethod makefile, but stat " + filepath.Join(plain, "Makefile") + ": no such file or directory: sam build runs `make build-NoMake`"},
	} {
		if _, err := build(&tc.f); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v\nwant %s", tc.f.LogicalID, err, tc.want)
		}
	}
}
