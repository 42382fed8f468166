package samtemplate

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"go.yaml.in/yaml/v3"
)

// The account and region of every local resource, as SAM CLI's pseudo parameters and
// local-aws-sqs's queue URLs have them.
const (
	LocalAccount = "123456789012"
	LocalRegion  = "us-east-1"
)

// Resource types klt invoke makes locally.
const (
	DdbTableType    = "AWS::DynamoDB::Table"
	SamTableType    = "AWS::Serverless::SimpleTable"
	SqsQueueType    = "AWS::SQS::Queue"
	samFunctionKind = SamFunctionType
)

// InvokeTemplate is a SAM template read for klt invoke: the parts that make one function's
// configuration and the local resources it uses.
type InvokeTemplate struct {
	File      string // name for messages
	dir       string // directory of the template; CodeUri is relative to it
	root      *yaml.Node
	Resources *yaml.Node
	Params    *yaml.Node // the Parameters mapping, or nil
	Globals   *yaml.Node // Globals.Function, or nil
}

// LocalTable is a DynamoDB table of the template, as klt invoke creates it locally.
type LocalTable struct {
	LogicalID, Name string
	Keys            []keyAttr // hash key first
	StreamView      string    // StreamSpecification.StreamViewType, or ""
}

// keyAttr is one key attribute of a table: its name and type (S, N or B).
type keyAttr struct{ Name, Typ string }

// LocalQueue is an SQS queue of the template, as klt invoke creates it locally.
type LocalQueue struct {
	LogicalID, Name string
	Attrs           map[string]*yaml.Node // attribute name -> value node (intrinsics allowed)
}

// FunctionSpec is what klt invoke needs of one AWS::Serverless::Function.
type FunctionSpec struct {
	LogicalID   string
	CodeURI     string // absolute directory
	BuildMethod string // Metadata.BuildMethod, or ""
	Timeout     int    // seconds
	Memory      int    // MB
	arch        string // x86_64 or arm64, as the template says (informative: klt builds for the host)
	Env         map[string]*yaml.Node
	EnvOrder    []string
}

// ReadInvokeTemplate reads the template at path.
func ReadInvokeTemplate(path string) (*InvokeTemplate, error) {
	top, _, err := readYAMLFile(path)
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("%s: empty file; want a SAM template", path)
	}
	root := Resolve(top)
	_, res := MapGet(root, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: no Resources mapping: not a SAM template", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	t := &InvokeTemplate{File: path, dir: filepath.Dir(abs), root: root, Resources: res}
	_, t.Params = MapGet(root, "Parameters")
	_, g := MapGet(root, "Globals")
	_, t.Globals = MapGet(g, "Function")
	return t, nil
}

// ResourceType returns the Type of the resource called name, or "" when there is none.
func (t *InvokeTemplate) ResourceType(name string) string {
	_, r := MapGet(t.Resources, name)
	return scalarAt(r, "Type")
}

// FunctionNames returns the logical IDs of the template's functions, sorted.
func (t *InvokeTemplate) FunctionNames() []string {
	var names []string
	for i := 0; i+1 < len(t.Resources.Content); i += 2 {
		if scalarAt(Resolve(t.Resources.Content[i+1]), "Type") == samFunctionKind {
			names = append(names, t.Resources.Content[i].Value)
		}
	}
	sort.Strings(names)
	return names
}

// Function returns the configuration of the function name, Globals.Function merged in as SAM
// merges it (the function's own values win; Environment.Variables merge by name).
func (t *InvokeTemplate) Function(name string) (*FunctionSpec, error) {
	key, res := MapGet(t.Resources, name)
	if res == nil {
		return nil, fmt.Errorf("%s: no function %q; functions in the template: %s", t.File, name, OrNone(strings.Join(t.FunctionNames(), ", ")))
	}
	if typ := scalarAt(res, "Type"); typ != samFunctionKind {
		return nil, fmt.Errorf("%s:%d: %s is %s, not an %s; functions in the template: %s",
			t.File, key.Line, name, OrNone(typ), samFunctionKind, OrNone(strings.Join(t.FunctionNames(), ", ")))
	}
	_, props := MapGet(res, "Properties")
	f := &FunctionSpec{LogicalID: name, Timeout: 3, Memory: 128, arch: "x86_64", Env: map[string]*yaml.Node{}}
	// get returns the function's value of key, else the Globals' one.
	get := func(key string) *yaml.Node {
		if _, v := MapGet(props, key); v != nil {
			return v
		}
		_, v := MapGet(t.Globals, key)
		return v
	}
	codeURI := get("CodeUri")
	switch {
	case codeURI == nil:
		return nil, fmt.Errorf("%s:%d: function %s has no CodeUri", t.File, key.Line, name)
	case codeURI.Kind != yaml.ScalarNode || codeURI.Tag != "!!str" && codeURI.Tag != "":
		return nil, fmt.Errorf("%s:%d: function %s: CodeUri must be a local directory, a plain string", t.File, codeURI.Line, name)
	}
	f.CodeURI = filepath.Join(t.dir, filepath.FromSlash(codeURI.Value))
	_, meta := MapGet(res, "Metadata")
	f.BuildMethod = scalarAt(meta, "BuildMethod")
	for _, n := range []struct {
		key string
		dst *int
	}{{"Timeout", &f.Timeout}, {"MemorySize", &f.Memory}} {
		v := get(n.key)
		if v == nil {
			continue
		}
		i, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || i <= 0 {
			return nil, fmt.Errorf("%s:%d: function %s: %s must be a positive whole number, not %q", t.File, v.Line, name, n.key, v.Value)
		}
		*n.dst = i
	}
	if a := get("Architectures"); a != nil && a.Kind == yaml.SequenceNode && len(a.Content) == 1 {
		f.arch = Resolve(a.Content[0]).Value
	}
	for _, src := range []*yaml.Node{t.Globals, props} {
		_, env := MapGet(src, "Environment")
		_, vars := MapGet(env, "Variables")
		if vars == nil {
			continue
		}
		if vars.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: function %s: Environment.Variables must be a mapping", t.File, vars.Line, name)
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			k := vars.Content[i].Value
			if _, seen := f.Env[k]; !seen {
				f.EnvOrder = append(f.EnvOrder, k)
			}
			f.Env[k] = Resolve(vars.Content[i+1])
		}
	}
	return f, nil
}

