package samspec

import (
	"fmt"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// The account and region of every local resource, as SAM CLI's pseudo parameters and
// local-aws-sqs's queue URLs have them.
const (
	LocalAccount = "123456789012"
	LocalRegion  = "us-east-1"
)

// InvokeTemplate is a SAM template read for klt invoke: the parts that make one function's
// configuration and the local resources it uses.
type InvokeTemplate struct {
	File string // name for messages
	dir  string // directory of the template; CodeUri is relative to it
	T    *template.Template
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
	Attrs           map[string]*template.Node // attribute name -> value node (intrinsics allowed)
}

// FunctionSpec is what klt needs of one AWS::Serverless::Function, Globals.Function merged in
// and intrinsics evaluated (Environment's values are evaluated later, once the local servers
// run: see [Resolver.Eval]).
type FunctionSpec struct {
	LogicalID    string
	CodeURI      string // absolute directory
	BuildMethod  string // Metadata.BuildMethod, or ""
	Handler      string // "" when the template has none
	Runtime      string // "" when the template has none
	Architecture string // x86_64 or arm64, as the template says (klt builds for the host)
	Timeout      int    // seconds
	Memory       int    // MB
	Env          map[string]*template.Node
	EnvOrder     []string
	// LMI is the function's CapacityProviderConfig (with Globals.Function's merged in): not
	// nil for a Lambda Managed Instances function. See [FunctionSpec.LMIConcurrency].
	LMI *LMIConfig
}

// LMIConfig is a SAM function's CapacityProviderConfig, which SAM turns into
// AWS::Lambda::Function's CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig
// (aws-sam-translator, SamFunction._transform_capacity_provider_config). Its Arn (the
// capacity provider, CapacityProviderArn) is required and not read: nothing local runs on it.
type LMIConfig struct {
	// MaxConcurrency is PerExecutionEnvironmentMaxConcurrency, "the maximum number of
	// concurrent executions that can run on each execution environment" (1 to 1600); 0 when
	// the template leaves it out.
	MaxConcurrency int
	// MemoryGiBPerVCPU is ExecutionEnvironmentMemoryGiBPerVCpu, "the amount of memory in GiB
	// allocated per vCPU for execution environments" (2 to 8); 0 when left out.
	MemoryGiBPerVCPU float64
}

// DefaultLMIConcurrencyPerVCPU is PerExecutionEnvironmentMaxConcurrency's default per vCPU of
// an execution environment for the OS-only runtime (provided.al2023) a Go function runs on:
// "the default value for Rust is 8 concurrent requests per vCPU" (AWS, "Rust support for
// Lambda Managed Instances"; Rust is the OS-only runtime AWS documents for LMI).
const DefaultLMIConcurrencyPerVCPU = 8

// DefaultLMIMemoryGiBPerVCPU is the memory per vCPU assumed when the template gives no
// ExecutionEnvironmentMemoryGiBPerVCpu: the smallest ratio, 2, which is also LMI's smallest
// function, "2GB and 1 vCPU" (AWS, "Best practices for Lambda Managed Instances").
const DefaultLMIMemoryGiBPerVCPU = 2

// LMIConcurrency returns how many invocations one execution environment of f runs at once:
// 0 when f is not a Lambda Managed Instances function; else its
// PerExecutionEnvironmentMaxConcurrency, or, without one, [DefaultLMIConcurrencyPerVCPU] for
// each vCPU of an environment: MemorySize in GiB over the memory per vCPU, at least 1.
func (f *FunctionSpec) LMIConcurrency() int {
	if f.LMI == nil {
		return 0
	}
	if f.LMI.MaxConcurrency > 0 {
		return f.LMI.MaxConcurrency
	}
	ratio := f.LMI.MemoryGiBPerVCPU
	if ratio <= 0 {
		ratio = DefaultLMIMemoryGiBPerVCPU
	}
	vcpus := max(1, int(float64(f.Memory)/1024/ratio))
	return DefaultLMIConcurrencyPerVCPU * vcpus
}

// ReadInvokeTemplate reads the template at path.
func ReadInvokeTemplate(path string) (*InvokeTemplate, error) {
	t, err := template.ReadFile(path)
	if err != nil {
		return nil, err
	}
	dir, err := t.Dir()
	if err != nil {
		return nil, err
	}
	return &InvokeTemplate{File: path, dir: dir, T: t}, nil
}

// resourceType returns the Type of the resource called name, or "" when there is none.
func (t *InvokeTemplate) ResourceType(name string) string {
	if r := t.T.Resource(name); r != nil {
		return r.Type
	}
	return ""
}

// functionNames returns the logical IDs of the template's functions, sorted.
func (t *InvokeTemplate) FunctionNames() []string {
	var names []string
	for _, r := range t.T.OfType(template.TypeFunction) {
		names = append(names, r.LogicalID)
	}
	sort.Strings(names)
	return names
}

// Function returns the configuration of the function name, evaluated with the parameters'
// Defaults only (see [Resolver.Function] for overrides and local endpoints).
func (t *InvokeTemplate) Function(name string) (*FunctionSpec, error) {
	return (&Resolver{T: t}).Function(name)
}

// Function returns the configuration of the function name with r's values, Globals.Function
// merged in as SAM merges it (the function's own values win; Environment.Variables merge by
// name). CodeUri, Handler, Runtime, Architectures, Timeout and MemorySize may be intrinsics
// (Timeout: !Ref FunctionTimeout); a parameter without a value there is an error naming it.
func (r *Resolver) Function(name string) (*FunctionSpec, error) {
	t := r.T
	res := t.T.Resource(name)
	if res == nil {
		return nil, fmt.Errorf("%s: no function %q; functions in the template: %s", t.File, name, orNone(strings.Join(t.FunctionNames(), ", ")))
	}
	if res.Type != template.TypeFunction {
		return nil, fmt.Errorf("%s: %s is %s, not an %s; functions in the template: %s",
			res.Pos, name, orNone(res.Type), template.TypeFunction, orNone(strings.Join(t.FunctionNames(), ", ")))
	}
	if !template.IsLogicalID(name) { // template.Read refuses such IDs; a FunctionSpec's is a name only
		return nil, fmt.Errorf("%s: %s is not a logical ID CloudFormation takes", res.Pos, strconv.Quote(name))
	}
	var err error
	f := &FunctionSpec{LogicalID: name, Timeout: 3, Memory: 128, Architecture: "x86_64", Env: map[string]*template.Node{}}
	if f.CodeURI, err = r.codeDir(res); err != nil {
		return nil, err
	}
	f.BuildMethod = res.Metadata.Get("BuildMethod").String()
	for _, n := range []struct {
		key     string
		dst     *int
		atMost  int
		meaning string
	}{{"Timeout", &f.Timeout, 900, "seconds"}, {"MemorySize", &f.Memory, 10240, "MB"}} {
		v := t.T.Property(res, n.key)
		if v == nil {
			continue
		}
		s, err := r.Str(v, name+"."+n.key)
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(s)
		if err != nil || i <= 0 || i > n.atMost {
			return nil, fmt.Errorf("%s: function %s: %s must be a whole number of %s from 1 to %d, not %s", v.Pos, name, n.key, n.meaning, n.atMost, describeValue(v, s))
		}
		*n.dst = i
	}
	for _, n := range []struct {
		key string
		dst *string
	}{{"Handler", &f.Handler}, {"Runtime", &f.Runtime}} {
		if *n.dst, err = r.Str(t.T.Property(res, n.key), name+"."+n.key); err != nil {
			return nil, err
		}
	}
	if err := checkHandler(res.LogicalID, t.T.Property(res, "Handler"), f.Handler); err != nil {
		return nil, err
	}
	if err := r.architecture(res, f); err != nil {
		return nil, err
	}
	env, err := t.T.Environment(res)
	if err != nil {
		return nil, err
	}
	for _, p := range env {
		if !isEnvName(p.Key) {
			return nil, fmt.Errorf("%s: function %s: the environment variable name %s is not one Lambda takes ([a-zA-Z][a-zA-Z0-9_]+): klt would pass it to the function's process as it is", p.KeyPos, name, strconv.Quote(p.Key))
		}
		if p.Value != nil && p.Value.Kind == template.Scalar && strings.ContainsRune(p.Value.Text, 0) {
			return nil, fmt.Errorf("%s: function %s: the value of %s holds a NUL byte, which no process's environment can", p.Value.Pos, name, p.Key)
		}
		f.EnvOrder = append(f.EnvOrder, p.Key)
		f.Env[p.Key] = p.Value
	}
	if f.LMI, err = r.capacityProviderConfig(res); err != nil {
		return nil, err
	}
	return f, nil
}

// capacityProviderConfig reads the function's CapacityProviderConfig, Globals.Function's keys
// first and the function's over them, as SAM merges a mapping of Globals; nil without one.
func (r *Resolver) capacityProviderConfig(res *template.Resource) (*LMIConfig, error) {
	name := res.LogicalID
	vals := map[string]*template.Node{}
	found := false
	for _, src := range []*template.Node{r.T.T.Globals.Lookup("Function", "CapacityProviderConfig"), res.Properties.Get("CapacityProviderConfig")} {
		if src == nil {
			continue
		}
		if src.Kind != template.Mapping {
			return nil, fmt.Errorf("%s: function %s: CapacityProviderConfig must be a mapping (Arn, PerExecutionEnvironmentMaxConcurrency, ExecutionEnvironmentMemoryGiBPerVCpu)", src.Pos, name)
		}
		found = true
		for _, p := range src.Pairs {
			vals[p.Key] = p.Value
		}
	}
	if !found {
		return nil, nil
	}
	c := &LMIConfig{}
	if v := vals["PerExecutionEnvironmentMaxConcurrency"]; v != nil {
		s, err := r.Str(v, name+".CapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency")
		if err != nil {
			return nil, err
		}
		i, err := strconv.Atoi(s)
		if err != nil || i < 1 || i > 1600 {
			return nil, fmt.Errorf("%s: function %s: CapacityProviderConfig.PerExecutionEnvironmentMaxConcurrency must be a whole number from 1 to 1600, not %s", v.Pos, name, describeValue(v, s))
		}
		c.MaxConcurrency = i
	}
	if v := vals["ExecutionEnvironmentMemoryGiBPerVCpu"]; v != nil {
		s, err := r.Str(v, name+".CapacityProviderConfig.ExecutionEnvironmentMemoryGiBPerVCpu")
		if err != nil {
			return nil, err
		}
		x, err := strconv.ParseFloat(s, 64)
		if err != nil || !(x >= 2 && x <= 8) {
			return nil, fmt.Errorf("%s: function %s: CapacityProviderConfig.ExecutionEnvironmentMemoryGiBPerVCpu must be a number from 2 to 8, not %s", v.Pos, name, describeValue(v, s))
		}
		c.MemoryGiBPerVCPU = x
	}
	return c, nil
}

// codeURI returns the function's CodeUri, evaluated: a local directory relative to the
// template. An S3 location is code built elsewhere, which klt cannot build.
func (r *Resolver) codeURI(res *template.Resource) (string, error) {
	n := r.T.T.Property(res, "CodeUri")
	if n == nil {
		return "", fmt.Errorf("%s: function %s has no CodeUri (nor has Globals.Function): klt builds the function from that directory", res.Pos, res.LogicalID)
	}
	v, err := r.Eval(n, res.LogicalID+".CodeUri")
	if err != nil {
		return "", err
	}
	s, ok := v.(string)
	switch {
	case !ok:
		return "", fmt.Errorf("%s: function %s: CodeUri is %s: klt builds a local directory, not code uploaded to S3 (Bucket and Key)", n.Pos, res.LogicalID, template.Describe(v))
	case s == "":
		return "", fmt.Errorf("%s: function %s: CodeUri is empty", n.Pos, res.LogicalID)
	case strings.HasPrefix(s, "s3://"):
		return "", fmt.Errorf("%s: function %s: CodeUri %s is in S3: klt builds a local directory", n.Pos, res.LogicalID, s)
	}
	return s, nil
}

// codeDir returns the function's CodeUri as an absolute directory inside the template's
// directory. sam build copies the CodeUri directory and runs its Makefile; klt builds in place,
// so a CodeUri outside the template's directory (by .., an absolute path, a parameter or a
// symbolic link) is refused at its place: klt builds only what the template's directory holds.
func (r *Resolver) codeDir(res *template.Resource) (string, error) {
	codeURI, err := r.codeURI(res)
	if err != nil {
		return "", err
	}
	n := r.T.T.Property(res, "CodeUri")
	dir := codeURI
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(r.T.dir, filepath.FromSlash(codeURI))
	}
	root, err := filepath.EvalSymlinks(r.T.dir)
	if err != nil {
		return "", err
	}
	real, err := filepath.EvalSymlinks(dir)
	if err != nil {
		real = filepath.Clean(dir) // a CodeUri that does not exist is the build's error, after this check
	}
	if rel, err := filepath.Rel(root, real); err != nil || rel == ".." || strings.HasPrefix(rel, ".."+string(filepath.Separator)) || filepath.IsAbs(rel) {
		return "", fmt.Errorf("%s: function %s: CodeUri %s is outside the template's directory %s: klt builds and runs only code inside it", n.Pos, res.LogicalID, strconv.Quote(codeURI), r.T.dir)
	}
	return dir, nil
}

