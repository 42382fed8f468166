package samtemplate

import (
	"fmt"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"go.yaml.in/yaml/v3"
)

// MaxYAMLNodes is the most nodes a template may have once its aliases are expanded. A 1 MB
// template written without aliases has fewer (each node takes at least a byte and most a
// dozen), and a million is as much as klt's walks should visit for one file.
const MaxYAMLNodes = 1_000_000

// LoadYAML parses the template data, named file in messages, and returns its root node; nil
// when the file holds no document, which each caller words for itself. It refuses, as
// "FILE:LINE:COL: ..." for the node at fault:
//
//   - data longer than templateLimit (callers that read a file cap it already; data from
//     elsewhere is checked here),
//   - YAML that does not parse,
//   - aliases that expand the document past maxYAMLNodes,
//   - a mapping with a key given twice.
func LoadYAML(file string, data []byte) (*yaml.Node, error) {
	if int64(len(data)) > base.TemplateLimit.Max {
		return nil, &base.TooLargeError{Name: file, Limit: base.TemplateLimit}
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The line in yaml.v3's message is not always the line of the mistake (for a flow
		// sequence left open it is the line before), so it stays the library's, not FILE:LINE.
		return nil, fmt.Errorf("%s: invalid YAML: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, nil
	}
	root := doc.Content[0]
	if err := checkExpansion(file, root); err != nil {
		return nil, err
	}
	if err := checkDuplicateKeys(file, root); err != nil {
		return nil, err
	}
	return root, nil
}

// readYAMLFile reads the template file, at most templateLimit, and loads it with loadYAML. It
// also returns the text, for the readers that look at it again (lint's filter checks).
func readYAMLFile(file string) (*yaml.Node, []byte, error) {
	data, err := base.ReadInputFile(file, nil, base.TemplateLimit)
	if err != nil {
		return nil, nil, err
	}
	root, err := LoadYAML(file, data)
	return root, data, err
}

// checkExpansion fails when the nodes of root, with every alias counted as the nodes of what
// it stands for, number more than maxYAMLNodes. It names the alias that took the count over.
// Each node's expanded size is worked out once, so the check takes time in proportion to the
// nodes in the file, not to the expansion.
func checkExpansion(file string, root *yaml.Node) error {
	sizes := make(map[*yaml.Node]int)
	// size returns n's expanded node count, at most maxYAMLNodes+1.
	var size func(n *yaml.Node) int
	size = func(n *yaml.Node) int {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return 1
			}
			return size(n.Alias)
		}
		if s, ok := sizes[n]; ok {
			return s
		}
		sizes[n] = MaxYAMLNodes + 1 // a node inside itself counts as too many
		s := 1
		for _, c := range n.Content {
			if s += size(c); s > MaxYAMLNodes {
				s = MaxYAMLNodes + 1
				break
			}
		}
		sizes[n] = s
		return s
	}
	if size(root) <= MaxYAMLNodes {
		return nil
	}
	// Find the alias at fault: going through the document in order, the one whose expansion
	// takes the running count past the limit.
	total := 0
	var blame func(n *yaml.Node) *yaml.Node
	blame = func(n *yaml.Node) *yaml.Node {
		if n.Kind == yaml.AliasNode {
			if total += size(n); total > MaxYAMLNodes {
				return n
			}
			return nil
		}
		if total++; total > MaxYAMLNodes {
			return n
		}
		for _, c := range n.Content {
			if at := blame(c); at != nil {
				return at
			}
		}
		return nil
	}
	at := blame(root)
	if at == nil { // cannot happen: the sizes said the count goes past the limit
		at = root
	}
	return fmt.Errorf("%s:%d:%d: aliases expand the template past %d nodes, klt's limit (a YAML \"billion laughs\"?)",
		file, at.Line, at.Column, MaxYAMLNodes)
}

// checkDuplicateKeys fails at the first mapping of root, in document order, that gives a key
// twice, naming the key and both places. Keys compare by their text, as CloudFormation reads
// them: 1 and "1" are the same key. Each node is visited once: the mapping an alias stands
// for is checked where its anchor is.
func checkDuplicateKeys(file string, root *yaml.Node) error {
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if n.Kind == yaml.AliasNode {
			return nil
		}
		if n.Kind == yaml.MappingNode {
			seen := make(map[string]*yaml.Node, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := Resolve(n.Content[i])
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if first, ok := seen[k.Value]; ok {
					key := n.Content[i]
					return fmt.Errorf("%s:%d:%d: mapping key %q given twice (first at line %d, column %d); CloudFormation refuses such a template",
						file, key.Line, key.Column, k.Value, first.Line, first.Column)
				}
				seen[k.Value] = n.Content[i]
			}
		}
		for _, c := range n.Content {
			if err := walk(c); err != nil {
				return err
			}
		}
		return nil
	}
	return walk(root)
}
