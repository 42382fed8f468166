package template

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// atPos is the start of every error that points into a fuzzed template.
var atPos = regexp.MustCompile(`^fuzz\.yaml:\d+:\d+: `)

// readSeeds are texts for the reader: alias bombs, an anchor inside itself, deep nesting,
// sizes just under and over MaxSize, duplicate keys (through aliases, in JSON), JSON and YAML
// templates. Some are megabytes, so they are in code rather than in testdata/fuzz.
func readSeeds() []string {
	seeds := []string{
		billionLaughs(),
		"a: &a [*a]\nResources: {}\n",
		"a: &a {b: *a}\nResources: {}\n",
		"a: &a [x, x]\nb: [*a, *a, *a]\nResources: {A: {Type: T, Properties: *a}}\n",
		"Resources: {A: 1, A: 2}\n",
		"Resources: {1: a, \"1\": b}\n",
		"k: &k key\n*k : 1\nkey: 2\n",
		`{"Resources": {"A": {}}, "Resources": {}}`,
		`{"Resources": {"F": {"Type": "AWS::Serverless::Function", "Properties": {"Events": {"E": {"Type": "SQS", "Properties": {"Queue": {"Fn::GetAtt": ["Q", "Arn"]}}}}}}}}`,
		strings.Repeat("[", 20000) + strings.Repeat("]", 20000),
		strings.Repeat("- ", 5000) + "x\n",
		"Resources: " + strings.Repeat("{a: ", 199) + "x" + strings.Repeat("}", 199),
		"a: " + strings.Repeat("x", MaxSize-3),
		"a: " + strings.Repeat("x", MaxSize-2),
		"a: &a " + strings.Repeat("x", 100000) + "\nResources: [" + strings.Repeat("*a, ", 400) + "]\n",
		"{" + strings.Repeat("a,", 30000) + "}",
		"Resources: {A: {Properties: {P: !Bogus x, Q: !Ref [a], R: !GetAtt A}}}\n",
		"Resources: !!set {a}\nb: !!omap [a: 1]\n",
		"a: &a {x: 1}\nResources: {A: {<<: *a, y: .inf}}\n",
		"",
		"# only a comment\n",
		"--- a\n--- b\n",
		evalTemplate,
	}
	for _, f := range []string{"testdata/pin/template.yaml", "testdata/pin/filter/intrinsics.yaml", "testdata/pin/filter/template.json"} {
		if data, err := os.ReadFile(f); err == nil {
			seeds = append(seeds, string(data))
		}
	}
	return seeds
}

// FuzzRead feeds arbitrary text to Read. It must never panic or hang; every error must name
// the file; what it accepts must expand to at most MaxNodes nodes and MaxText bytes, nest at
// most MaxDepth deep and give no mapping key twice, as counted here the slow way; and Plain and
// AppendJSON must agree. Run with
//
//	go test ./internal/template -run '^$' -fuzz '^FuzzRead$' -fuzztime 60s
func FuzzRead(f *testing.F) {
	for _, s := range readSeeds() {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, err := Read("fuzz.yaml", data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), "fuzz.yaml:") {
				t.Fatalf("error does not name the file: %v", err)
			}
			if _, ok := errors.AsType[*Error](err); ok && !atPos.MatchString(err.Error()) {
				t.Fatalf("error is not FILE:LINE:COL: %v", err)
			}
			if msg := err.Error(); (strings.Contains(msg, "aliases") || strings.Contains(msg, "given twice")) && !atPos.MatchString(msg) {
				t.Fatalf("error is not FILE:LINE:COL: %v", err)
			}
			return
		}
		budget := weight{MaxNodes, MaxText, 0}
		if !withinBounds(tpl.Root, &budget, 0) {
			t.Fatalf("accepted a document past the bounds (%+v left)", budget)
		}
		checkPlainJSON(t, tpl.Root)
	})
}

// withinBounds walks n with aliases expanded (shared nodes visited each time), taking from
// budget, and reports whether it lasted and every mapping has unique keys.
func withinBounds(n *Node, budget *weight, depth int) bool {
	budget.nodes--
	budget.text -= len(n.Text)
	if budget.nodes < 0 || budget.text < 0 || depth > MaxDepth {
		return false
	}
	seen := map[string]bool{}
	for _, p := range n.Pairs {
		budget.text -= len(p.Key)
		if seen[p.Key] || !withinBounds(p.Value, budget, depth+1) {
			return false
		}
		seen[p.Key] = true
	}
	for _, c := range n.Items {
		if !withinBounds(c, budget, depth+1) {
			return false
		}
	}
	return true
}

