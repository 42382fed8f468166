package samlint

// This file checks what the SAM transform makes of a template, not only what the template
// says, as cfn-lint does (it runs the transform, then its rules): the AWS::Lambda::Function
// each AWS::Serverless::Function becomes, against the Lambda schema (E3xxx), the resources'
// dependencies for cycles (E3004), and primary identifiers for uniqueness (E3019). Problems are
// reported at the SAM property the user wrote.
//
// What the transform copies into the function (aws-sam-translator 1.110.0,
// model/sam_resources.py, SamFunction._construct_lambda_function): the properties of
// lambdaFunctionProps as they are, Tracing as TracingConfig.Mode, and Role when given (else a
// role it writes, FUNCTIONRole, which Policies and DeadLetterQueue go into).

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/cfnschema"
	"github.com/kafkalambda/toolkit/internal/template"
)

// lambdaFunctionProps are the properties of an AWS::Serverless::Function (or its Globals) that
// the transform copies unchanged into the AWS::Lambda::Function it writes.
var lambdaFunctionProps = []string{
	"FunctionName", "Handler", "Runtime", "Description", "MemorySize", "Timeout", "VpcConfig", "Role",
	"Environment", "KmsKeyArn", "ReservedConcurrentExecutions", "Layers", "FileSystemConfigs",
	"ImageConfig", "PackageType", "Architectures", "SnapStart", "EphemeralStorage",
	"CodeSigningConfigArn", "RuntimeManagementConfig", "LoggingConfig", "TenancyConfig",
	"RecursiveLoop", "DurableConfig", "FunctionScalingConfig", "PublishToLatestPublished",
}

// lambdaFunctionType is what an AWS::Serverless::Function becomes.
const lambdaFunctionType = "AWS::Lambda::Function"

// checkGeneratedFunctions checks, for each AWS::Serverless::Function, the properties the
// transform copies into its AWS::Lambda::Function against that type's schema: Runtime's enum,
// LoggingConfig's shape, MemorySize's range...
func (l *linter) checkGeneratedFunctions() {
	c := cfnschema.New(l.t)
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		r := l.t.Resource(fn)
		props := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: r.Pos}
		sources := map[string]string{} // Lambda property -> the SAM property it comes from
		for _, key := range lambdaFunctionProps {
			if v := l.t.Property(r, key); v != nil {
				props.Pairs = append(props.Pairs, template.Pair{Key: key, KeyPos: l.propKeyPos(r, key), Value: v})
				sources["Properties."+key] = "Properties." + key
			}
		}
		if v := l.t.Property(r, "Tracing"); v != nil {
			tc := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos, Pairs: []template.Pair{{Key: "Mode", KeyPos: v.Pos, Value: v}}}
			props.Pairs = append(props.Pairs, template.Pair{Key: "TracingConfig", KeyPos: l.propKeyPos(r, "Tracing"), Value: tc})
			sources["Properties.TracingConfig"] = "Properties.Tracing"
		}
		if len(props.Pairs) == 0 {
			continue
		}
		probs, err := c.Resource(&template.Resource{LogicalID: fn, Type: lambdaFunctionType, Properties: props, Node: props, Pos: r.Pos})
		if err != nil {
			l.add(fn, "Type", err.Error(), "")
			return
		}
		for _, p := range probs {
			top, rest := topProperty(p.Path)
			from, ok := sources[top]
			if !ok {
				continue // a property the transform writes itself (Code, Role), or one it needs
			}
			if top == "Properties.TracingConfig" {
				rest = ""
			}
			l.problems = append(l.problems, Problem{Pos: p.Pos, Resource: fn, Path: from + rest,
				Problem: cfnFails + p.Problem + " (" + top + rest + " of the " + lambdaFunctionType + " the transform writes)", Fix: p.Fix})
		}
	}
}

// propKeyPos returns the position of the key of property key of SAM function r: its own, or
// that of Globals.Function.
func (l *linter) propKeyPos(r *template.Resource, key string) template.Pos {
	if r.Properties.Get(key) != nil {
		return r.Properties.KeyPos(key)
	}
	return l.t.Globals.Get("Function").KeyPos(key)
}

// topProperty splits "Properties.A.B[0]" into "Properties.A" and ".B[0]".
func topProperty(path string) (top, rest string) {
	name, ok := strings.CutPrefix(path, "Properties.")
	if !ok {
		return path, ""
	}
	i := strings.IndexAny(name, ".[")
	if i < 0 {
		return path, ""
	}
	return "Properties." + name[:i], name[i:]
}

