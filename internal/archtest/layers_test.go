package archtest

import (
	"slices"
	"strings"
	"testing"
)

// product is the layers whose packages end up in a user's function or in klt: none of them
// may depend on testing.
var product = []string{"ground", "core", "integrations", "engines", "commands"}

// coreRank orders the core packages: each imports only core packages of a lower rank
// ("batch -> idempotency, filter -> internal/completion, kafkaevent" in docs/architecture.md).
var coreRank = map[string]int{"kafkaevent": 0, "internal/completion": 0, "filter": 2, "idempotency": 2, "batch": 3}

// TestPageIsComplete checks that the page lists every package of the module, that every row
// names a package that exists and a layer the page defines, and that the layers import only
// layers the page defines.
func TestPageIsComplete(t *testing.T) {
	pl, pkgs := load(t)
	for layer, may := range pl.mayImport {
		for _, m := range may {
			if _, ok := pl.mayImport[m]; !ok {
				t.Errorf("docs/architecture.md: layer %q may import %q, which is no layer of the page", layer, m)
			}
		}
	}
	used := make([]bool, len(pl.rows))
	for _, p := range pkgs {
		found := false
		for i, r := range pl.rows {
			if r.matches(p.rel()) {
				used[i], found = true, true
			}
		}
		if !found {
			t.Errorf("package %s is not in docs/architecture.md: add a row for it to the Package table", p.rel())
		}
	}
	for i, r := range pl.rows {
		if _, ok := pl.mayImport[r.layer]; !ok {
			t.Errorf("docs/architecture.md:%d: %s is in layer %q, which the Layer table does not define", r.line, r.pattern, r.layer)
		}
		if !used[i] {
			t.Errorf("docs/architecture.md:%d: no package %s in the module: remove the row or fix it", r.line, r.pattern)
		}
	}
}

// TestPackagesLoad checks that go list could read every package: the layers of a package
// that does not build cannot be checked.
func TestPackagesLoad(t *testing.T) {
	_, pkgs := load(t)
	for _, p := range pkgs {
		if p.Error != nil {
			t.Errorf("%s: %s", p.rel(), p.Error.Err)
		}
		for _, e := range p.DepsErrors {
			t.Errorf("%s: a dependency: %s", p.rel(), e.Err)
		}
	}
}

// TestImportsFollowLayers checks every import of every package (its code, not its tests)
// against the Layer table, and the order of the core packages.
func TestImportsFollowLayers(t *testing.T) {
	pl, pkgs := load(t)
	for _, p := range pkgs {
		from, ok := pl.layerOf(p.rel())
		if !ok {
			continue // TestPageIsComplete reports it
		}
		for _, imp := range p.Imports {
			if !inModule(imp) {
				continue
			}
			to, ok := pl.layerOf(relPath(imp))
			if !ok {
				continue
			}
			if !slices.Contains(pl.mayImport[from], to) {
				t.Errorf("%s (%s) imports %s (%s); %s may import only %s", p.rel(), from, relPath(imp), to, from,
					strings.Join(pl.mayImport[from], ", "))
				continue
			}
			if from == "core" && to == "core" && coreRank[relPath(imp)] >= coreRank[p.rel()] {
				t.Errorf("%s imports %s: within core, batch -> idempotency, filter -> internal/completion, kafkaevent", p.rel(), relPath(imp))
			}
		}
	}
}

// TestNoTestingInProduct checks that no package of the product layers depends on testing:
// not a function that imports the library, and not klt (go list -deps ./cmd/klt).
func TestNoTestingInProduct(t *testing.T) {
	pl, pkgs := load(t)
	for _, p := range pkgs {
		layer, _ := pl.layerOf(p.rel())
		if !slices.Contains(product, layer) {
			continue
		}
		if slices.Contains(p.Deps, "testing") {
			t.Errorf("%s (%s) depends on testing, through %s", p.rel(), layer, strings.Join(through(pkgs, p, "testing"), ", "))
		}
	}
}

// TestCoreLinksLittle checks what core and integration packages must not link: batch no Kafka
// client (franz-go, klauspost/compress); batch, idempotency and producer no DynamoDB client;
// codec no Glue client and no batch.
func TestCoreLinksLittle(t *testing.T) {
	_, pkgs := load(t)
	rules := []struct {
		pkg      string
		prefixes []string
		why      string
	}{
		{"batch", []string{"github.com/twmb/", "github.com/klauspost/"}, "the Kafka sink lives in batch/kafkasink"},
		{"batch", []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}, "the DynamoDB store lives in idempotency/dynamodb"},
		{"idempotency", []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}, "the DynamoDB store lives in idempotency/dynamodb"},
		{"producer", []string{"github.com/aws/aws-sdk-go-v2/service/dynamodb"}, "ProduceOnce takes any idempotency.Store; the DynamoDB one lives in idempotency/dynamodb"},
		{"codec", []string{"github.com/aws/aws-sdk-go-v2/service/glue", "github.com/kafkalambda/toolkit/batch"}, "the Glue registry lives in codec/glue, and a decode error says it is permanent with a Permanent method, not batch.Permanent"},
	}
	for _, r := range rules {
		i := slices.IndexFunc(pkgs, func(p *pkg) bool { return p.rel() == r.pkg })
		if i < 0 {
			t.Errorf("no package %s", r.pkg)
			continue
		}
		var bad []string
		for _, d := range pkgs[i].Deps {
			for _, pre := range r.prefixes {
				if strings.HasPrefix(d, pre) {
					bad = append(bad, d)
				}
			}
		}
		if len(bad) > 0 {
			t.Errorf("%s links %d packages it must not (%s): %s", r.pkg, len(bad), r.why, strings.Join(bad, ", "))
		}
	}
}

// TestOneYAMLReader checks that exactly one package, internal/template, imports the YAML
// library, in its code or its tests.
func TestOneYAMLReader(t *testing.T) {
	const yaml = "go.yaml.in/yaml/v3"
	_, pkgs := load(t)
	var importers []string
	for _, p := range pkgs {
		if slices.Contains(p.Imports, yaml) || slices.Contains(p.TestImports, yaml) || slices.Contains(p.XTestImports, yaml) {
			importers = append(importers, p.rel())
		}
	}
	if !slices.Equal(importers, []string{"internal/template"}) {
		t.Errorf("packages importing %s: %q, want only internal/template", yaml, importers)
	}
}

// through returns the module packages that p imports directly and whose dependencies
// include dep (or that are dep), to say where a forbidden dependency comes from.
func through(pkgs []*pkg, p *pkg, dep string) []string {
	var out []string
	for _, imp := range p.Imports {
		if imp == dep {
			return []string{"its own import"}
		}
		i := slices.IndexFunc(pkgs, func(q *pkg) bool { return q.ImportPath == imp })
		if i >= 0 && slices.Contains(pkgs[i].Deps, dep) {
			out = append(out, pkgs[i].rel())
		}
	}
	if len(out) == 0 {
		return []string{"a dependency outside the module"}
	}
	return out
}