// checkHandler refuses a Handler that names a path outside the function's code (absolute, or
// going up with ..). klt runs the built bootstrap, whatever the Handler; a Handler is a name in
// the function's code, never a path klt reads or runs.
func checkHandler(fn string, n *template.Node, h string) error {
	if h == "" {
		return nil
	}
	clean := filepath.ToSlash(filepath.Clean(filepath.FromSlash(h)))
	if strings.HasPrefix(h, "/") || clean == ".." || strings.HasPrefix(clean, "../") || strings.ContainsRune(h, 0) {
		return fmt.Errorf("%s: function %s: Handler %s names a path outside the function's code: a Handler is a name in it (bootstrap for an OS-only runtime)", n.Pos, fn, strconv.Quote(h))
	}
	return nil
}

// isEnvName reports whether name is an environment variable name Lambda takes: the API's
// pattern for the keys of Environment.Variables, [a-zA-Z]([a-zA-Z0-9_])+.
func isEnvName(name string) bool {
	if len(name) < 2 || !('a' <= name[0] && name[0] <= 'z' || 'A' <= name[0] && name[0] <= 'Z') {
		return false
	}
	for i := 1; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// architecture sets f.Architecture from Architectures, a list of one: x86_64 or arm64.
func (r *Resolver) architecture(res *template.Resource, f *FunctionSpec) error {
	n := r.T.T.Property(res, "Architectures")
	if n == nil {
		return nil
	}
	v, err := r.Eval(n, res.LogicalID+".Architectures")
	if err != nil {
		return err
	}
	l, _ := v.([]any)
	if len(l) != 1 || (l[0] != "x86_64" && l[0] != "arm64") {
		return fmt.Errorf("%s: function %s: Architectures must be [x86_64] or [arm64], not %s", n.Pos, res.LogicalID, template.Describe(v))
	}
	f.Architecture = l[0].(string)
	return nil
}

// describeValue says what n is, evaluated to s, for a message about a value of the wrong kind.
func describeValue(n *template.Node, s string) string {
	if n.Kind == template.Scalar && n.Written() == "" {
		return fmt.Sprintf("%q", s)
	}
	if _, arg, ok := n.Intrinsic(); ok && arg.Kind == template.Scalar {
		return fmt.Sprintf("%s %s (%q)", describeNode(n), arg.Text, s)
	}
	return fmt.Sprintf("%s (%q)", describeNode(n), s)
}

// describeNode says what n is, for a message about a value of the wrong kind.
func describeNode(n *template.Node) string {
	if w := n.Written(); w != "" {
		return w
	}
	switch n.Kind {
	case template.Sequence:
		return "a list"
	case template.Mapping:
		return "a mapping"
	}
	return fmt.Sprintf("%q", n.Text)
}

// tables returns the template's DynamoDB tables (AWS::DynamoDB::Table and
// AWS::Serverless::SimpleTable). A table's local name is its TableName when that is a plain
// string, else its logical ID, as sam local invoke resolves !Ref.
func (t *InvokeTemplate) Tables() ([]LocalTable, error) {
	var out []LocalTable
	for _, res := range t.T.OfType(template.TypeTable, template.TypeSimpleTable) {
		id, props := res.LogicalID, res.Properties
		tb := LocalTable{LogicalID: id, Name: id}
		if n := props.Get("TableName"); n.IsString() {
			tb.Name = n.Text
		}
		if res.Type == template.TypeSimpleTable {
			pk := props.Get("PrimaryKey")
			name, typ := orDefault(pk.Get("Name").String(), "id"), orDefault(pk.Get("Type").String(), "String")
			short := map[string]string{"String": "S", "Number": "N", "Binary": "B"}[typ]
			if short == "" {
				return nil, fmt.Errorf("%s: table %s: PrimaryKey.Type %q is not String, Number or Binary", res.Pos, id, typ)
			}
			tb.Keys = []keyAttr{{name, short}}
			out = append(out, tb)
			continue
		}
		types := map[string]string{}
		for _, d := range props.Get("AttributeDefinitions").List() {
			types[d.Get("AttributeName").String()] = d.Get("AttributeType").String()
		}
		ks := props.Get("KeySchema")
		if ks == nil || ks.Kind != template.Sequence || len(ks.Items) == 0 {
			return nil, fmt.Errorf("%s: table %s has no KeySchema", res.Pos, id)
		}
		for _, k := range ks.Items {
			name, kt := k.Get("AttributeName").String(), k.Get("KeyType").String()
			if types[name] == "" {
				return nil, fmt.Errorf("%s: table %s: key %q has no AttributeDefinitions entry", k.Pos, id, name)
			}
			a := keyAttr{name, types[name]}
			if kt == "HASH" {
				tb.Keys = append([]keyAttr{a}, tb.Keys...)
			} else {
				tb.Keys = append(tb.Keys, a)
			}
		}
		tb.StreamView = props.Lookup("StreamSpecification", "StreamViewType").String()
		out = append(out, tb)
	}
	return out, nil
}

// queues returns the template's SQS queues. A queue's local name is its QueueName when that
// is a plain string, else its logical ID, with ".fifo" added for a FIFO queue (SQS requires it).
func (t *InvokeTemplate) Queues() []LocalQueue {
	var out []LocalQueue
	for _, res := range t.T.OfType(template.TypeQueue) {
		q := LocalQueue{LogicalID: res.LogicalID, Name: res.LogicalID, Attrs: map[string]*template.Node{}}
		if n := res.Properties.Get("QueueName"); n.IsString() {
			q.Name = n.Text
		}
		if res.Properties != nil && res.Properties.Kind == template.Mapping {
			for _, p := range res.Properties.Pairs {
				q.Attrs[p.Key] = p.Value
			}
		}
		if q.Attrs["FifoQueue"].String() == "true" && !strings.HasSuffix(q.Name, ".fifo") {
			q.Name += ".fifo"
		}
		out = append(out, q)
	}
	return out
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

func orNone(s string) string { return orDefault(s, "none") }
