package modgraph

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

const toolkit = "github.com/kafkalambda/toolkit"

// The budgets. maxInherited: modules that only the toolkit's go.mod brings into a user's
// graph and none of the user's linked packages come from (issue 28: at most 6; they are test
// dependencies of the toolkit's own packages, and the Glue and SSM clients a function that uses
// no Glue registry and no parameters does not link; the budget is full: a new one must take
// one of these out). maxAll and maxUnlinked hold the whole graph of
// the sample user module (75 modules and 36 unlinked before the modules were split); the
// unlinked modules left come mostly from the go.mod files of modules the handler does link
// (aws-lambda-go's testify, hamba/avro's golang.org/x/tools...), which no layout of ours
// removes. maxEsmtest: what a test importing esmtest adds.
const (
	maxInherited = 6
	maxAll       = 58
	maxUnlinked  = 19
	maxEsmtest   = 12
)

const handler = `package main

import (
	"github.com/aws/aws-lambda-go/lambda"

	_ "github.com/kafkalambda/toolkit/batch"
	_ "github.com/kafkalambda/toolkit/codec"
	_ "github.com/kafkalambda/toolkit/fanout"
	_ "github.com/kafkalambda/toolkit/idempotency"
	_ "github.com/kafkalambda/toolkit/idempotency/dynamodb"
	_ "github.com/kafkalambda/toolkit/kafkaevent"
	_ "github.com/kafkalambda/toolkit/producer"
)

func main() { lambda.Start(func() error { return nil }) }
`

const esmtestTest = `package main

import (
	"testing"

	_ "github.com/kafkalambda/toolkit/esm/esmtest"
)

func TestHandler(t *testing.T) {}
`

// repoRoot is the checkout's root: two levels above this package.
func repoRoot(t *testing.T) string {
	t.Helper()
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

// userModule writes a function module requiring the toolkit (and, with esm, the emulator's
// module) through replace directives to this checkout, and tidies it.
func userModule(t *testing.T, files map[string]string, esm bool) string {
	t.Helper()
	root := repoRoot(t)
	dir := t.TempDir()
	mod := "module example.com/fn\n\ngo 1.26.0\n\nreplace " + toolkit + " => " + root + "\n"
	if esm {
		mod += "\nreplace " + toolkit + "/esm => " + filepath.Join(root, "esm") + "\n"
	}
	files["go.mod"] = mod
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	goCmd(t, dir, "mod", "tidy")
	return dir
}

func goCmd(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
	out, err := cmd.Output()
	if err != nil {
		msg := ""
		if ee, ok := err.(*exec.ExitError); ok {
			msg = string(ee.Stderr)
		}
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, msg)
	}
	return string(out)
}

func lines(s string) []string {
	var out []string
	for l := range strings.SplitSeq(strings.TrimSpace(s), "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, l)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// graph is a user module's module graph, as its owner would measure it.
type graph struct {
	all       []string // go list -m all (paths)
	linked    []string // modules the main package's linked packages come from
	unlinked  []string // all minus linked
	inherited []string // unlinked modules in the graph only because the toolkit's go.mod requires them
}

func measure(t *testing.T, dir string) graph {
	t.Helper()
	var g graph
	g.all = lines(goCmd(t, dir, "list", "-m", "-f", "{{.Path}}", "all"))
	g.linked = lines(goCmd(t, dir, "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "."))
	// requiredBy: the modules whose go.mod requires each module (any version).
	requiredBy := map[string]map[string]bool{}
	for _, edge := range lines(goCmd(t, dir, "mod", "graph")) {
		from, to, ok := strings.Cut(edge, " ")
		if !ok {
			continue
		}
		from, to = strings.SplitN(from, "@", 2)[0], strings.SplitN(to, "@", 2)[0]
		if requiredBy[to] == nil {
			requiredBy[to] = map[string]bool{}
		}
		requiredBy[to][from] = true
	}
	for _, m := range g.all {
		if slices.Contains(g.linked, m) {
			continue
		}
		g.unlinked = append(g.unlinked, m)
		// Inherited from the toolkit: nothing but the toolkit (and the user's own go.mod,
		// which tidy fills from the graph) requires it.
		by := requiredBy[m]
		if by[toolkit] && len(by) == 1 || by[toolkit] && len(by) == 2 && by["example.com/fn"] {
			g.inherited = append(g.inherited, m)
		}
	}
	return g
}

func TestUserModuleGraph(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy on a scratch module (-short)")
	}
	dir := userModule(t, map[string]string{"main.go": handler}, false)
	g := measure(t, dir)
	t.Logf("go list -m all: %d modules; linked packages come from %d; %d unlinked, %d of them brought by the toolkit's go.mod: %v",
		len(g.all), len(g.linked), len(g.unlinked), len(g.inherited), g.inherited)
	t.Logf("unlinked: %v", g.unlinked)
	if len(g.inherited) > maxInherited {
		t.Errorf("the toolkit's go.mod brings %d modules the handler links nothing from (budget %d): %v", len(g.inherited), maxInherited, g.inherited)
	}
	if len(g.all) > maxAll {
		t.Errorf("go list -m all lists %d modules (budget %d)", len(g.all), maxAll)
	}
	if len(g.unlinked) > maxUnlinked {
		t.Errorf("%d modules are in the graph with no linked package (budget %d): %v", len(g.unlinked), maxUnlinked, g.unlinked)
	}
	for _, m := range g.all {
		if strings.HasPrefix(m, toolkit+"/") {
			t.Errorf("the handler's graph holds the toolkit module %s: only the library module belongs there", m)
		}
	}
}

func TestUserModuleGraphWithEsmtest(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go mod tidy on a scratch module (-short)")
	}
	plain := measure(t, userModule(t, map[string]string{"main.go": handler}, false))
	with := measure(t, userModule(t, map[string]string{"main.go": handler, "main_test.go": esmtestTest}, true))
	var added []string
	for _, m := range with.all {
		if !slices.Contains(plain.all, m) {
			added = append(added, m)
		}
	}
	t.Logf("a test importing esmtest adds %d modules to the graph (%d in all): %v", len(added), len(with.all), added)
	if !slices.Contains(added, toolkit+"/esm") {
		t.Errorf("the esm module is not among the added modules %v", added)
	}
	if len(added) > maxEsmtest {
		t.Errorf("esmtest adds %d modules (budget %d): %v", len(added), maxEsmtest, added)
	}
	if !slices.Equal(plain.linked, with.linked) {
		t.Errorf("the function links other modules once its test imports esmtest:\n%v\n%v", plain.linked, with.linked)
	}
}

// heavy are the modules no function should link unless it asks for them: DynamoDB, Kafka,
// YAML, tracing.
var heavy = regexp.MustCompile(`dynamodb|franz-go|kfake|yaml|xray|opentelemetry`)

func TestLeanPackages(t *testing.T) {
	root := repoRoot(t)
	for _, pkg := range []string{"batch", "idempotency", "kafkaevent"} {
		cmd := exec.Command("go", "list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "./"+pkg)
		cmd.Dir = root
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go list -deps ./%s: %v", pkg, err)
		}
		mods := lines(string(out))
		t.Logf("%s links packages of: %s", pkg, strings.Join(mods, " "))
		for _, m := range mods {
			if heavy.MatchString(m) {
				t.Errorf("%s links a package of %s", pkg, m)
			}
		}
	}
}