// depEdge is one dependency of a resource on another: the property that makes it.
type depEdge struct {
	to   string
	path string // in the resource: Properties.Environment, DependsOn
}

// samElsewhere are the properties of a SAM resource that the transform moves into other
// resources it writes (event source mappings, permissions, the role, aliases...): a reference
// from them is not one of the resource itself.
var samElsewhere = []string{"Events", "Policies", "DeploymentPreference", "EventInvokeConfig",
	"AutoPublishAlias", "ProvisionedConcurrencyConfig", "FunctionUrlConfig", "Connectors", "DeadLetterQueue"}

// roleNode is the logical ID of the role the transform writes for SAM function fn when it has
// no Role.
func roleNode(fn string) string { return fn + "Role" }

// dependencies returns, for each resource (and each role the transform writes), the resources
// it refers to through Ref, Fn::GetAtt and Fn::Sub, and those of its DependsOn, as
// CloudFormation orders creation; a resource it may not know (a parameter) is left out.
func (l *linter) dependencies() (map[string][]depEdge, map[string]string) {
	nodes := map[string]bool{}
	owner := map[string]string{} // a role the transform writes -> the function
	for _, r := range l.t.Resources {
		nodes[r.LogicalID] = true
	}
	for _, r := range l.t.OfType(template.TypeFunction) {
		if l.t.Property(r, "Role") == nil && !nodes[roleNode(r.LogicalID)] {
			nodes[roleNode(r.LogicalID)] = true
			owner[roleNode(r.LogicalID)] = r.LogicalID
		}
	}
	deps := map[string][]depEdge{}
	add := func(from, path string, n *template.Node) {
		for _, to := range template.Refs(n) {
			if nodes[to] && !slices.ContainsFunc(deps[from], func(e depEdge) bool { return e.to == to }) {
				deps[from] = append(deps[from], depEdge{to: to, path: path})
			}
		}
	}
	for _, r := range l.t.Resources {
		id := r.LogicalID
		for _, d := range r.DependsOn {
			if nodes[d] {
				deps[id] = append(deps[id], depEdge{to: d, path: "DependsOn"})
			}
		}
		sam := strings.HasPrefix(r.Type, "AWS::Serverless::")
		if r.Properties != nil && r.Properties.Kind == template.Mapping {
			for _, p := range r.Properties.Pairs {
				if !sam || !slices.Contains(samElsewhere, p.Key) {
					add(id, "Properties."+p.Key, p.Value)
				}
			}
		} else {
			add(id, "Properties", r.Properties)
		}
		add(id, "Metadata", r.Metadata)
		if r.Type != template.TypeFunction {
			continue
		}
		if g := l.t.Globals.Get("Function"); g != nil {
			for _, p := range g.Pairs {
				if !slices.Contains(samElsewhere, p.Key) && r.Properties.Get(p.Key) == nil {
					add(id, "Properties."+p.Key, p.Value)
				}
			}
		}
		if role := roleNode(id); owner[role] == id {
			deps[id] = append(deps[id], depEdge{to: role, path: "Properties.Role"})
			add(role, "Properties.Policies", l.t.Property(r, "Policies"))
			add(role, "Properties.DeadLetterQueue", l.t.Property(r, "DeadLetterQueue"))
		}
		add(id, "Properties.DeadLetterQueue", l.t.Property(r, "DeadLetterQueue"))
	}
	return deps, owner
}

// checkCycles reports each resource whose dependencies lead back to it: CloudFormation
// cannot create any of them first ("Circular dependency between resources"; cfn-lint E3004).
func (l *linter) checkCycles() {
	deps, owner := l.dependencies()
	for _, cycle := range cycles(deps) {
		names := make([]string, len(cycle))
		note := ""
		for i, e := range cycle {
			names[i] = e.from
			if fn, ok := owner[e.from]; ok {
				note = fmt.Sprintf(" (%s is the role the transform writes for %s, with its Policies)", e.from, fn)
			}
		}
		for i, e := range cycle {
			res := e.from
			if fn, ok := owner[res]; ok {
				res = fn // the role's edge comes from the function's Policies or DeadLetterQueue
			}
			msg := fmt.Sprintf("circular dependency: %s refers to itself", names[0])
			if len(cycle) > 1 {
				order := append(slices.Clone(names[i:]), names[:i]...)
				msg = "circular dependency: " + strings.Join(order, " -> ") + " -> " + names[i] + note + ": each must be created before the next"
			} else if e.path == "DependsOn" {
				msg = fmt.Sprintf("circular dependency: %s depends on itself", names[0])
			}
			if owner[e.from] == "" && owner[e.to] == e.from {
				continue // the function's edge to its own role: the role's line names the Policies
			}
			l.add(res, e.path, cfnFails+msg, "break the cycle: refer to a name or ARN the template builds with !Sub from parameters, or move the reference to a resource of its own")
		}
	}
}

