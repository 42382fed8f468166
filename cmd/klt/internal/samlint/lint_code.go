package samlint

import (
	"errors"
	"fmt"
	"go/ast"
	"go/build"
	"go/parser"
	"go/token"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/internal/template"
)

// The toolkit's packages whose use the checks look for.
const (
	toolkitModule   = "github.com/kafkalambda/toolkit"
	pkgBatch        = toolkitModule + "/batch"
	pkgFanout       = toolkitModule + "/fanout"
	pkgIdemDynamoDB = toolkitModule + "/idempotency/dynamodb" // the store that keeps idempotency records in DynamoDB
	pkgProducer     = toolkitModule + "/producer"
	pkgKafkaSink    = toolkitModule + "/batch/kafkasink"
	pkgSQSSink      = toolkitModule + "/batch/sqssink"
	pkgLambdaEvents = "github.com/aws/aws-lambda-go/events"
)

// codeInfo is what klt lint learns from a function's Go code: its main package and the
// packages of its own module that it imports, read with go/parser (nothing is built).
type codeInfo struct {
	dir          string
	partialBatch string          // why the code returns partial-batch responses; "" when it does not
	sendsSQS     []string        // the calls that send to SQS (sqssink.New, fanout.NewDispatcher)
	idempotency  bool            // imports the idempotency package, or calls batch.WithIdempotency
	withIdem     bool            // calls batch.WithIdempotency
	producer     bool            // imports the producer package
	producerIAM  bool            // calls producer.WithIAM
	literals     map[string]bool // every string literal of the code, to see which variables it reads
}

// isCodeArchive reports whether the CodeUri file name is one SAM uploads as the code.
func isCodeArchive(name string) bool {
	ext := strings.ToLower(filepath.Ext(name))
	return ext == ".zip" || ext == ".jar"
}

// functionCode finds and reads the Go code of function fn. It returns nil and no error for a
// function without Go code on disk (another runtime, an image, code in S3).
func (l *linter) functionCode(fn string) (*codeInfo, error) {
	uri := l.fnProp(fn, "CodeUri")
	if uri == nil {
		return nil, nil // InlineCode or ImageUri: nothing to read
	}
	if !uri.IsString() {
		return nil, nil // {Bucket, Key}: the code is in S3
	}
	rel := uri.Text
	dir := filepath.Join(l.dir, rel)
	if strings.HasPrefix(rel, "s3://") {
		return nil, nil // the code is in S3
	}
	st, err := os.Stat(dir)
	switch {
	case err != nil:
		return nil, fmt.Errorf("CodeUri %q is not a directory or a .zip or .jar file beside the template: %w", rel, err)
	case !st.IsDir() && isCodeArchive(rel):
		return nil, nil // SAM uploads a built zip or jar as it is: no Go source to read
	case !st.IsDir():
		return nil, fmt.Errorf("CodeUri %q is a file, but SAM takes a directory, a .zip or .jar file, or an s3:// location", rel)
	}
	ctx := l.buildContext(fn)
	if isMainPackage(ctx, dir) {
		return readCode(ctx, dir)
	}
	if l.t.Resource(fn).Metadata.Get("BuildMethod").String() != "makefile" {
		return nil, nil // not Go, or not built from here
	}
	pkg, err := makeTargetPackage(ctx, dir, "build-"+fn)
	if err != nil {
		return nil, err
	}
	return readCode(ctx, pkg)
}

// buildContext returns the build context sam build uses for fn: linux, the function's
// architecture, no cgo, tag lambda.norpc.
func (l *linter) buildContext(fn string) *build.Context {
	ctx := build.Default
	ctx.GOOS = "linux"
	ctx.GOARCH = "amd64"
	if a := l.fnProp(fn, "Architectures"); a != nil && a.Kind == template.Sequence && len(a.Items) == 1 && a.Items[0].String() == "arm64" {
		ctx.GOARCH = "arm64"
	}
	ctx.CgoEnabled = false
	ctx.BuildTags = []string{"lambda.norpc"}
	return &ctx
}

// isMainPackage reports whether dir holds a Go main package.
func isMainPackage(ctx *build.Context, dir string) bool {
	p, err := ctx.ImportDir(dir, 0)
	return err == nil && p.Name == "main"
}

// makeTargetPackage finds the main package that "make TARGET" builds in dir by reading dir's
// Makefile as text (makefile.go): the package of the target's go build. Nothing of the
// Makefile runs: what klt cannot know without running make is an error that says so.
func makeTargetPackage(bctx *build.Context, dir, target string) (string, error) {
	file := filepath.Join(dir, "Makefile")
	data, err := input.ReadFileCapped(file, input.SourceLimit)
	if err != nil {
		return "", fmt.Errorf("the code is built by \"make %s\" (BuildMethod: makefile), from the Makefile sam build reads: %w", target, err)
	}
	recipe, err := parseMakefile(file, string(data)).targetRecipe(target)
	if err != nil {
		return "", fmt.Errorf("the code is built by \"make %s\" (BuildMethod: makefile): %w; write the target's go build and its package in the Makefile's own text", target, err)
	}
	pkg, line, err := goBuildPackage(file, dir, recipe)
	switch {
	case errors.Is(err, errNoGoBuild):
		return "", fmt.Errorf("the recipe of %s in %s has no go build command, so klt cannot tell which package is the function's code", target, file)
	case err != nil:
		return "", fmt.Errorf("the code is built by \"make %s\" (BuildMethod: makefile): %w", target, err)
	}
	if st, err := os.Stat(pkg); err != nil || !st.IsDir() || !isMainPackage(bctx, pkg) {
		return "", fmt.Errorf("%s:%d: the go build of %s builds %s, which is not a directory with a Go main package", file, line, target, pkg)
	}
	return pkg, nil
}

