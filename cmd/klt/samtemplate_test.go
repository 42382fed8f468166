package main

import (
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/criteria"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/internal/template"
)

// readTemplate parses the template file path.
func readTemplate(t *testing.T, path string) *samtemplate.SamTemplate {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	tpl, err := samtemplate.ParseTemplate(path, data)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func TestTemplateCriteriaAmongIntrinsics(t *testing.T) {
	// A template full of short- and long-form intrinsics and anchors reads, and each
	// FilterCriteria comes out with its patterns as JSON text and the line of each.
	const path = "testdata/filter/intrinsics.yaml"
	tpl := readTemplate(t, path)

	want := []string{"Consumer.Orders", "Worker.Placed", "RawMapping"}
	if got, hidden := tpl.CriteriaRefs(); !reflect.DeepEqual(got, want) || hidden != nil {
		t.Errorf("criteriaRefs = %q, %v; want %q and nothing hidden", got, hidden, want)
	}
	tests := []struct {
		ref       string
		eventType string
		patterns  []string
		lines     []int
	}{
		{"Consumer.Orders", "MSK", []string{
			// a JSON string, as written
			`{"value":{"status":["PLACED"],"total":[{"numeric":[">",0]}]}}`,
			// a YAML mapping, in its order, each scalar with its YAML type
			`{"value":{"$or":[{"priority":[1,2.5,-3,1e3]},{"flags":{"vip":[true],"deleted":[null]},"tag":["123","true",""]}],` +
				`"region":[{"prefix":"eu-"},{"anything-but":["us-east-1","<none>"]}],"customer":{"id":[{"exists":true}]}}}`,
		}, []int{76, 77}},
		{"Worker.Placed", "SQS", []string{
			"{\n  \"body\": {\"status\": [\"PLACED\"]}\n}\n", // a block scalar keeps its text
			`{"body":{"kind":["ping"]}}`,                     // a flow mapping
		}, []int{103, 107}},
		{"RawMapping", "", []string{`{"body":{"kind":["audit"]}}`}, []int{123}},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s, err := tpl.Criteria(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			if s.ReadErrs != nil {
				t.Fatalf("read errors: %v", s.ReadErrs)
			}
			if !reflect.DeepEqual(s.Patterns, tt.patterns) {
				t.Errorf("patterns:\n got %q\nwant %q", s.Patterns, tt.patterns)
			}
			var lines []int
			for _, at := range s.Ats {
				lines = append(lines, at.Line)
			}
			if !reflect.DeepEqual(lines, tt.lines) {
				t.Errorf("lines = %v, want %v", lines, tt.lines)
			}
			if s.EventType != tt.eventType || s.Where != tt.ref || s.File != path {
				t.Errorf("eventType, where, file = %q, %q, %q; want %q, %q, %q",
					s.EventType, s.Where, s.File, tt.eventType, tt.ref, path)
			}
			if _, errs := s.Compile(nil); errs != nil {
				t.Errorf("the engine rejects the patterns: %v", errs)
			}
		})
	}
}

func TestTemplateJSON(t *testing.T) {
	// A CloudFormation template in JSON reads the same way, long-form intrinsics and all.
	tpl := readTemplate(t, "testdata/filter/template.json")
	s, err := tpl.Criteria("Mapping")
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{`{"body":{"status":["PLACED"]}}`}; !reflect.DeepEqual(s.Patterns, want) {
		t.Errorf("patterns = %q, want %q", s.Patterns, want)
	}
}

func TestPatternMappingToJSON(t *testing.T) {
	// A Pattern written as YAML becomes the JSON text SAM would deploy.
	tests := []struct {
		yaml, json string
	}{
		{`{body: {a: [x]}}`, `{"body":{"a":["x"]}}`},
		{"body:\n  n: [10, -2.5, 1e3, 0x1F, +7, .5, 007]", `{"body":{"n":[10,-2.5,1e3,31,7,0.5,7]}}`},
		{`{b: [true, false, True, null, ~, ""]}`, `{"b":[true,false,true,null,null,""]}`},
		{`{b: ["10", "true", "null", 'x', yes, no, on]}`, `{"b":["10","true","null","x","yes","no","on"]}`},
		{`{b: [2026-01-15, 12:30]}`, `{"b":["2026-01-15","12:30"]}`},
		{`{b: [{numeric: [">=", 0, "<", 5]}]}`, `{"b":[{"numeric":[">=",0,"<",5]}]}`},
		{`{b: ["a\"b\\c", "tab\there", "é 🦀 <&>"]}`, `{"b":["a\"b\\c","tab\there","é 🦀 <&>"]}`},
		{`{"a.b": [1], 12: [x], true: [y]}`, `{"a.b":[1],"12":["x"],"true":["y"]}`},
		{"v: &vals [a, b]\nw: *vals", `{"v":["a","b"],"w":["a","b"]}`},
		{`{b: [!!str 12, !!int "12"]}`, `{"b":["12",12]}`},
		{`{a: [], b: {}}`, `{"a":[],"b":{}}`}, // the engine says what is wrong with these
	}
	for _, tt := range tests {
		got, err := samtemplate.PatternText(patternNode(t, tt.yaml))
		if err != nil || got != tt.json {
			t.Errorf("%s\n got %s, %v\nwant %s", tt.yaml, got, err, tt.json)
		}
	}
}

