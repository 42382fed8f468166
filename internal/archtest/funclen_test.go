package archtest

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"
)

// maxFuncLines is the longest a function may be, from its func keyword to its closing brace,
// tests included: past it a function does several things, and its reader has to hold them all
// at once. Generated files (a "Code generated ... DO NOT EDIT." line) are exempt.
const maxFuncLines = 120

// TestFunctionLength fails for every function or function literal of the module's Go files
// (outside testdata and node_modules) that is longer than maxFuncLines.
func TestFunctionLength(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	files := 0
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch name := d.Name(); {
			case path != root && (strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules"):
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") {
			return nil
		}
		files++
		return checkFuncLength(t, root, path)
	})
	if err != nil {
		t.Fatal(err)
	}
	if files < 100 {
		t.Fatalf("read %d Go files under %s: the walk did not find the module", files, root)
	}
}

func checkFuncLength(t *testing.T, root, path string) error {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, nil, parser.ParseComments|parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	if ast.IsGenerated(f) {
		return nil
	}
	rel, _ := filepath.Rel(root, path)
	ast.Inspect(f, func(n ast.Node) bool {
		var body *ast.BlockStmt
		name := "a function literal"
		switch fn := n.(type) {
		case *ast.FuncDecl:
			body, name = fn.Body, fn.Name.Name
		case *ast.FuncLit:
			body = fn.Body
		}
		if body == nil {
			return true
		}
		start, end := fset.Position(n.Pos()), fset.Position(body.End())
		if lines := end.Line - start.Line + 1; lines > maxFuncLines {
			t.Errorf("%s:%d: %s is %d lines, over %d: split it", rel, start.Line, name, lines, maxFuncLines)
		}
		return true
	})
	return nil
}
