package main

import (
	"regexp"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"go.yaml.in/yaml/v3"
)

// FuzzLoadYAML feeds arbitrary text to the template loader every template reader calls. It
// must never panic or hang; every error must name the file; and what it accepts must expand to
// at most maxYAMLNodes nodes and give no mapping key twice, as counted here the slow way.
//
// The seed corpus (in code: some seeds are megabytes) has a billion laughs, an anchor inside
// itself, deep nesting, inputs just under and over the size cap, and duplicate keys through
// aliases and in JSON. Run with
//
//	go test ./cmd/klt -run '^$' -fuzz FuzzLoadYAML -fuzztime 1m
func FuzzLoadYAML(f *testing.F) {
	for _, seed := range []string{
		billionLaughs(),
		"a: &a [*a]\n",
		"a: &a {b: *a}\n",
		"a: &a [x, x]\nb: [*a, *a, *a]\n",
		"Resources: {A: 1, A: 2}\n",
		"Resources: {1: a, \"1\": b}\n",
		"k: &k key\n*k : 1\nkey: 2\n",
		`{"Resources": {"A": {}}, "Resources": {}}`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		strings.Repeat("- ", 5000) + "x\n",
		"a: " + strings.Repeat("x", int(base.TemplateLimit.Max)-3),
		"a: " + strings.Repeat("x", int(base.TemplateLimit.Max)-2),
		"{" + strings.Repeat("a,", 30000) + "}",
		"",
		"# only a comment\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		root, err := samtemplate.LoadYAML(name, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name+":") {
				t.Fatalf("error does not name the file: %v", err)
			}
			if msg := err.Error(); strings.Contains(msg, "aliases expand") || strings.Contains(msg, "given twice") {
				if !regexp.MustCompile(`^fuzz\.yaml:\d+:\d+: `).MatchString(msg) {
					t.Fatalf("error is not FILE:LINE:COL: %v", err)
				}
			}
			return
		}
		if root == nil {
			return
		}
		budget := samtemplate.MaxYAMLNodes
		if !expandWithin(root, &budget) {
			t.Fatalf("accepted a document that expands past %d nodes", samtemplate.MaxYAMLNodes)
		}
		if k := duplicateKey(root, map[*yaml.Node]bool{}); k != "" {
			t.Fatalf("accepted a mapping that gives %q twice", k)
		}
		if _, err := samtemplate.TemplateValue(root, 0); err != nil && strings.Contains(err.Error(), "panic") {
			t.Fatal(err)
		}
	})
}

// expandWithin walks n with its aliases expanded, taking one from budget per node, and
// reports whether the budget lasted: the slow count checkExpansion must agree with.
func expandWithin(n *yaml.Node, budget *int) bool {
	if n.Kind == yaml.AliasNode {
		return n.Alias == nil || expandWithin(n.Alias, budget)
	}
	if *budget--; *budget < 0 {
		return false
	}
	for _, c := range n.Content {
		if !expandWithin(c, budget) {
			return false
		}
	}
	return true
}

// duplicateKey returns a scalar key that a mapping of n gives twice, comparing every pair,
// or "".
func duplicateKey(n *yaml.Node, seen map[*yaml.Node]bool) string {
	if n.Kind == yaml.AliasNode || seen[n] {
		return ""
	}
	seen[n] = true
	if n.Kind == yaml.MappingNode {
		for i := 0; i < len(n.Content); i += 2 {
			for j := i + 2; j < len(n.Content); j += 2 {
				a, b := samtemplate.Resolve(n.Content[i]), samtemplate.Resolve(n.Content[j])
				if a.Kind == yaml.ScalarNode && b.Kind == yaml.ScalarNode && a.Value == b.Value {
					return a.Value
				}
			}
		}
	}
	for _, c := range n.Content {
		if k := duplicateKey(c, seen); k != "" {
			return k
		}
	}
	return ""
}

// TestLoadYAML pins what the loader refuses and where it says so.
func TestLoadYAML(t *testing.T) {
	for in, want := range map[string]string{
		"a: &a [*a]\n":                       "t.yaml:1:8: aliases expand the template past 1000000 nodes",
		"Resources: {A: 1, A: 2}\n":          `t.yaml:1:19: mapping key "A" given twice (first at line 1, column 13)`,
		"Resources: {1: a, \"1\": b}\n":      `t.yaml:1:19: mapping key "1" given twice`,
		"k: &k key\n*k : 1\nkey: 2\n":        `t.yaml:3:1: mapping key "key" given twice (first at line 2, column 1)`,
		"a: [x\n":                            "t.yaml: invalid YAML: ",
		"a: " + strings.Repeat("x", 1<<20-2): "t.yaml: more than 1048576 bytes (1 MB, the largest template CloudFormation takes)",
	} {
		_, err := samtemplate.LoadYAML("t.yaml", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("loadYAML(%.40q): %v; want %s...", in, err, want)
		}
	}
	// The same anchor used many times within the limit is fine, and one key in two mappings.
	ok := "a: &a [x, x, x]\nb: [*a, *a, *a]\nc: {k: 1}\nd: {k: 2}\n"
	if root, err := samtemplate.LoadYAML("t.yaml", []byte(ok)); err != nil || root == nil {
		t.Errorf("loadYAML(%q): %v, %v", ok, root, err)
	}
	if root, err := samtemplate.LoadYAML("t.yaml", []byte("# nothing\n")); err != nil || root != nil {
		t.Errorf("an empty document: %v, %v; want nil, nil", root, err)
	}
}
