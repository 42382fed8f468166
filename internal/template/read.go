package template

import (
	"fmt"
	"io"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The bounds of a template Read accepts. Each is stated with its reason; a template over one
// is refused with an error naming the place, never read in part.
const (
	// MaxSize is the most bytes of template text: 1 MB, the largest template body
	// CloudFormation takes (from S3).
	MaxSize = 1 << 20
	// MaxNodes is the most nodes a template may have once its YAML aliases are expanded. A
	// 1 MB template written without aliases has fewer (each node takes at least a byte), and
	// a million is as much as any walk of the model should visit for one file. A "billion
	// laughs" of 754 bytes (ten aliases to the previous level, nine levels deep) is refused in
	// microseconds.
	MaxNodes = 1_000_000
	// MaxText is the most bytes of scalar text once aliases are expanded: 32 times what a
	// template without aliases can hold, so that turning the model into JSON (a schema check,
	// a filter pattern) stays small even when a long string is aliased many times.
	MaxText = 32 << 20
	// MaxDepth is the deepest nesting of mappings and lists, aliases expanded. No template
	// CloudFormation deploys comes near it; recursive walks of the model rely on it.
	MaxDepth = 200
)

// ReadFile reads the template file at path: at most MaxSize bytes of it, then as Read.
func ReadFile(path string) (*Template, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, MaxSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return Read(path, data)
}

// Read reads a SAM or CloudFormation template, YAML or JSON; file names it in messages and in
// every Pos. It refuses, as "FILE:LINE:COL: ..." for the node at fault where there is one:
//
//   - data longer than MaxSize (ErrTooLarge),
//   - text that does not parse as YAML, or holds no document,
//   - aliases that expand the document past MaxNodes nodes, MaxText bytes of text or MaxDepth
//     levels (ErrTooLarge), an anchor inside itself among them,
//   - a mapping that gives a key twice (YAML leaves duplicates to the reader and yaml.v3 keeps
//     the last; CloudFormation and cfn-lint refuse the template), keys compared by their text,
//     so 1 and "1" are the same key,
//   - a mapping key that is not a plain scalar,
//   - a tag that is neither YAML's own (!!str, !!int...) nor one of CloudFormation's short
//     forms (!Ref, !GetAtt, !Sub...), and !!set, !!omap and !!pairs, which have no JSON form,
//   - a document that is not a mapping, or has no Resources mapping.
func Read(file string, data []byte) (*Template, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: more than %d bytes (1 MB, the largest template CloudFormation takes): %w", file, MaxSize, ErrTooLarge)
	}
	root, err := readNode(file, data)
	if err == errEmpty {
		return nil, fmt.Errorf("%s: empty file; want a SAM or CloudFormation template", file)
	}
	if err != nil {
		return nil, err
	}
	return newTemplate(file, root)
}

// ReadNode reads YAML or JSON data that is not a whole template (a FilterCriteria file, a
// fragment), with the bounds and refusals of Read but the last: any document is accepted. An
// empty document is a null scalar at 1:1.
func ReadNode(file string, data []byte) (*Node, error) {
	if len(data) > MaxSize {
		return nil, fmt.Errorf("%s: more than %d bytes (1 MB, the largest template CloudFormation takes): %w", file, MaxSize, ErrTooLarge)
	}
	n, err := readNode(file, data)
	if err == errEmpty {
		return &Node{Kind: Scalar, Tag: TagNull, Pos: Pos{file, 1, 1}}, nil
	}
	return n, err
}

// errEmpty is readNode's error for data without a document; Read and ReadNode word it.
var errEmpty = fmt.Errorf("empty")

// readNode parses data and checks and converts its document.
func readNode(file string, data []byte) (*Node, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		// The line in yaml.v3's message is not always the line of the mistake (for a flow
		// sequence left open it is the line before), so it stays the library's, not FILE:LINE.
		return nil, fmt.Errorf("%s: invalid YAML: %s", file, strings.TrimPrefix(err.Error(), "yaml: "))
	}
	if doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return nil, errEmpty
	}
	top := doc.Content[0]
	if err := checkExpansion(file, top); err != nil {
		return nil, err
	}
	if err := checkDuplicateKeys(file, top); err != nil {
		return nil, err
	}
	c := converter{file: file, done: map[*yaml.Node]*Node{}}
	return c.node(top)
}

// weight is what a node stands for once its aliases are expanded.
type weight struct {
	nodes, text, depth int
}

// over reports whether w is past one of the bounds.
func (w weight) over() bool { return w.nodes > MaxNodes || w.text > MaxText || w.depth > MaxDepth }