// Tables returns the template's DynamoDB tables (AWS::DynamoDB::Table and
// AWS::Serverless::SimpleTable). A table's local name is its TableName when that is a plain
// string, else its logical ID, as sam local invoke resolves !Ref.
func (t *InvokeTemplate) Tables() ([]LocalTable, error) {
	var out []LocalTable
	for i := 0; i+1 < len(t.Resources.Content); i += 2 {
		id, res := t.Resources.Content[i].Value, Resolve(t.Resources.Content[i+1])
		typ := scalarAt(res, "Type")
		if typ != DdbTableType && typ != SamTableType {
			continue
		}
		_, props := MapGet(res, "Properties")
		tb := LocalTable{LogicalID: id, Name: id}
		if n := plainString(props, "TableName"); n != "" {
			tb.Name = n
		}
		if typ == SamTableType {
			_, pk := MapGet(props, "PrimaryKey")
			name, typ := "id", "String"
			if pk != nil {
				name, typ = base.OrDefault(scalarAt(pk, "Name"), "id"), base.OrDefault(scalarAt(pk, "Type"), "String")
			}
			short := map[string]string{"String": "S", "Number": "N", "Binary": "B"}[typ]
			if short == "" {
				return nil, fmt.Errorf("%s: table %s: PrimaryKey.Type %q is not String, Number or Binary", t.File, id, typ)
			}
			tb.Keys = []keyAttr{{name, short}}
			out = append(out, tb)
			continue
		}
		types := map[string]string{}
		_, defs := MapGet(props, "AttributeDefinitions")
		if defs != nil {
			for _, d := range defs.Content {
				types[scalarAt(Resolve(d), "AttributeName")] = scalarAt(Resolve(d), "AttributeType")
			}
		}
		_, ks := MapGet(props, "KeySchema")
		if ks == nil || ks.Kind != yaml.SequenceNode || len(ks.Content) == 0 {
			return nil, fmt.Errorf("%s: table %s has no KeySchema", t.File, id)
		}
		for _, k := range ks.Content {
			k = Resolve(k)
			name, kt := scalarAt(k, "AttributeName"), scalarAt(k, "KeyType")
			if types[name] == "" {
				return nil, fmt.Errorf("%s:%d: table %s: key %q has no AttributeDefinitions entry", t.File, k.Line, id, name)
			}
			a := keyAttr{name, types[name]}
			if kt == "HASH" {
				tb.Keys = append([]keyAttr{a}, tb.Keys...)
			} else {
				tb.Keys = append(tb.Keys, a)
			}
		}
		_, ss := MapGet(props, "StreamSpecification")
		tb.StreamView = scalarAt(ss, "StreamViewType")
		out = append(out, tb)
	}
	return out, nil
}

// Queues returns the template's SQS queues. A queue's local name is its QueueName when that
// is a plain string, else its logical ID, with ".fifo" added for a FIFO queue (SQS requires it).
func (t *InvokeTemplate) Queues() []LocalQueue {
	var out []LocalQueue
	for i := 0; i+1 < len(t.Resources.Content); i += 2 {
		id, res := t.Resources.Content[i].Value, Resolve(t.Resources.Content[i+1])
		if scalarAt(res, "Type") != SqsQueueType {
			continue
		}
		_, props := MapGet(res, "Properties")
		q := LocalQueue{LogicalID: id, Name: id, Attrs: map[string]*yaml.Node{}}
		if n := plainString(props, "QueueName"); n != "" {
			q.Name = n
		}
		if props != nil && props.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(props.Content); j += 2 {
				q.Attrs[props.Content[j].Value] = Resolve(props.Content[j+1])
			}
		}
		if f := q.Attrs["FifoQueue"]; f != nil && f.Value == "true" && !strings.HasSuffix(q.Name, ".fifo") {
			q.Name += ".fifo"
		}
		out = append(out, q)
	}
	return out
}

// plainString returns m[key] when it is a plain string scalar (not an intrinsic), else "".
func plainString(m *yaml.Node, key string) string {
	_, v := MapGet(m, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	if _, ok := intrinsic(v); ok {
		return ""
	}
	return v.Value
}