func TestPatternMappingErrors(t *testing.T) {
	tests := []struct {
		yaml string
		err  string
		line int // of the node the error is about
	}{
		{"body:\n  env: [!Ref Stage]", "!Ref is an intrinsic function klt cannot evaluate; write the value out", 2},
		{"body:\n  env:\n    - Fn::Sub: x-${Stage}", "Fn::Sub is an intrinsic function klt cannot evaluate; write the value out", 3},
		{"body:\n  env: {Ref: Stage}", "Ref is an intrinsic function klt cannot evaluate; write the value out", 2},
		{`!Sub '{"body":{"env":["${Stage}"]}}'`, "!Sub is an intrinsic function klt cannot evaluate; write the pattern out", 1},
		{"{Fn::If: [c, {a: [1]}, {a: [2]}]}", "Fn::If is an intrinsic function klt cannot evaluate; write the pattern out", 1},
		{"body:\n  n: [.inf]", ".inf is not a number JSON can hold", 2},
		{"body:\n  n: [.nan]", ".nan is not a number JSON can hold", 2},
		{"body:\n  ? [a, b]\n  : [x]", "a mapping key must be a plain name", 2},
		{"body:\n  b: [!!binary aGk=, !!set {a}]", "YAML tag !!set has no JSON form and is not part of CloudFormation templates", 2},
		{"", "empty; want a JSON string or a mapping", 1},
		{"a: &x [*x]", "an alias inside its own anchor stands for an endless document", 1},
		{"a: &a [x, x, x, x, x, x, x, x]\nb: &b [*a, *a, *a, *a, *a, *a, *a, *a]\nc: &c [*b, *b, *b, *b, *b, *b, *b, *b]\n" +
			"d: &d [*c, *c, *c, *c, *c, *c, *c, *c]\ne: [*d, *d, *d, *d, *d, *d, *d, *d]",
			"more than 65536 bytes as JSON; Lambda allows 4096 characters", 1},
	}
	for _, tt := range tests {
		// What has no JSON form at all the template reader refuses already, at the node.
		n, err := template.ReadNode("t.yaml", []byte(tt.yaml))
		var got string
		if err == nil {
			got, err = samtemplate.PatternText(n)
		}
		te, ok := errors.AsType[*template.Error](err)
		if !ok || te.Msg != tt.err {
			t.Errorf("%q: got %q, %v; want error %q", tt.yaml, got, err, tt.err)
			continue
		}
		if te.Pos.Line != tt.line {
			t.Errorf("%q: error %v is not about line %d", tt.yaml, err, tt.line)
		}
	}
}

// patternNode returns the node of a YAML document; an empty document is a null scalar.
func patternNode(t *testing.T, src string) *template.Node {
	t.Helper()
	n, err := template.ReadNode("t.yaml", []byte(src))
	if err != nil {
		t.Fatalf("%q: %v", src, err)
	}
	return n
}

// errTemplate is the start of a template with every kind of FilterCriteria mistake.
const errTemplate = `Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      Runtime: !If [IsProd, provided.al2023, provided.al2]
      Events:
        Good:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
            FilterCriteria:
              Filters:
                - Pattern: '{"body":{"a":["x"]}}'
        NoFilter:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
        Conditional:
          Type: SQS
          Properties:
            FilterCriteria: !If [IsProd, {Filters: [{Pattern: '{}'}]}, !Ref "AWS::NoValue"]
        NoFilters:
          Type: SQS
          Properties:
            FilterCriteria: {}
        FiltersNotList:
          Type: SQS
          Properties:
            FilterCriteria: {Filters: {Pattern: x}}
        BadFilters:
          Type: MSK
          Properties:
            FilterCriteria:
              Filters:
                - Pattern: '{"value":{"a":[]}}'
                - Pattern: !Sub '{"value":{"env":["${Stage}"]}}'
                - NotPattern: x
                - !If [c, {Pattern: '{}'}, {Pattern: '{}'}]
                - Pattern:
                - Pattern: {value: {b: ["ok"]}}
  Bare:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: .
  Queue:
    Type: AWS::SQS::Queue
  Map:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
  Fn2:
    Type: AWS::Serverless::Function
`