// checkPlainJSON fails t unless Plain and AppendJSON both fail, naming a place, or give the
// same value.
func checkPlainJSON(t *testing.T, n *Node) {
	t.Helper()
	v, perr := n.Plain()
	b, jerr := n.AppendJSON(nil, 0)
	if (perr == nil) != (jerr == nil) {
		t.Fatalf("Plain: %v; AppendJSON: %v", perr, jerr)
	}
	if perr != nil {
		if !atPos.MatchString(perr.Error()) || !atPos.MatchString(jerr.Error()) {
			t.Fatalf("errors do not name FILE:LINE:COL: %v; %v", perr, jerr)
		}
		return
	}
	var fromJSON any
	if err := json.Unmarshal(b, &fromJSON); err != nil {
		t.Fatalf("AppendJSON gave invalid JSON %.200s: %v", b, err)
	}
	if pb, err := json.Marshal(v); err != nil {
		t.Fatalf("Plain value does not marshal: %v", err)
	} else {
		var fromPlain any
		if err := json.Unmarshal(pb, &fromPlain); err != nil || !reflect.DeepEqual(fromPlain, fromJSON) {
			t.Fatalf("Plain and AppendJSON differ:\n%.300s\n%.300s", pb, b)
		}
	}
}

// fuzzResources answers every Ref and GetAtt with a value of a kind picked by the name, so
// that the evaluator meets lists, mappings, nil and errors where it expects strings.
type fuzzResources struct{}

func (fuzzResources) Ref(r *Resource) (any, error) { return fuzzValue(r.LogicalID) }

func (fuzzResources) GetAtt(r *Resource, attr string) (any, error) {
	return fuzzValue(r.LogicalID + attr)
}

func fuzzValue(s string) (any, error) {
	switch len(s) % 6 {
	case 0:
		return []any{s, "x"}, nil
	case 1:
		return map[string]any{"k": s}, nil
	case 2:
		return nil, nil
	case 3:
		return nil, ErrUnknown
	case 4:
		return NoValue, nil
	}
	return s, nil
}

// FuzzEval evaluates every property of every resource, every output and every condition of an
// arbitrary template. It must never panic or hang, and every error must be an *Error that
// names FILE:LINE:COL. Run with
//
//	go test ./internal/template -run '^$' -fuzz '^FuzzEval$' -fuzztime 60s
func FuzzEval(f *testing.F) {
	for _, s := range readSeeds() {
		if len(s) < 64<<10 {
			f.Add([]byte(s))
		}
	}
	f.Add([]byte("Resources:\n  F:\n    Type: AWS::Serverless::Function\n    Properties:\n      Environment:\n        Variables:\n          A: !Sub '${AWS::Region}-${B}-${!C}'\n          B: !Select [5, !Split [',', 'a,b']]\n          C: !If [X, !Ref P, !Join ['', [a, !GetAtt Q.Arn]]]\nConditions:\n  X: !Not [!Condition X]\nParameters:\n  P: {Type: String}\n"))
	f.Add([]byte("Parameters: {P: {Type: String, Default: xx}}\nResources:\n  R:\n    Properties:\n      V: !Sub [\"${a}${a}\", {a: !Sub [\"${a}${a}\", {a: !Sub [\"${a}${a}\", {a: !Ref P}]}]}]\n"))
	f.Add([]byte("Conditions: {A: !And [!Condition B, !Condition B], B: !And [!Condition C, !Condition C], C: !Equals [a, a]}\nResources: {R: {Properties: {V: !If [A, !FindInMap [M, a, b], !Base64 x]}}}\nMappings: {M: {a: {b: [1, !Ref AWS::NoValue]}}}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		tpl, err := Read("fuzz.yaml", data)
		if err != nil {
			return
		}
		ev := &Evaluator{Template: tpl, Pseudo: LocalPseudo(), Resources: fuzzResources{}, Parameters: map[string]string{"P": "a,b"}}
		check := func(err error) {
			if err == nil {
				return
			}
			if _, ok := errors.AsType[*Error](err); !ok || !atPos.MatchString(err.Error()) {
				t.Fatalf("error is not an *Error at FILE:LINE:COL: %v", err)
			}
		}
		for _, r := range tpl.Resources {
			if r.Properties != nil {
				_, err := ev.Eval(r.Properties)
				check(err)
				_, err = ev.String(r.Properties)
				check(err)
				Refs(r.Properties)
			}
			if r.Condition != "" {
				_, err := ev.Condition(r.Condition, r.Pos)
				check(err)
			}
		}
		if tpl.Outputs != nil {
			_, err := ev.Eval(tpl.Outputs)
			check(err)
		}
		for _, name := range tpl.Conditions.Keys() {
			_, err := ev.Condition(name, tpl.Conditions.KeyPos(name))
			check(err)
		}
	})
}
