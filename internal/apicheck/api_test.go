package apicheck

import (
	"bytes"
	"flag"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/printer"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the api/ files from the code")

const modulePath = "github.com/kafkalambda/toolkit"

// skipDirs are the trees with no public library package: programs, benchmarks, tools, test
// data and the module of the peer benchmark.
var skipDirs = []string{"bench", "cmd", "samples", "tools", "node_modules", "filter/quaminabench"}

// publicPackages returns the directories (relative to root, "." for the root package) of the
// public library packages.
func publicPackages(t *testing.T, root string) []string {
	t.Helper()
	var dirs []string
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		rel = filepath.ToSlash(rel)
		name := d.Name()
		if rel != "." && (strings.HasPrefix(name, ".") || strings.HasPrefix(name, "_") || name == "testdata" || name == "internal" || name == "api" || slices.Contains(skipDirs, rel)) {
			return filepath.SkipDir
		}
		p, err := build.ImportDir(path, 0)
		if err != nil || p.Name == "main" || len(p.GoFiles) == 0 {
			return nil
		}
		dirs = append(dirs, rel)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return dirs
}

// apiFile is the file that lists the API of the package in dir.
func apiFile(root, dir string) string {
	if dir == "." {
		return filepath.Join(root, "api", "toolkit.txt")
	}
	return filepath.Join(root, "api", filepath.FromSlash(dir)+".txt")
}

func TestAPI(t *testing.T) {
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]bool{}
	total, members := 0, 0
	for _, dir := range publicPackages(t, root) {
		lines := packageAPI(t, filepath.Join(root, dir), importPath(dir))
		n := countNames(lines)
		total += n
		members += len(lines) - n
		t.Logf("%s: %d names, %d fields and interface methods", importPath(dir), n, len(lines)-n)
		file := apiFile(root, dir)
		want[file] = true
		text := strings.Join(lines, "\n") + "\n"
		if *update {
			if err := os.MkdirAll(filepath.Dir(file), 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(file, []byte(text), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		old, err := os.ReadFile(file)
		if err != nil {
			t.Errorf("%s: no API file for %s (go test ./internal/apicheck -update writes it)", importPath(dir), file)
			continue
		}
		if d := diff(strings.Split(strings.TrimSuffix(string(old), "\n"), "\n"), lines); d != "" {
			t.Errorf("the API of %s is not what %s says (go test ./internal/apicheck -update rewrites it; say the change in CHANGELOG.md):\n%s", importPath(dir), file, d)
		}
	}
	t.Logf("%d exported names (and %d fields and interface methods) in %d public packages", total, members, len(want))
	// An API file of a package that is gone.
	filepath.WalkDir(filepath.Join(root, "api"), func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".txt") && !want[path] {
			if *update {
				os.Remove(path)
			} else {
				t.Errorf("%s lists the API of a package that no longer exists", path)
			}
		}
		return nil
	})
}

func importPath(dir string) string {
	if dir == "." {
		return modulePath
	}
	return modulePath + "/" + dir
}

// countNames counts the package-level exported names (constants, variables, functions, types
// and methods) of a package's lines; the rest are struct fields and interface methods.
func countNames(lines []string) int {
	n := 0
	for _, l := range lines {
		if !member.MatchString(l) {
			n++
		}
	}
	return n
}

var member = regexp.MustCompile(`, type \S+ (struct|interface), `)

// diff lists the lines only in old (-) and only in new (+).
func diff(old, new []string) string {
	var b strings.Builder
	for _, l := range old {
		if !slices.Contains(new, l) {
			fmt.Fprintf(&b, "\t- %s\n", l)
		}
	}
	for _, l := range new {
		if !slices.Contains(old, l) {
			fmt.Fprintf(&b, "\t+ %s\n", l)
		}
	}
	return b.String()
}

