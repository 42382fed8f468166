package archtest

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

const module = "github.com/kafkalambda/toolkit"

// nestedModules are the modules inside the root module's tree, each listed in go.work.
var nestedModules = []string{"cmd/klt", "esm", "samples", "xraytrace", "oteltrace"}

// pkg is what `go list -json` says of one package.
type pkg struct {
	ImportPath   string
	Module       *struct{ Path string }
	Imports      []string
	TestImports  []string
	XTestImports []string
	Deps         []string
	Error        *struct{ Err string }
	DepsErrors   []*struct{ Err string }
}

// rel is p's path inside the root module's tree ("batch", "cmd/klt/internal/lint", "." for
// the root package).
func (p *pkg) rel() string { return relPath(p.ImportPath) }

func relPath(importPath string) string {
	if importPath == module {
		return "." // the root package, toolkit
	}
	return strings.TrimPrefix(importPath, module+"/")
}

// inModule reports whether importPath is a package of the toolkit: of the root module or of
// one of the modules nested in it (cmd/klt, esm, samples, xraytrace, oteltrace).
func inModule(importPath string) bool {
	return importPath == module || strings.HasPrefix(importPath, module+"/")
}

// isToolkitModule reports whether path is the root module or one nested in it.
func isToolkitModule(path string) bool { return path == module || strings.HasPrefix(path, module+"/") }

// plan is docs/architecture.md's two tables.
type plan struct {
	mayImport map[string][]string // layer -> the layers it may import
	rows      []row               // the packages table, in page order
}

type row struct {
	pattern string // "batch", "cmd/klt/internal/..."
	layer   string
	line    int
}

// matches reports whether the row covers the package at rel.
func (r row) matches(rel string) bool {
	if base, ok := strings.CutSuffix(r.pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == r.pattern
}

// layerOf returns the layer of the package at rel: the longest row that covers it.
func (pl *plan) layerOf(rel string) (string, bool) {
	best := -1
	for i, r := range pl.rows {
		if r.matches(rel) && (best < 0 || len(r.pattern) > len(pl.rows[best].pattern)) {
			best = i
		}
	}
	if best < 0 {
		return "", false
	}
	return pl.rows[best].layer, true
}

var (
	loadOnce sync.Once
	loaded   struct {
		root string
		plan *plan
		pkgs []*pkg // the module's packages, sorted by import path
		err  error
	}
)

// load reads the page and lists the packages, once per test binary.
func load(t *testing.T) (*plan, []*pkg) {
	t.Helper()
	loadOnce.Do(func() {
		loaded.root, loaded.err = moduleRoot()
		if loaded.err != nil {
			return
		}
		loaded.plan, loaded.err = readPlan(filepath.Join(loaded.root, "docs", "architecture.md"))
		if loaded.err != nil {
			return
		}
		loaded.pkgs, loaded.err = listPackages(loaded.root)
	})
	if loaded.err != nil {
		t.Fatal(loaded.err)
	}
	return loaded.plan, loaded.pkgs
}

// moduleRoot walks up from the working directory to the directory of go.mod.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("no go.mod above the working directory")
		}
		dir = parent
	}
}

// listPackages runs `go list -e -deps -json github.com/kafkalambda/toolkit/...` in root and
// returns the packages of every module of the toolkit. The go.work at the root makes the
// nested modules part of the workspace, so the pattern reaches their packages too (./...
// stops at a nested module's go.mod).
func listPackages(root string) ([]*pkg, error) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		return nil, fmt.Errorf("the go command is not on PATH: %w", err)
	}
	cmd := exec.Command(goTool, "list", "-e", "-deps", "-json", module+"/...")
	cmd.Dir = root
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return nil, fmt.Errorf("go list: %w\n%s", err, stderr.String())
	}
	var pkgs []*pkg
	dec := json.NewDecoder(bytes.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, fmt.Errorf("go list output: %w", err)
		}
		if p.Module != nil && isToolkitModule(p.Module.Path) && inModule(p.ImportPath) {
			pkgs = append(pkgs, p)
		}
	}
	if len(pkgs) == 0 {
		return nil, errors.New("go list found no package of " + module)
	}
	for _, nested := range nestedModules {
		if !slices.ContainsFunc(pkgs, func(p *pkg) bool { return p.Module.Path == module+"/"+nested }) {
			return nil, fmt.Errorf("go list found no package of the module %s/%s: is it in go.work?", module, nested)
		}
	}
	slices.SortFunc(pkgs, func(a, b *pkg) int { return strings.Compare(a.ImportPath, b.ImportPath) })
	return pkgs, nil
}

// readPlan reads the layers table (first cell "Layer") and the packages table (first cell
// "Package") of the page at path.
func readPlan(path string) (*plan, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	pl := &plan{mayImport: map[string][]string{}}
	var table string // the first header cell of the table being read
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if !strings.HasPrefix(line, "|") {
			table = ""
			continue
		}
		cells := strings.Split(strings.Trim(line, "|"), "|")
		for i := range cells {
			cells[i] = strings.TrimSpace(cells[i])
		}
		switch {
		case table == "" && len(cells) > 0:
			table = cells[0] // the header row
		case strings.HasPrefix(cells[0], "---"):
		case table == "Layer" && len(cells) == 3:
			pl.mayImport[cells[0]] = splitList(cells[2])
		case table == "Package" && len(cells) == 3:
			pl.rows = append(pl.rows, row{pattern: strings.Trim(cells[0], "`"), layer: cells[1], line: n})
		case table == "Layer" || table == "Package":
			return nil, fmt.Errorf("%s:%d: a row of the %s table has %d cells, want 3", path, n, table, len(cells))
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	if len(pl.mayImport) == 0 || len(pl.rows) == 0 {
		return nil, fmt.Errorf("%s: no Layer table or no Package table", path)
	}
	return pl, nil
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