// checkExpansion fails when root, with every alias counted as what it stands for, has more
// than MaxNodes nodes or MaxText bytes of scalar text, or nests deeper than MaxDepth. It names
// the alias or node that took the count over. Each node's weight is worked out once, so the
// check takes time in proportion to the nodes in the file, not to the expansion.
func checkExpansion(file string, root *yaml.Node) error {
	weights := make(map[*yaml.Node]weight)
	tooMuch := weight{MaxNodes + 1, MaxText + 1, MaxDepth + 1}
	var weigh func(n *yaml.Node) weight
	weigh = func(n *yaml.Node) weight {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return weight{1, 0, 0}
			}
			return weigh(n.Alias)
		}
		if w, ok := weights[n]; ok {
			return w
		}
		weights[n] = tooMuch // a node inside itself counts as too much
		w := weight{1, len(n.Value), 0}
		for _, c := range n.Content {
			cw := weigh(c)
			w.nodes += cw.nodes
			w.text += cw.text
			w.depth = max(w.depth, cw.depth+1)
			if w.over() {
				w = tooMuch
				break
			}
		}
		weights[n] = w
		return w
	}
	if !weigh(root).over() {
		return nil
	}
	at, why := blame(root, weigh)
	return &Error{Pos: Pos{file, at.Line, at.Column}, Msg: why, Err: ErrTooLarge}
}

// blame finds the node at fault in a document that weigh says is too large: going through it
// in order, the alias whose expansion takes the running count past a bound (or refers to an
// anchor it is inside of), or the first node nested past MaxDepth.
func blame(root *yaml.Node, weigh func(*yaml.Node) weight) (*yaml.Node, string) {
	var nodes, text int
	inside := map[*yaml.Node]bool{} // the nodes on the way down to the current one
	var walk func(n *yaml.Node, depth int) (*yaml.Node, string)
	walk = func(n *yaml.Node, depth int) (*yaml.Node, string) {
		if n.Kind == yaml.AliasNode {
			if n.Alias == nil {
				return nil, ""
			}
			w := weigh(n.Alias)
			nodes, text = nodes+w.nodes, text+w.text
			switch {
			case inside[n.Alias]:
				return n, "an alias inside its own anchor stands for an endless document"
			case nodes > MaxNodes:
				return n, fmt.Sprintf("aliases expand the template past %d nodes, klt's limit (a YAML \"billion laughs\"?)", MaxNodes)
			case text > MaxText:
				return n, fmt.Sprintf("aliases expand the template past %d bytes of text", MaxText)
			case depth+w.depth > MaxDepth:
				return n, fmt.Sprintf("aliases nest the template more than %d deep", MaxDepth)
			}
			return nil, ""
		}
		if depth > MaxDepth {
			return n, fmt.Sprintf("nested more than %d deep", MaxDepth)
		}
		nodes, text = nodes+1, text+len(n.Value)
		inside[n] = true
		defer delete(inside, n)
		for _, c := range n.Content {
			if at, why := walk(c, depth+1); at != nil {
				return at, why
			}
		}
		return nil, ""
	}
	if at, why := walk(root, 0); at != nil {
		return at, why
	}
	return root, "the template is too large" // cannot happen: weigh said it is
}