// cycleEdge is one step of a cycle.
type cycleEdge struct {
	from, to, path string
}

// cycles returns the cycles of deps, one per strongly connected component that has one (a
// self-reference is a cycle of one), each from its least logical ID, in a stable order.
func cycles(deps map[string][]depEdge) [][]cycleEdge {
	var ids []string
	for id := range deps {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	// Tarjan's strongly connected components.
	index, low, onStack := map[string]int{}, map[string]int{}, map[string]bool{}
	var stack []string
	var comps [][]string
	var visit func(v string)
	visit = func(v string) {
		index[v], low[v] = len(index), len(index)
		stack = append(stack, v)
		onStack[v] = true
		for _, e := range deps[v] {
			if _, seen := index[e.to]; !seen {
				visit(e.to)
				low[v] = min(low[v], low[e.to])
			} else if onStack[e.to] {
				low[v] = min(low[v], index[e.to])
			}
		}
		if low[v] == index[v] {
			var comp []string
			for {
				w := stack[len(stack)-1]
				stack = stack[:len(stack)-1]
				onStack[w] = false
				comp = append(comp, w)
				if w == v {
					break
				}
			}
			comps = append(comps, comp)
		}
	}
	for _, id := range ids {
		if _, seen := index[id]; !seen {
			visit(id)
		}
	}
	var out [][]cycleEdge
	for _, comp := range comps {
		sort.Strings(comp)
		start := comp[0]
		if len(comp) == 1 {
			for _, e := range deps[start] {
				if e.to == start {
					out = append(out, []cycleEdge{{start, start, e.path}})
				}
			}
			continue
		}
		out = append(out, cyclePath(deps, comp, start))
	}
	slices.SortFunc(out, func(a, b []cycleEdge) int { return strings.Compare(a[0].from, b[0].from) })
	return out
}

// cyclePath returns a shortest cycle from start through the component comp (breadth first).
func cyclePath(deps map[string][]depEdge, comp []string, start string) []cycleEdge {
	in := map[string]bool{}
	for _, c := range comp {
		in[c] = true
	}
	prev := map[string]cycleEdge{}
	queue := []string{start}
	for len(queue) > 0 {
		v := queue[0]
		queue = queue[1:]
		for _, e := range deps[v] {
			if !in[e.to] {
				continue
			}
			if e.to == start {
				path := []cycleEdge{{v, start, e.path}}
				for at := v; at != start; at = prev[at].from {
					path = append(path, prev[at])
				}
				slices.Reverse(path)
				return path
			}
			if _, seen := prev[e.to]; !seen {
				prev[e.to] = cycleEdge{v, e.to, e.path}
				queue = append(queue, e.to)
			}
		}
	}
	return nil // not reached: a component of two or more has a cycle through each member
}

// generatedType returns the type of the resource the transform makes of r (an
// AWS::Serverless::Function becomes an AWS::Lambda::Function, a SimpleTable an
// AWS::DynamoDB::Table), and the property of r each property of that type comes from.
func (l *linter) generatedType(r *template.Resource) (string, func(key string) *template.Node) {
	switch r.Type {
	case template.TypeFunction:
		return lambdaFunctionType, func(key string) *template.Node {
			if slices.Contains(lambdaFunctionProps, key) {
				return l.t.Property(r, key)
			}
			return nil
		}
	case template.TypeSimpleTable:
		return template.TypeTable, func(key string) *template.Node {
			if key == "TableName" {
				return r.Properties.Get(key)
			}
			return nil
		}
	}
	return r.Type, r.Properties.Get
}

// checkPrimaryIdentifiers reports resources of one type (after the transform) whose primary
// identifier, the name that identifies them in the account (an AWS::Lambda::Function's
// FunctionName), is written the same: CloudFormation cannot create the second (cfn-lint
// E3019). Resources made under different conditions may never exist together and are not
// compared; neither is an identifier that depends on a condition (Fn::If).
func (l *linter) checkPrimaryIdentifiers() {
	type group struct {
		typ, value string
		ids        []string
	}
	groups := map[string]*group{}
	var order []string
	for _, r := range l.t.Resources {
		typ, get := l.generatedType(r)
		keys := cfnschema.PrimaryIdentifier(typ)
		if len(keys) == 0 {
			continue
		}
		var parts []string
		ok := true
		for _, k := range keys {
			v := get(k)
			if v == nil || v.IsNull() || isNoValue(v) || hasIf(v) {
				ok = false
				break
			}
			plain, err := v.Plain()
			b, jerr := json.Marshal(plain)
			if err != nil || jerr != nil {
				ok = false
				break
			}
			parts = append(parts, k+": "+string(b))
		}
		if !ok {
			continue
		}
		value := strings.Join(parts, ", ")
		key := typ + "\x00" + r.Condition + "\x00" + value
		if groups[key] == nil {
			groups[key] = &group{typ: typ, value: value}
			order = append(order, key)
		}
		groups[key].ids = append(groups[key].ids, r.LogicalID)
	}
	for _, key := range order {
		g := groups[key]
		if len(g.ids) < 2 {
			continue
		}
		keys := cfnschema.PrimaryIdentifier(g.typ)
		path := "Properties"
		if len(keys) == 1 {
			path = "Properties." + keys[0]
		}
		for _, id := range g.ids {
			others := slices.DeleteFunc(slices.Clone(g.ids), func(o string) bool { return o == id })
			l.add(id, path, cfnFails+fmt.Sprintf("%s is also that of %s: the %s of an %s identifies it (its primary identifier), so two cannot share it",
				g.value, strings.Join(others, ", "), strings.Join(keys, " and "), g.typ),
				"give each its own "+strings.Join(keys, " and ")+", or leave it out so that CloudFormation names the resource")
		}
	}
}

// isNoValue reports whether n is Ref AWS::NoValue, a property left out.
func isNoValue(n *template.Node) bool {
	name, arg, ok := n.Intrinsic()
	return ok && name == "Ref" && arg.Text == "AWS::NoValue"
}

// hasIf reports whether n holds an Fn::If anywhere.
func hasIf(n *template.Node) bool {
	if n == nil {
		return false
	}
	if name, _, ok := n.Intrinsic(); ok && name == "Fn::If" {
		return true
	}
	return slices.ContainsFunc(n.Items, hasIf) || slices.ContainsFunc(n.Pairs, func(p template.Pair) bool { return hasIf(p.Value) })
}

// esmCopied are the properties of a pull event that the transform copies unchanged into the
// AWS::Lambda::EventSourceMapping it writes (model/eventsources/pull.py,
// PullEventSource.to_cloudformation); DestinationConfig goes too, without OnFailure.Type, which
// only tells the transform what policy to write.
var esmCopied = []string{
	"StartingPosition", "StartingPositionTimestamp", "BatchSize", "Enabled", "MaximumBatchingWindowInSeconds",
	"MaximumRetryAttempts", "BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds", "ParallelizationFactor",
	"Topics", "Queues", "SourceAccessConfigurations", "TumblingWindowInSeconds", "FunctionResponseTypes",
	"FilterCriteria", "KmsKeyArn", "ScalingConfig", "ProvisionedPollerConfig", "MetricsConfig", "LoggingConfig",
	"DestinationConfig",
}

// esmType is what a pull event becomes.
const esmType = "AWS::Lambda::EventSourceMapping"

// esmEventTypes are the event types the transform turns into an event source mapping.
var esmEventTypes = []string{"SQS", "Kinesis", "DynamoDB", "MSK", "SelfManagedKafka", "MQ", "DocumentDB"}

// checkGeneratedMappings checks, for each pull event of each AWS::Serverless::Function, the
// AWS::Lambda::EventSourceMapping the transform writes against that type's schema
// (ProvisionedPollerConfig's ranges, MetricsConfig's and LoggingConfig's enums...), reporting
// at the event's property. A place klt's own checks reported already (or a property
// holding it) is left to them.
func (l *linter) checkGeneratedMappings() {
	c := cfnschema.New(l.t)
	reported := func(res, path string) bool {
		return slices.ContainsFunc(l.problems, func(p Problem) bool {
			return p.Resource == res && (path == p.Path || strings.HasPrefix(path, p.Path+".") || strings.HasPrefix(path, p.Path+"["))
		})
	}
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		for _, ev := range l.t.Resource(fn).Events {
			props := ev.Properties
			if !slices.Contains(esmEventTypes, ev.Type) || props == nil || props.Kind != template.Mapping {
				continue
			}
			if _, _, ok := props.Intrinsic(); ok {
				continue
			}
			esm, from := mappingOf(ev.Type, props)
			if len(esm.Pairs) == 0 {
				continue
			}
			probs, err := c.Resource(&template.Resource{LogicalID: fn + ev.Name, Type: esmType, Properties: esm, Node: esm, Pos: ev.Pos})
			if err != nil {
				l.add(fn, "Type", err.Error(), "")
				return
			}
			base := "Properties.Events." + ev.Name + ".Properties"
			for _, p := range probs {
				sam, ok := samPathOf(p.Path, from)
				if !ok {
					continue // a property the transform writes itself (FunctionName, EventSourceArn)
				}
				path := base + sam
				if reported(fn, path) {
					continue
				}
				l.problems = append(l.problems, Problem{Pos: p.Pos, Resource: fn, Path: path,
					Problem: cfnFails + p.Problem + " (" + p.Path + " of the " + esmType + " " + fn + ev.Name + " the transform writes)", Fix: p.Fix})
			}
		}
	}
}