// readCode reads the main package in dir and the packages of its own module it imports.
func readCode(bctx *build.Context, dir string) (*codeInfo, error) {
	c := &codeInfo{dir: dir, literals: map[string]bool{}}
	modRoot, modPath, err := findModule(dir)
	if err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var visit func(dir string) error
	visit = func(dir string) error {
		if seen[dir] {
			return nil
		}
		seen[dir] = true
		p, err := bctx.ImportDir(dir, 0)
		if err != nil {
			return fmt.Errorf("reading the Go code in %s: %w", dir, err)
		}
		for _, name := range p.GoFiles {
			if err := c.readFile(filepath.Join(dir, name)); err != nil {
				return err
			}
		}
		// Follow the packages of the function's own module (not the toolkit's, whose use is
		// what the checks look for).
		for _, imp := range p.Imports {
			if modPath == "" || modPath == toolkitModule || !strings.HasPrefix(imp, modPath+"/") {
				continue
			}
			if err := visit(filepath.Join(modRoot, strings.TrimPrefix(imp, modPath+"/"))); err != nil {
				return err
			}
		}
		return nil
	}
	if err := visit(dir); err != nil {
		return nil, err
	}
	return c, nil
}

// findModule returns the root directory and module path of the module holding dir, or "" when
// there is none. A go.mod that cannot be read is an error.
func findModule(dir string) (root, path string, err error) {
	d, err := filepath.Abs(dir)
	if err != nil {
		return "", "", err
	}
	for {
		data, err := input.ReadFileCapped(filepath.Join(d, "go.mod"), input.SourceLimit)
		if err != nil && !errors.Is(err, fs.ErrNotExist) {
			return "", "", err
		}
		if err == nil {
			for _, line := range strings.Split(string(data), "\n") {
				if f := strings.Fields(line); len(f) >= 2 && f[0] == "module" {
					p, err := strconv.Unquote(f[1])
					if err != nil {
						p = f[1]
					}
					return d, p, nil
				}
			}
			return "", "", nil
		}
		up := filepath.Dir(d)
		if up == d {
			return "", "", nil
		}
		d = up
	}
}

// readFile reads one Go file into c.
func (c *codeInfo) readFile(path string) error {
	src, err := input.ReadFileCapped(path, input.SourceLimit)
	if err != nil {
		return fmt.Errorf("reading the Go code: %w", err)
	}
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, path, src, parser.SkipObjectResolution)
	if err != nil {
		return fmt.Errorf("reading the Go code: %w", err)
	}
	names := map[string]string{} // local name -> import path
	for _, imp := range f.Imports {
		p, err := strconv.Unquote(imp.Path.Value)
		if err != nil {
			continue
		}
		name := p[strings.LastIndex(p, "/")+1:]
		if imp.Name != nil {
			name = imp.Name.Name
		}
		names[name] = p
		switch p {
		case pkgBatch, pkgFanout:
			if c.partialBatch == "" {
				c.partialBatch = "it imports " + p
			}
		case pkgIdemDynamoDB:
			c.idempotency = true
		case pkgProducer:
			c.producer = true
		case pkgKafkaSink: // a failure sink of batch that produces to Kafka
			c.producer = true
			if c.partialBatch == "" {
				c.partialBatch = "it imports " + p
			}
		}
	}
	ast.Inspect(f, func(n ast.Node) bool {
		switch x := n.(type) {
		case *ast.BasicLit:
			if x.Kind == token.STRING {
				if s, err := strconv.Unquote(x.Value); err == nil {
					c.literals[s] = true
				}
			}
		case *ast.SelectorExpr:
			id, ok := x.X.(*ast.Ident)
			if !ok {
				return true
			}
			switch call := names[id.Name] + "." + x.Sel.Name; call {
			case pkgSQSSink + ".New", pkgFanout + ".NewDispatcher":
				short := call[strings.LastIndex(call, "/")+1:]
				if !slices.Contains(c.sendsSQS, short) {
					c.sendsSQS = append(c.sendsSQS, short)
				}
			case pkgBatch + ".WithIdempotency": // its records go to idempotency/dynamodb's table
				c.idempotency, c.withIdem = true, true
			case pkgProducer + ".WithIAM":
				c.producerIAM = true
			case pkgProducer + ".ProduceOnce": // keeps its records in DynamoDB
				c.idempotency = true
			case pkgLambdaEvents + ".SQSEventResponse", pkgLambdaEvents + ".DynamoDBEventResponse", pkgLambdaEvents + ".KinesisEventResponse":
				if c.partialBatch == "" {
					c.partialBatch = "it uses aws-lambda-go's events." + x.Sel.Name
				}
			}
		}
		return true
	})
	return nil
}
