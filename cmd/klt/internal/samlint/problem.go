package samlint

import (
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// Problem is one mistake klt lint found, printed as
//
//	FILE:LINE:COL RESOURCE PATH: PROBLEM; fix: FIX
//
// Pos is where in the template the mistake is: the property itself, or the nearest node
// that is there when the mistake is a property left out.
type Problem struct {
	Pos      template.Pos
	Resource string // logical ID, or Globals, Parameters, Outputs, (template)
	Path     string // property path inside the resource, dot-separated
	Problem  string
	Fix      string
	Rule     string // the ID of the check, for the pitfall checks; "" for the others
}

// Severity is the severity of every problem: each is a mistake that loses or repeats records
// or fails the deployment, so none is a warning.
const Severity = "error"

func (p Problem) String() string {
	s := p.Resource + " " + p.Path + ": " + p.Problem
	if p.Pos.File != "" {
		s = p.Pos.String() + " " + s
	}
	if p.Fix != "" {
		s += "; fix: " + p.Fix
	}
	return s
}

// ProblemJSON is a Problem as "klt lint --format json" prints it, for editors and CI
// annotations.
type ProblemJSON struct {
	File     string `json:"file"`
	Line     int    `json:"line"`
	Column   int    `json:"column"`
	Resource string `json:"resource"`
	Path     string `json:"path"`
	Problem  string `json:"problem"`
	Fix      string `json:"fix"`
	Severity string `json:"severity"`
	Rule     string `json:"rule,omitempty"`
}

// JSON returns p in the form of "klt lint --format json".
func (p Problem) JSON() ProblemJSON {
	return ProblemJSON{File: p.Pos.File, Line: p.Pos.Line, Column: p.Pos.Col, Resource: p.Resource, Path: p.Path,
		Problem: p.Problem, Fix: p.Fix, Severity: Severity, Rule: p.Rule}
}

// locate gives each problem without a position the position of its path in the template: the
// deepest node of RESOURCE PATH that is there (a property left out is reported where it
// belongs), the key's position for a mapping entry.
func (l *linter) locate(problems []Problem) {
	for i := range problems {
		if problems[i].Pos.File == "" {
			problems[i].Pos = l.pathPos(problems[i].Resource, problems[i].Path)
		}
	}
}

// pathPos returns the position of path inside resource res (or the section Globals,
// Parameters, Outputs).
func (l *linter) pathPos(res, path string) template.Pos {
	var n *template.Node
	pos := l.t.Root.Pos
	switch res {
	case "Globals", "Parameters", "Outputs":
		n = l.t.Root.Get(res)
		pos = l.t.Root.KeyPos(res)
	default:
		if r := l.t.Resource(res); r != nil {
			n, pos = r.Node, r.Pos
		} else {
			n = l.t.Root
		}
	}
	for _, seg := range pathSegments(path) {
		switch {
		case n == nil:
			return pos
		case n.Kind == template.Mapping:
			if n.Get(seg) == nil {
				return pos
			}
			pos, n = n.KeyPos(seg), n.Get(seg)
		case n.Kind == template.Sequence:
			k, err := strconv.Atoi(seg)
			if err != nil || k < 0 || k >= len(n.Items) {
				return pos
			}
			n = n.Items[k]
			pos = n.Pos
		default:
			return pos
		}
	}
	return pos
}

// pathSegments splits "A.B[0].C" and "A.B.0.C" alike into A, B, 0, C.
func pathSegments(path string) []string {
	var out []string
	for _, s := range strings.Split(path, ".") {
		for s != "" {
			i := strings.IndexByte(s, '[')
			if i < 0 {
				out = append(out, s)
				break
			}
			if i > 0 {
				out = append(out, s[:i])
			}
			j := strings.IndexByte(s[i:], ']')
			if j < 0 {
				out = append(out, s[i:])
				break
			}
			out = append(out, s[i+1:i+j])
			s = s[i+j+1:]
		}
	}
	return out
}
