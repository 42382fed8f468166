package main

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// The account and region of every local resource, as SAM CLI's pseudo parameters and
// local-aws-sqs's queue URLs have them.
const (
	localAccount = "123456789012"
	localRegion  = "us-east-1"
)

// Resource types klt invoke makes locally.
const (
	ddbTableType    = "AWS::DynamoDB::Table"
	samTableType    = "AWS::Serverless::SimpleTable"
	sqsQueueType    = "AWS::SQS::Queue"
	samFunctionKind = samFunctionType
)

// invokeTemplate is a SAM template read for klt invoke: the parts that make one function's
// configuration and the local resources it uses.
type invokeTemplate struct {
	file      string // name for messages
	dir       string // directory of the template; CodeUri is relative to it
	root      *yaml.Node
	resources *yaml.Node
	params    *yaml.Node // the Parameters mapping, or nil
	globals   *yaml.Node // Globals.Function, or nil
}

// localTable is a DynamoDB table of the template, as klt invoke creates it locally.
type localTable struct {
	logicalID, name string
	keys            []keyAttr // hash key first
	streamView      string    // StreamSpecification.StreamViewType, or ""
}

// keyAttr is one key attribute of a table: its name and type (S, N or B).
type keyAttr struct{ name, typ string }

// localQueue is an SQS queue of the template, as klt invoke creates it locally.
type localQueue struct {
	logicalID, name string
	attrs           map[string]*yaml.Node // attribute name -> value node (intrinsics allowed)
}

// functionSpec is what klt invoke needs of one AWS::Serverless::Function.
type functionSpec struct {
	logicalID   string
	codeURI     string // absolute directory
	buildMethod string // Metadata.BuildMethod, or ""
	timeout     int    // seconds
	memory      int    // MB
	arch        string // x86_64 or arm64, as the template says (informative: klt builds for the host)
	env         map[string]*yaml.Node
	envOrder    []string
}

// readInvokeTemplate reads the template at path.
func readInvokeTemplate(path string) (*invokeTemplate, error) {
	top, _, err := readYAMLFile(path)
	if err != nil {
		return nil, err
	}
	if top == nil {
		return nil, fmt.Errorf("%s: empty file; want a SAM template", path)
	}
	root := resolve(top)
	_, res := mapGet(root, "Resources")
	if res == nil || res.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: no Resources mapping: not a SAM template", path)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return nil, err
	}
	t := &invokeTemplate{file: path, dir: filepath.Dir(abs), root: root, resources: res}
	_, t.params = mapGet(root, "Parameters")
	_, g := mapGet(root, "Globals")
	_, t.globals = mapGet(g, "Function")
	return t, nil
}

// resourceType returns the Type of the resource called name, or "" when there is none.
func (t *invokeTemplate) resourceType(name string) string {
	_, r := mapGet(t.resources, name)
	return scalarAt(r, "Type")
}

// functionNames returns the logical IDs of the template's functions, sorted.
func (t *invokeTemplate) functionNames() []string {
	var names []string
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		if scalarAt(resolve(t.resources.Content[i+1]), "Type") == samFunctionKind {
			names = append(names, t.resources.Content[i].Value)
		}
	}
	sort.Strings(names)
	return names
}

// function returns the configuration of the function name, Globals.Function merged in as SAM
// merges it (the function's own values win; Environment.Variables merge by name).
func (t *invokeTemplate) function(name string) (*functionSpec, error) {
	key, res := mapGet(t.resources, name)
	if res == nil {
		return nil, fmt.Errorf("%s: no function %q; functions in the template: %s", t.file, name, orNone(strings.Join(t.functionNames(), ", ")))
	}
	if typ := scalarAt(res, "Type"); typ != samFunctionKind {
		return nil, fmt.Errorf("%s:%d: %s is %s, not an %s; functions in the template: %s",
			t.file, key.Line, name, orNone(typ), samFunctionKind, orNone(strings.Join(t.functionNames(), ", ")))
	}
	_, props := mapGet(res, "Properties")
	f := &functionSpec{logicalID: name, timeout: 3, memory: 128, arch: "x86_64", env: map[string]*yaml.Node{}}
	// get returns the function's value of key, else the Globals' one.
	get := func(key string) *yaml.Node {
		if _, v := mapGet(props, key); v != nil {
			return v
		}
		_, v := mapGet(t.globals, key)
		return v
	}
	codeURI := get("CodeUri")
	switch {
	case codeURI == nil:
		return nil, fmt.Errorf("%s:%d: function %s has no CodeUri", t.file, key.Line, name)
	case codeURI.Kind != yaml.ScalarNode || codeURI.Tag != "!!str" && codeURI.Tag != "":
		return nil, fmt.Errorf("%s:%d: function %s: CodeUri must be a local directory, a plain string", t.file, codeURI.Line, name)
	}
	f.codeURI = filepath.Join(t.dir, filepath.FromSlash(codeURI.Value))
	_, meta := mapGet(res, "Metadata")
	f.buildMethod = scalarAt(meta, "BuildMethod")
	for _, n := range []struct {
		key string
		dst *int
	}{{"Timeout", &f.timeout}, {"MemorySize", &f.memory}} {
		v := get(n.key)
		if v == nil {
			continue
		}
		i, err := strconv.Atoi(v.Value)
		if v.Kind != yaml.ScalarNode || err != nil || i <= 0 {
			return nil, fmt.Errorf("%s:%d: function %s: %s must be a positive whole number, not %q", t.file, v.Line, name, n.key, v.Value)
		}
		*n.dst = i
	}
	if a := get("Architectures"); a != nil && a.Kind == yaml.SequenceNode && len(a.Content) == 1 {
		f.arch = resolve(a.Content[0]).Value
	}
	for _, src := range []*yaml.Node{t.globals, props} {
		_, env := mapGet(src, "Environment")
		_, vars := mapGet(env, "Variables")
		if vars == nil {
			continue
		}
		if vars.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s:%d: function %s: Environment.Variables must be a mapping", t.file, vars.Line, name)
		}
		for i := 0; i+1 < len(vars.Content); i += 2 {
			k := vars.Content[i].Value
			if _, seen := f.env[k]; !seen {
				f.envOrder = append(f.envOrder, k)
			}
			f.env[k] = resolve(vars.Content[i+1])
		}
	}
	return f, nil
}

