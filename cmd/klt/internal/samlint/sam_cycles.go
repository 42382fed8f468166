package samlint

// This file checks the dependencies of the template the SAM transform makes for cycles, as
// CloudFormation orders creation ("Circular dependency between resources"; cfn-lint E3004):
// Ref, Fn::GetAtt, Fn::Sub and DependsOn, with a SAM resource's properties that the transform
// moves elsewhere left out, and the role it writes for a function put in.

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

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