func TestTemplateErrors(t *testing.T) {
	// Each mistake names the file, the line when there is one, and what exists instead.
	tpl, err := samtemplate.ParseTemplate("t.yaml", []byte(errTemplate))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref string
		err string
	}{
		{"Nope.Ev", `t.yaml: no resource "Nope" in Resources; functions in template: Fn, Bare, Fn2; event source mappings: Map`},
		{"Fn.Nope", `t.yaml:6:7: function Fn has no event "Nope"; events of Fn: Good, NoFilter, Conditional, NoFilters, FiltersNotList, BadFilters`},
		{"Fn", "t.yaml: Fn is a function: name one of its events, as t.yaml#Fn.EVENT; events of Fn: Good, NoFilter, Conditional, NoFilters, FiltersNotList, BadFilters"},
		{"Fn.NoFilter", "t.yaml:14:9: event Fn.NoFilter (Type SQS) has no FilterCriteria"},
		{"Bare.Ev", "t.yaml:41:3: function Bare has no Events"},
		{"Fn2.Ev", "t.yaml:51:3: function Fn2 has no Events"},
		{"Queue", "t.yaml:45:3: resource Queue is AWS::SQS::Queue, not an AWS::Serverless::Function or an AWS::Lambda::EventSourceMapping; functions in template: Fn, Bare, Fn2; event source mappings: Map"},
		{"Map", "t.yaml:47:3: event source mapping Map has no FilterCriteria"},
		{"Map.Ev", "t.yaml: Map is an AWS::Lambda::EventSourceMapping, which has no events: name it alone, as t.yaml#Map"},
	}
	for _, tt := range tests {
		s, err := tpl.Criteria(tt.ref)
		if err == nil || err.Error() != tt.err {
			t.Errorf("%s: got %v, %v\nwant %s", tt.ref, s, err, tt.err)
		}
	}
}

func TestTemplateFilterProblems(t *testing.T) {
	// What cannot be read from a FilterCriteria is reported as its problems, with the engine's,
	// in filter order, each with the line of its node.
	tpl, err := samtemplate.ParseTemplate("t.yaml", []byte(errTemplate))
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		ref  string
		want []string
	}{
		{"Fn.Conditional", []string{"t.yaml:21:13: Fn.Conditional: FilterCriteria is !If, an intrinsic function klt cannot evaluate; write the filters out"}},
		{"Fn.NoFilters", []string{"t.yaml:25:13: Fn.NoFilters: FilterCriteria has no Filters"}},
		{"Fn.FiltersNotList", []string{"t.yaml:29:39: Fn.FiltersNotList: Filters: want a list of {Pattern: ...}"}},
		{"Fn.BadFilters", []string{
			"t.yaml:35:19: Fn.BadFilters: Filters[0]: value.a: ",
			"t.yaml:36:28: Fn.BadFilters: Filters[1]: Pattern: !Sub is an intrinsic function klt cannot evaluate; write the pattern out",
			"t.yaml:37:19: Fn.BadFilters: Filters[2]: Pattern: missing",
			"t.yaml:38:19: Fn.BadFilters: Filters[3]: !If is an intrinsic function klt cannot evaluate; write the filter out",
			"t.yaml:39:27: Fn.BadFilters: Filters[4]: Pattern: empty; want a JSON string or a mapping",
			// 6 filters are one too many, whatever else is wrong
			"t.yaml:33:13: Fn.BadFilters: Filters: 6 filters; an event source mapping takes at most 5 (10 with a raised quota: --max-filters 10)",
		}},
	}
	for _, tt := range tests {
		t.Run(tt.ref, func(t *testing.T) {
			s, err := tpl.Criteria(tt.ref)
			if err != nil {
				t.Fatal(err)
			}
			c, problems := s.Compile(nil)
			if c != nil {
				t.Fatal("compiled")
			}
			var got []string
			for _, p := range problems {
				got = append(got, s.Problem(p))
			}
			checkProblems(t, got, tt.want)
		})
	}
}