// tables returns the template's DynamoDB tables (AWS::DynamoDB::Table and
// AWS::Serverless::SimpleTable). A table's local name is its TableName when that is a plain
// string, else its logical ID, as sam local invoke resolves !Ref.
func (t *invokeTemplate) tables() ([]localTable, error) {
	var out []localTable
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		id, res := t.resources.Content[i].Value, resolve(t.resources.Content[i+1])
		typ := scalarAt(res, "Type")
		if typ != ddbTableType && typ != samTableType {
			continue
		}
		_, props := mapGet(res, "Properties")
		tb := localTable{logicalID: id, name: id}
		if n := plainString(props, "TableName"); n != "" {
			tb.name = n
		}
		if typ == samTableType {
			_, pk := mapGet(props, "PrimaryKey")
			name, typ := "id", "String"
			if pk != nil {
				name, typ = orDefault(scalarAt(pk, "Name"), "id"), orDefault(scalarAt(pk, "Type"), "String")
			}
			short := map[string]string{"String": "S", "Number": "N", "Binary": "B"}[typ]
			if short == "" {
				return nil, fmt.Errorf("%s: table %s: PrimaryKey.Type %q is not String, Number or Binary", t.file, id, typ)
			}
			tb.keys = []keyAttr{{name, short}}
			out = append(out, tb)
			continue
		}
		types := map[string]string{}
		_, defs := mapGet(props, "AttributeDefinitions")
		if defs != nil {
			for _, d := range defs.Content {
				types[scalarAt(resolve(d), "AttributeName")] = scalarAt(resolve(d), "AttributeType")
			}
		}
		_, ks := mapGet(props, "KeySchema")
		if ks == nil || ks.Kind != yaml.SequenceNode || len(ks.Content) == 0 {
			return nil, fmt.Errorf("%s: table %s has no KeySchema", t.file, id)
		}
		for _, k := range ks.Content {
			k = resolve(k)
			name, kt := scalarAt(k, "AttributeName"), scalarAt(k, "KeyType")
			if types[name] == "" {
				return nil, fmt.Errorf("%s:%d: table %s: key %q has no AttributeDefinitions entry", t.file, k.Line, id, name)
			}
			a := keyAttr{name, types[name]}
			if kt == "HASH" {
				tb.keys = append([]keyAttr{a}, tb.keys...)
			} else {
				tb.keys = append(tb.keys, a)
			}
		}
		_, ss := mapGet(props, "StreamSpecification")
		tb.streamView = scalarAt(ss, "StreamViewType")
		out = append(out, tb)
	}
	return out, nil
}

// queues returns the template's SQS queues. A queue's local name is its QueueName when that
// is a plain string, else its logical ID, with ".fifo" added for a FIFO queue (SQS requires it).
func (t *invokeTemplate) queues() []localQueue {
	var out []localQueue
	for i := 0; i+1 < len(t.resources.Content); i += 2 {
		id, res := t.resources.Content[i].Value, resolve(t.resources.Content[i+1])
		if scalarAt(res, "Type") != sqsQueueType {
			continue
		}
		_, props := mapGet(res, "Properties")
		q := localQueue{logicalID: id, name: id, attrs: map[string]*yaml.Node{}}
		if n := plainString(props, "QueueName"); n != "" {
			q.name = n
		}
		if props != nil && props.Kind == yaml.MappingNode {
			for j := 0; j+1 < len(props.Content); j += 2 {
				q.attrs[props.Content[j].Value] = resolve(props.Content[j+1])
			}
		}
		if f := q.attrs["FifoQueue"]; f != nil && f.Value == "true" && !strings.HasSuffix(q.name, ".fifo") {
			q.name += ".fifo"
		}
		out = append(out, q)
	}
	return out
}

// plainString returns m[key] when it is a plain string scalar (not an intrinsic), else "".
func plainString(m *yaml.Node, key string) string {
	_, v := mapGet(m, key)
	if v == nil || v.Kind != yaml.ScalarNode {
		return ""
	}
	if _, ok := intrinsic(v); ok {
		return ""
	}
	return v.Value
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
