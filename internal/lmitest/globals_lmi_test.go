package lmitest_test

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// processWide is every package-level variable of the library's packages (the root module's
// product code and the tracing modules; not klt, esm, the samples, nor test support), with its
// verdict: why one value for the whole process is right when many invocations run at once in
// it (Lambda Managed Instances). None holds data of one invocation: that lives in the
// invocation's context (internal/invocation, lambdalog's state, metrics' recorder) or in
// values made per call. Error sentinels (errors.New, fmt.Errorf) are left out.
var processWide = map[string]string{
	// Per execution environment by design.
	"internal/invocation.started": "cold start: the environment's first invocation, whichever of concurrent ones comes first (Powertools' meaning)",
	"internal/completion.pendingBy": "completions still being stored, by store, after Do returned; Settle waits for them (bounded) before a batch of that store, " +
		"whichever invocation left them: the store's writes are the environment's",
	"internal/completion.pendingCount": "the count behind pendingBy",
	"internal/completion.pendingMu":    "guards pendingBy",
	"lambdalog.locations":              "call site (program counter) -> \"pkg.Func:line\": fixed by the code",
	"metrics.stdoutMu":                 "one line at a time on standard output, shared by every invocation's writes",
	"metrics.linePool":                 "buffers, each used by one write at a time",
	"codec.avroReaders":                "a sync.Pool of readers, each used by one decode at a time",
	"filter.statePool":                 "a sync.Pool of flattener states, each used by one match at a time",
	"codec.avroBuildHook":              "set by tests only",
	"internal/batchsettings.Read":      "set once by batch's init: a function, no data",
	"kafkaevent.haveSIMD":              "the CPU's features",
	// Constant tables and settings, never written after init.
	"codec.avroAPI": "const", "codec.protoUnmarshal": "const", "codec.noGuard": "const", "codec.errAnswerTooLarge": "const",
	"codec.jsonSchemaOne": "const", "codec.jsonSchemaMany": "const", "codec.jsonSchemaMap": "const",
	"fanout.entryIDs": "const", "fanout.queueErrors": "const",
	"filter.operators": "const", "filter.pow10f": "const",
	"idempotency/dynamodb.DefaultAttributes": "const (exported default)", "idempotency/dynamodb.errNotMade": "const",
	"internal/jsonscan.plain": "const", "internal/jsonscan.pow10": "const",
	"internal/sqsparse.attributeFields": "const", "internal/sqsparse.attributeFolded": "const",
	"internal/sqsparse.messageFields": "const", "internal/sqsparse.messageFolded": "const", "internal/sqsparse.utf8BOM": "const",
	"kafkaevent.b64tab": "const", "kafkaevent.fieldNames": "const", "kafkaevent.memberKeySchema": "const",
	"kafkaevent.memberValueSchema": "const", "kafkaevent.utf8BOM": "const",
	"metrics.plain": "const", "metrics.printable": "const",
	"oteltrace.consumerKind": "const", "oteltrace.internalKind": "const", "oteltrace.process": "const",
	"oteltrace.producerKind": "const", "oteltrace.send": "const", "oteltrace.systemKafka": "const",
	"oteltrace.systemSQS": "const", "oteltrace.tombstone": "const",
}

// notLibrary are the directories whose code is not the library a function links: klt and its
// engines, the mapping emulator, the samples, benchmarks, test kits and test support.
var notLibrary = []string{"cmd", "esm", "samples", "bench", "tools", "scripts", "testdata", "node_modules", "testpb", "sqsgen",
	"standin", "template", "faultproxy", "faulthttp", "registrytest", "linkcheck", "archtest", "apicheck", "modgraph",
	"procgroup", "avrojson", "lmitest", "kfaketest", "standintest", "kafkaeventtest", "idempotencytest", "sinktest", "ptest"}

// TestProcessWideValues fails for a package-level variable of the library that processWide
// does not list: say there why one value for the process is right under many invocations at
// once, or move it into the invocation's context.
func TestProcessWideValues(t *testing.T) {
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	found := map[string]bool{}
	err = filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if path != root && (strings.HasPrefix(d.Name(), ".") || slices.Contains(notLibrary, d.Name())) {
				return filepath.SkipDir
			}
			return nil
		}
		if !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		rel, _ := filepath.Rel(root, filepath.Dir(path))
		return packageVars(path, filepath.ToSlash(rel), found)
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(found) < 30 {
		t.Fatalf("found %d package-level variables under %s: the walk missed the library", len(found), root)
	}
	for name := range found {
		if _, ok := processWide[name]; !ok {
			t.Errorf("%s: a package-level variable not in processWide: one value for every invocation running at once in the process; "+
				"list it with why that is right, or keep it in the invocation's context", name)
		}
	}
	for name := range processWide {
		if !found[name] {
			t.Errorf("%s: listed in processWide, but there is no such variable", name)
		}
	}
	t.Logf("%d package-level variables of the library, each with its verdict; none holds an invocation's data", len(found))
}

// packageVars adds the package-level variables of the file at path (package dir) to found,
// error sentinels and blank ones left out.
func packageVars(path, dir string, found map[string]bool) error {
	f, err := parser.ParseFile(token.NewFileSet(), path, nil, parser.SkipObjectResolution)
	if err != nil {
		return err
	}
	for _, decl := range f.Decls {
		g, ok := decl.(*ast.GenDecl)
		if !ok || g.Tok != token.VAR {
			continue
		}
		for _, s := range g.Specs {
			vs := s.(*ast.ValueSpec)
			for i, n := range vs.Names {
				if n.Name != "_" && !(i < len(vs.Values) && sentinel(vs.Values[i])) {
					found[dir+"."+n.Name] = true
				}
			}
		}
	}
	return nil
}

// sentinel reports whether e is errors.New(...) or fmt.Errorf(...).
func sentinel(e ast.Expr) bool {
	c, ok := e.(*ast.CallExpr)
	if !ok {
		return false
	}
	sel, ok := c.Fun.(*ast.SelectorExpr)
	if !ok {
		return false
	}
	x, ok := sel.X.(*ast.Ident)
	return ok && (x.Name == "errors" && sel.Sel.Name == "New" || x.Name == "fmt" && sel.Sel.Name == "Errorf")
}