// packageAPI returns the sorted lines of the exported API of the package in dir: one line per
// exported constant, variable, function, type, method, struct field and interface method, with
// its type, in the files this platform builds.
func packageAPI(t *testing.T, dir, path string) []string {
	t.Helper()
	bp, err := build.ImportDir(dir, 0)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	prefix := "pkg " + path + ", "
	var lines []string
	add := func(format string, args ...any) { lines = append(lines, prefix+fmt.Sprintf(format, args...)) }
	for _, name := range bp.GoFiles {
		f, err := parser.ParseFile(fset, filepath.Join(dir, name), nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		for _, decl := range f.Decls {
			switch d := decl.(type) {
			case *ast.FuncDecl:
				if !d.Name.IsExported() {
					continue
				}
				if d.Recv == nil {
					add("func %s%s%s", d.Name.Name, typeParams(fset, d.Type.TypeParams), signature(fset, d.Type))
					continue
				}
				recv := d.Recv.List[0].Type
				if base := recvBase(recv); base == "" || !ast.IsExported(base) {
					continue
				}
				add("method (%s) %s%s", expr(fset, recv), d.Name.Name, signature(fset, d.Type))
			case *ast.GenDecl:
				genDecl(fset, d, add)
			}
		}
	}
	slices.Sort(lines)
	return slices.Compact(lines)
}

func genDecl(fset *token.FileSet, d *ast.GenDecl, add func(string, ...any)) {
	for _, spec := range d.Specs {
		switch s := spec.(type) {
		case *ast.ValueSpec:
			kind := d.Tok.String()
			for i, n := range s.Names {
				if !n.IsExported() {
					continue
				}
				line := kind + " " + n.Name
				if s.Type != nil {
					line += " " + expr(fset, s.Type)
				}
				if kind == "const" && i < len(s.Values) {
					line += " = " + expr(fset, s.Values[i])
				}
				add("%s", line)
			}
		case *ast.TypeSpec:
			if !s.Name.IsExported() {
				continue
			}
			name := s.Name.Name + typeParams(fset, s.TypeParams)
			if s.Assign.IsValid() {
				add("type %s = %s", name, expr(fset, s.Type))
				continue
			}
			switch ty := s.Type.(type) {
			case *ast.StructType:
				add("type %s struct", name)
				for _, f := range ty.Fields.List {
					if len(f.Names) == 0 {
						if e := expr(fset, f.Type); ast.IsExported(strings.TrimLeft(lastName(e), "*")) {
							add("type %s struct, embedded %s", name, e)
						}
						continue
					}
					for _, fn := range f.Names {
						if fn.IsExported() {
							add("type %s struct, %s %s", name, fn.Name, expr(fset, f.Type))
						}
					}
				}
			case *ast.InterfaceType:
				add("type %s interface", name)
				for _, m := range ty.Methods.List {
					if len(m.Names) == 0 {
						add("type %s interface, %s", name, expr(fset, m.Type))
						continue
					}
					for _, mn := range m.Names {
						if ft, ok := m.Type.(*ast.FuncType); ok && mn.IsExported() {
							add("type %s interface, %s%s", name, mn.Name, signature(fset, ft))
						} else if !ok && mn.IsExported() {
							add("type %s interface, %s %s", name, mn.Name, expr(fset, m.Type))
						}
					}
				}
			case *ast.FuncType:
				add("type %s func%s", name, signature(fset, ty))
			default:
				add("type %s %s", name, expr(fset, s.Type))
			}
		}
	}
}

func lastName(e string) string {
	if i := strings.LastIndex(e, "."); i >= 0 {
		return e[i+1:]
	}
	return e
}

func recvBase(e ast.Expr) string {
	for {
		switch x := e.(type) {
		case *ast.StarExpr:
			e = x.X
		case *ast.IndexExpr:
			e = x.X
		case *ast.IndexListExpr:
			e = x.X
		case *ast.Ident:
			return x.Name
		default:
			return ""
		}
	}
}

func expr(fset *token.FileSet, e ast.Node) string {
	var b bytes.Buffer
	printer.Fprint(&b, fset, e)
	return strings.Join(strings.Fields(b.String()), " ")
}

// signature prints a function type without parameter names: (string, ...Option) (T, error).
func signature(fset *token.FileSet, ft *ast.FuncType) string {
	s := "(" + fieldTypes(fset, ft.Params) + ")"
	if ft.Results != nil && len(ft.Results.List) > 0 {
		r := fieldTypes(fset, ft.Results)
		if len(ft.Results.List) == 1 && len(ft.Results.List[0].Names) <= 1 {
			s += " " + r
		} else {
			s += " (" + r + ")"
		}
	}
	return s
}

func typeParams(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil || len(fl.List) == 0 {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		var names []string
		for _, n := range f.Names {
			names = append(names, n.Name)
		}
		parts = append(parts, strings.Join(names, ", ")+" "+expr(fset, f.Type))
	}
	return "[" + strings.Join(parts, ", ") + "]"
}

func fieldTypes(fset *token.FileSet, fl *ast.FieldList) string {
	if fl == nil {
		return ""
	}
	var parts []string
	for _, f := range fl.List {
		n := max(len(f.Names), 1)
		for range n {
			parts = append(parts, expr(fset, f.Type))
		}
	}
	return strings.Join(parts, ", ")
}