// checkProblems checks that got has a line starting with each of want, and nothing else.
func checkProblems(t *testing.T, got, want []string) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("got %d problems, want %d:\n%s", len(got), len(want), strings.Join(got, "\n"))
		return
	}
	for _, w := range want {
		found := false
		for _, g := range got {
			found = found || strings.HasPrefix(g, w)
		}
		if !found {
			t.Errorf("no problem starts %q in:\n%s", w, strings.Join(got, "\n"))
		}
	}
}

func TestParseTemplateErrors(t *testing.T) {
	tests := []struct {
		src, err string
	}{
		{"", "t.yaml: empty file; want a SAM or CloudFormation template"},
		{"# only a comment\n", "t.yaml: empty file; want a SAM or CloudFormation template"},
		{"- a\n- b\n", "t.yaml:1:1: want a SAM or CloudFormation template, a mapping with Resources"},
		{"Parameters: {}\n", "t.yaml:1:1: no Resources: not a SAM or CloudFormation template"},
		{"Resources: [a]\n", "t.yaml:1:1: Resources is not a mapping"},
		{"Resources:\n  A: [x\n", "t.yaml: invalid YAML: line 1: did not find expected ',' or ']'"},
		{"Resources:\n\tA: 1\n", "t.yaml: invalid YAML: line 2: found character that cannot start any token"},
	}
	for _, tt := range tests {
		_, err := samtemplate.ParseTemplate("t.yaml", []byte(tt.src))
		if err == nil || err.Error() != tt.err {
			t.Errorf("%q: got %v, want %s", tt.src, err, tt.err)
		}
	}
}

func TestTemplateAllNone(t *testing.T) {
	tpl, err := samtemplate.ParseTemplate("t.yaml", []byte("Resources:\n  F:\n    Type: AWS::Serverless::Function\n"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = tpl.All()
	if want := "t.yaml: no FilterCriteria in the template; functions in template: F"; err == nil || err.Error() != want {
		t.Errorf("got %v, want %s", err, want)
	}
}

func FuzzTemplateCriteria(f *testing.F) {
	// Reading FilterCriteria from any template never panics or hangs; every message names the
	// file; a Pattern written as YAML becomes valid JSON.
	for _, path := range []string{"testdata/filter/intrinsics.yaml", "testdata/filter/template.json", exampleTemplate} {
		data, err := os.ReadFile(path)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	f.Add([]byte(errTemplate))
	f.Add([]byte("Resources:\n  M:\n    Type: AWS::Lambda::EventSourceMapping\n    Properties:\n" +
		"      FilterCriteria: {Filters: [{Pattern: &p {a: [*p]}}]}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		const name = "fuzz.yaml"
		tpl, err := samtemplate.ParseTemplate(name, data)
		if err != nil {
			if !strings.HasPrefix(err.Error(), name) {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		specs, err := tpl.All()
		if err != nil && !strings.HasPrefix(err.Error(), name) {
			t.Fatalf("error does not name the file: %v", err)
		}
		for _, s := range specs {
			_, problems := s.Compile(nil)
			for _, p := range problems {
				if msg := s.Problem(p); !strings.HasPrefix(msg, name) {
					t.Fatalf("problem does not name the file: %s", msg)
				}
			}
		}
		n, err := template.ReadNode(name, data)
		if err != nil {
			return
		}
		if n.Kind != template.Scalar {
			if text, err := samtemplate.PatternText(n); err == nil && !json.Valid([]byte(text)) {
				t.Fatalf("invalid JSON from a mapping: %s", text)
			}
		}
	})
}

func TestCompileReportsEveryFilter(t *testing.T) {
	// The engine stops at the first bad filter; compile goes on to the others.
	s := &criteria.Spec{File: "c.json", Raw: []byte(`{"Filters":[
		{"Pattern":"{\"body\":{\"a\":[]}}"},
		{"Pattern":"{\"body\":{\"b\":[\"ok\"]}}"},
		{"Pattern":5},
		{"Pattern":"{\"body\":5}"}]}`)}
	_, problems := s.Compile(nil)
	var got []string
	for _, p := range problems {
		if _, ok := errors.AsType[*filter.Error](p); !ok {
			t.Fatalf("%v is not a *filter.Error", p)
		}
		got = append(got, s.Problem(p))
	}
	checkProblems(t, got, []string{
		"c.json: Filters[0]: body.a: ",
		"c.json: Filters[2]: Pattern: ",
		"c.json: Filters[3]: body: ",
	})
}