// mappingOf returns the Properties of the event source mapping the transform writes for an
// event of type typ with properties props, and where its properties come from: the prefix
// of a path in it -> the prefix of the path in the event's Properties.
func mappingOf(typ string, props *template.Node) (*template.Node, map[string]string) {
	esm := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: props.Pos}
	from := map[string]string{}
	put := func(into *template.Node, key string, keyPos template.Pos, v *template.Node) {
		into.Pairs = append(into.Pairs, template.Pair{Key: key, KeyPos: keyPos, Value: v})
	}
	for _, key := range esmCopied {
		v := props.Get(key)
		if v == nil || v.IsNull() {
			continue
		}
		if key == "DestinationConfig" {
			v = withoutOnFailureType(v)
		}
		put(esm, key, props.KeyPos(key), v)
		from["Properties."+key] = "." + key
	}
	if v := props.Get("KafkaBootstrapServers"); v != nil && !v.IsNull() {
		endpoints := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos}
		put(endpoints, "KafkaBootstrapServers", props.KeyPos("KafkaBootstrapServers"), v)
		source := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos}
		put(source, "Endpoints", props.KeyPos("KafkaBootstrapServers"), endpoints)
		put(esm, "SelfManagedEventSource", props.KeyPos("KafkaBootstrapServers"), source)
		from["Properties.SelfManagedEventSource.Endpoints.KafkaBootstrapServers"] = ".KafkaBootstrapServers"
	}
	config := map[string]string{"MSK": "AmazonManagedKafkaEventSourceConfig", "SelfManagedKafka": "SelfManagedKafkaEventSourceConfig"}[typ]
	if config == "" {
		return esm, from
	}
	cfg := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: props.Pos}
	for _, key := range []string{"ConsumerGroupId", "SchemaRegistryConfig"} {
		if v := props.Get(key); v != nil && !v.IsNull() {
			put(cfg, key, props.KeyPos(key), v)
			from["Properties."+config+"."+key] = "." + key
		}
	}
	if len(cfg.Pairs) > 0 {
		put(esm, config, cfg.Pairs[0].KeyPos, cfg)
	}
	return esm, from
}

// withoutOnFailureType returns DestinationConfig v as the transform writes it: OnFailure
// without Type.
func withoutOnFailureType(v *template.Node) *template.Node {
	of := v.Get("OnFailure")
	if of == nil || of.Kind != template.Mapping || of.Get("Type") == nil {
		return v
	}
	ofCopy := *of
	ofCopy.Pairs = slices.DeleteFunc(slices.Clone(of.Pairs), func(p template.Pair) bool { return p.Key == "Type" })
	vCopy := *v
	vCopy.Pairs = slices.Clone(v.Pairs)
	for i := range vCopy.Pairs {
		if vCopy.Pairs[i].Key == "OnFailure" {
			vCopy.Pairs[i].Value = &ofCopy
		}
	}
	return &vCopy
}

// samPathOf maps path, in the event source mapping, to the path in the event's Properties,
// through the longest prefix of from it starts with.
func samPathOf(path string, from map[string]string) (string, bool) {
	best := ""
	for prefix := range from {
		if (path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return "", false
	}
	return from[best] + path[len(best):], true
}