// checkDuplicateKeys fails at the first mapping of root, in document order, that gives a key
// twice, naming the key and both places. Each node is visited once: the mapping an alias
// stands for is checked where its anchor is.
func checkDuplicateKeys(file string, root *yaml.Node) error {
	var walk func(n *yaml.Node) error
	walk = func(n *yaml.Node) error {
		if n.Kind == yaml.AliasNode {
			return nil
		}
		if n.Kind == yaml.MappingNode {
			seen := make(map[string]*yaml.Node, len(n.Content)/2)
			for i := 0; i+1 < len(n.Content); i += 2 {
				k := resolveAlias(n.Content[i])
				if k.Kind != yaml.ScalarNode {
					continue
				}
				if first, ok := seen[k.Value]; ok {
					key := n.Content[i]
					return errorAt(Pos{file, key.Line, key.Column}, fmt.Sprintf("mapping key %q given twice (first at line %d, column %d); CloudFormation refuses such a template",
						k.Value, first.Line, first.Column))
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

// resolveAlias follows YAML aliases (*name) to the node they stand for.
func resolveAlias(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// shortForms maps the short tags of CloudFormation's intrinsic functions to their long names.
// A local tag not listed here is refused: the template would not deploy either.
var shortForms = map[string]string{
	"!Ref": "Ref", "!Condition": "Condition",
	"!Base64": "Fn::Base64", "!Cidr": "Fn::Cidr", "!FindInMap": "Fn::FindInMap",
	"!GetAtt": "Fn::GetAtt", "!GetAZs": "Fn::GetAZs", "!ImportValue": "Fn::ImportValue",
	"!Join": "Fn::Join", "!Select": "Fn::Select", "!Split": "Fn::Split", "!Sub": "Fn::Sub",
	"!Transform": "Fn::Transform", "!And": "Fn::And", "!Equals": "Fn::Equals",
	"!If": "Fn::If", "!Not": "Fn::Not", "!Or": "Fn::Or", "!ToJsonString": "Fn::ToJsonString",
	"!Length": "Fn::Length", "!ForEach": "Fn::ForEach",
}

// converter turns a checked yaml.Node tree into Nodes, once per yaml node, so that aliases
// share the Node of their anchor.
type converter struct {
	file string
	done map[*yaml.Node]*Node
}

func (c *converter) pos(n *yaml.Node) Pos { return Pos{c.file, n.Line, n.Column} }

// node converts n (checked: no cycle, bounded depth).
func (c *converter) node(n *yaml.Node) (*Node, error) {
	n = resolveAlias(n)
	if n == nil { // an alias to an unknown anchor, which yaml.v3 refuses already
		return nil, fmt.Errorf("%s: invalid YAML: an alias without its anchor", c.file)
	}
	if out, ok := c.done[n]; ok {
		return out, nil
	}
	var out *Node
	var err error
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		out, err = c.shortForm(n)
	} else {
		out, err = c.plain(n, n.ShortTag())
	}
	if err != nil {
		return nil, err
	}
	c.done[n] = out
	return out, nil
}

// plain converts a node without a local tag; tag is its resolved tag.
func (c *converter) plain(n *yaml.Node, tag string) (*Node, error) {
	out := &Node{Tag: tag, Pos: c.pos(n)}
	switch n.Kind {
	case yaml.ScalarNode:
		switch tag {
		case TagStr, TagInt, TagFloat, TagBool, TagNull, TagTimestamp, TagBinary:
		case "!!merge": // a << key: kept as a string; Plain and AppendJSON refuse it
			out.Tag = TagStr
		default:
			return nil, errorAt(out.Pos, "YAML tag "+tag+" is not part of CloudFormation templates")
		}
		out.Kind, out.Text = Scalar, n.Value
	case yaml.SequenceNode:
		if tag != TagSeq {
			return nil, errorAt(out.Pos, "YAML tag "+tag+" has no JSON form and is not part of CloudFormation templates")
		}
		out.Kind, out.Items = Sequence, make([]*Node, len(n.Content))
		for i, item := range n.Content {
			var err error
			if out.Items[i], err = c.node(item); err != nil {
				return nil, err
			}
		}
	case yaml.MappingNode:
		if tag != TagMap {
			return nil, errorAt(out.Pos, "YAML tag "+tag+" has no JSON form and is not part of CloudFormation templates")
		}
		out.Kind, out.Pairs = Mapping, make([]Pair, 0, len(n.Content)/2)
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := resolveAlias(n.Content[i])
			if k.Kind != yaml.ScalarNode || strings.HasPrefix(k.Tag, "!") && !strings.HasPrefix(k.Tag, "!!") {
				return nil, errorAt(c.pos(n.Content[i]), "a mapping key must be a plain name")
			}
			v, err := c.node(n.Content[i+1])
			if err != nil {
				return nil, err
			}
			out.Pairs = append(out.Pairs, Pair{Key: k.Value, KeyPos: c.pos(n.Content[i]), Value: v})
		}
	default:
		return nil, errorAt(out.Pos, "unexpected YAML")
	}
	return out, nil
}

// shortForm converts a node with a CloudFormation short tag into the long form: a mapping of
// one pair, the function's name and its argument (the node without its tag). !GetAtt A.B's
// argument becomes [A, B], as CloudFormation reads it. The mapping keeps the tag (!Sub), for
// messages that name the function as written.
func (c *converter) shortForm(n *yaml.Node) (*Node, error) {
	name, ok := shortForms[n.Tag]
	pos := c.pos(n)
	if !ok {
		return nil, errorAt(pos, "unknown tag "+n.Tag+"; not one of the short forms of CloudFormation (!Ref, !GetAtt, !Sub, !If and the others)")
	}
	if (name == "Ref" || name == "Condition") && n.Kind != yaml.ScalarNode {
		return nil, errorAt(pos, n.Tag+" takes a name")
	}
	bare := *n
	bare.Tag = map[yaml.Kind]string{yaml.ScalarNode: TagStr, yaml.SequenceNode: TagSeq, yaml.MappingNode: TagMap}[n.Kind]
	arg, err := c.plain(&bare, bare.Tag)
	if err != nil {
		return nil, err
	}
	if name == "Fn::GetAtt" && arg.Kind == Scalar {
		res, attr, _ := strings.Cut(arg.Text, ".")
		arg = &Node{Kind: Sequence, Tag: TagSeq, Pos: pos, Items: []*Node{
			{Kind: Scalar, Tag: TagStr, Text: res, Pos: pos},
			{Kind: Scalar, Tag: TagStr, Text: attr, Pos: pos},
		}}
	}
	return &Node{Kind: Mapping, Tag: n.Tag, Pos: pos, Pairs: []Pair{{Key: name, KeyPos: pos, Value: arg}}}, nil
}
