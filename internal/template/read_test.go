package template

import (
	"encoding/json"
	"errors"
	"reflect"
	"regexp"
	"strings"
	"testing"
)

// billionLaughs is the classic alias bomb: ten aliases to the level above, nine levels deep,
// 754 bytes that stand for a billion nodes.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]\n")
	for i := 1; i <= 9; i++ {
		p := "*a" + string(rune('0'+i-1))
		b.WriteString("a" + string(rune('0'+i)) + ": &a" + string(rune('0'+i)) + " [" + strings.Repeat(p+", ", 9) + p + "]\n")
	}
	return b.String()
}

func TestReadRefuses(t *testing.T) {
	tests := []struct {
		name, src, err string
	}{
		{"empty", "", "t.yaml: empty file; want a SAM or CloudFormation template"},
		{"comment", "# nothing\n", "t.yaml: empty file; want a SAM or CloudFormation template"},
		{"invalid", "Resources: [", "t.yaml: invalid YAML: "},
		{"scalar", "hello", "t.yaml:1:1: want a SAM or CloudFormation template, a mapping with Resources"},
		{"no resources", "Parameters: {}\n", "t.yaml:1:1: no Resources: not a SAM or CloudFormation template"},
		{"resources list", "Resources: [a]\n", "t.yaml:1:1: Resources is not a mapping"},
		{"duplicate", "Resources:\n  A: {}\n  A: {}\n", `t.yaml:3:3: mapping key "A" given twice (first at line 2, column 3); CloudFormation refuses such a template`},
		{"duplicate by text", "Resources: {1: a, \"1\": b}\n", `t.yaml:1:19: mapping key "1" given twice (first at line 1, column 13)`},
		{"duplicate JSON", `{"Resources": {"A": {}}, "Resources": {}}`, `t.yaml:1:26: mapping key "Resources" given twice`},
		{"duplicate through alias", "k: &k key\n*k : 1\nkey: 2\nResources: {}\n", `t.yaml:3:1: mapping key "key" given twice (first at line 2, column 1)`},
		{"unknown tag", "Resources:\n  Q:\n    Properties: {N: !Bogus x}\n", "t.yaml:3:21: unknown tag !Bogus; not one of the short forms of CloudFormation"},
		{"set", "Resources: !!set {a}\n", "t.yaml:1:12: YAML tag !!set has no JSON form"},
		{"key not a name", "Resources:\n  ? [a, b]\n  : x\n", "t.yaml:2:5: a mapping key must be a plain name"},
		{"ref of a list", "Resources: {A: {Properties: {P: !Ref [a]}}}\n", "t.yaml:1:33: !Ref takes a name"},
		{"alias cycle", "a: &a [*a]\nResources: {}\n", "t.yaml:1:8: an alias inside its own anchor stands for an endless document"},
		{"billion laughs", billionLaughs(), "t.yaml:6:45: aliases expand the template past 1000000 nodes"},
		{"deep", "Resources: " + strings.Repeat("[", 300) + strings.Repeat("]", 300), "t.yaml:1:212: nested more than 200 deep"},
		{"deep through aliases", "a: &a " + strings.Repeat("[", 198) + strings.Repeat("]", 198) + "\nResources: {A: {P: [[*a]]}}\n",
			"aliases nest the template more than 200 deep"},
		{"long text through aliases", "a: &a " + strings.Repeat("x", 900_000) + "\nResources: [" + strings.Repeat("*a, ", 40) + "]\n",
			"aliases expand the template past 33554432 bytes of text"},
		{"too large", "Resources: {}\n#" + strings.Repeat("x", MaxSize), "t.yaml: more than 1048576 bytes"},
	}
	for _, tt := range tests {
		_, err := Read("t.yaml", []byte(tt.src))
		if err == nil || !strings.Contains(err.Error(), tt.err) {
			t.Errorf("%s: got %v, want %q", tt.name, err, tt.err)
		}
	}
	for _, src := range []string{billionLaughs(), "Resources: {}\n#" + strings.Repeat("x", MaxSize)} {
		if _, err := Read("t.yaml", []byte(src)); !errors.Is(err, ErrTooLarge) {
			t.Errorf("error %v is not ErrTooLarge", err)
		}
	}
}

// TestReadPositions: every node has the place it was written at; aliases share their anchor's
// node; short forms are in their long form at the place of the tag.
func TestReadPositions(t *testing.T) {
	src := `Parameters:
  Stage: {Type: String, Default: dev, AllowedValues: [dev, prod]}
Resources:
  Queue:
    Type: AWS::SQS::Queue
    Condition: IsProd
    DependsOn: [Table]
    Properties:
      QueueName: !Sub "orders-${Stage}"
      Tags: &tags [{Key: a, Value: !GetAtt Table.StreamArn}]
  Table:
    Type: AWS::DynamoDB::Table
    Properties: {Tags: *tags}
`
	tpl, err := Read("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	q := tpl.Resource("Queue")
	if q.Pos.String() != "t.yaml:4:3" || q.Type != TypeQueue || q.Condition != "IsProd" || len(q.DependsOn) != 1 || q.DependsOn[0] != "Table" {
		t.Errorf("Queue = %+v", q)
	}
	name, arg, ok := q.Properties.Get("QueueName").Intrinsic()
	if !ok || name != "Fn::Sub" || arg.Text != "orders-${Stage}" || arg.Pos.String() != "t.yaml:9:18" {
		t.Errorf("QueueName = %s %+v %v", name, arg, ok)
	}
	ga := q.Properties.Lookup("Tags").Items[0].Get("Value")
	if name, arg, _ := ga.Intrinsic(); name != "Fn::GetAtt" || len(arg.Items) != 2 || arg.Items[0].Text != "Table" || arg.Items[1].Text != "StreamArn" {
		t.Errorf("GetAtt = %s %+v", name, arg)
	}
	if tpl.Resource("Table").Properties.Get("Tags") != q.Properties.Get("Tags") {
		t.Error("an alias is not its anchor's node")
	}
	p := tpl.Parameter("Stage")
	if p.Type != "String" || p.Default.Text != "dev" || len(p.AllowedValues) != 2 || p.Pos.String() != "t.yaml:2:3" {
		t.Errorf("Stage = %+v", p)
	}
	if got := tpl.Resources[1].LogicalID; got != "Table" {
		t.Errorf("Resources out of file order: %s second", got)
	}
}

// TestReadJSON: a JSON template reads as the same model, numbers and bools typed.
func TestReadJSON(t *testing.T) {
	tpl, err := Read("t.json", []byte(`{"Resources": {"F": {"Type": "AWS::Serverless::Function",
  "Properties": {"Timeout": 30, "Events": {"Q": {"Type": "SQS", "Properties": {"Enabled": false, "Queue": {"Fn::GetAtt": ["Q", "Arn"]}}}}}}}}`))
	if err != nil {
		t.Fatal(err)
	}
	f := tpl.Resource("F")
	if f.Properties.Get("Timeout").Tag != TagInt || len(f.Events) != 1 || f.Events[0].Type != "SQS" || f.Event("Q").Pos.String() != "t.json:2:44" {
		t.Errorf("F = %+v, events %+v", f, f.Events)
	}
	v, err := f.Event("Q").Properties.Plain()
	if err != nil {
		t.Fatal(err)
	}
	if m := v.(map[string]any); m["Enabled"] != false || m["Queue"].(map[string]any)["Fn::GetAtt"].([]any)[1] != "Arn" {
		t.Errorf("Plain = %v", v)
	}
}

func TestPlainAndJSON(t *testing.T) {
	tests := []struct{ yaml, json string }{
		{`{a: [x]}`, `{"a":["x"]}`},
		{"n: [10, -2.5, 1e3, 0x1F, +7, .5, 007]", `{"n":[10,-2.5,1e3,31,7,0.5,7]}`},
		{`{b: [true, false, True, null, ~, ""]}`, `{"b":[true,false,true,null,null,""]}`},
		{`{b: ["10", "true", "null", 'x', yes, no, on]}`, `{"b":["10","true","null","x","yes","no","on"]}`},
		{`{b: [2026-01-15, 12:30]}`, `{"b":["2026-01-15","12:30"]}`},
		{`{b: ["a\"b\\c", "tab\there", "é 🦀 <&>"]}`, `{"b":["a\"b\\c","tab\there","é 🦀 <&>"]}`},
		{`{"a.b": [1], 12: [x], true: [y]}`, `{"a.b":[1],"12":["x"],"true":["y"]}`},
		{"v: &vals [a, b]\nw: *vals", `{"v":["a","b"],"w":["a","b"]}`},
		{`{b: [!!str 12, !!int "12", !!binary aGk=]}`, `{"b":["12",12,"aGk="]}`},
		{`{z: 1, a: 2}`, `{"z":1,"a":2}`},
		{`{r: !Ref X, g: !GetAtt A.B.C, s: !Sub [x, {}]}`, `{"r":{"Ref":"X"},"g":{"Fn::GetAtt":["A","B.C"]},"s":{"Fn::Sub":["x",{}]}}`},
	}
	for _, tt := range tests {
		n, err := ReadNode("t.yaml", []byte(tt.yaml))
		if err != nil {
			t.Fatalf("%s: %v", tt.yaml, err)
		}
		b, err := n.AppendJSON(nil, 0)
		if err != nil || string(b) != tt.json {
			t.Errorf("%s\n got %s, %v\nwant %s", tt.yaml, b, err, tt.json)
		}
		v, err := n.Plain()
		if err != nil {
			t.Errorf("%s: Plain: %v", tt.yaml, err)
		}
		var want any
		mustUnmarshal(t, tt.json, &want)
		if got := viaJSON(t, v); !jsonEqual(got, want) {
			t.Errorf("%s: Plain = %v, want %v", tt.yaml, got, want)
		}
	}
}

func TestPlainRefuses(t *testing.T) {
	at := regexp.MustCompile(`^t\.yaml:\d+:\d+: `)
	for src, want := range map[string]string{
		"n: [.inf]":                 ".inf is not a number JSON can hold",
		"n: [.NaN]":                 ".NaN is not a number JSON can hold",
		"a: &a {x: 1}\nb: {<<: *a}": "YAML merge keys (<<) are not part of CloudFormation templates",
	} {
		n, err := ReadNode("t.yaml", []byte(src))
		if err != nil {
			t.Fatalf("%s: %v", src, err)
		}
		_, err1 := n.Plain()
		_, err2 := n.AppendJSON(nil, 0)
		for _, err := range []error{err1, err2} {
			if err == nil || !strings.HasSuffix(err.Error(), want) || !at.MatchString(err.Error()) {
				t.Errorf("%s: %v, want FILE:LINE:COL: %s", src, err, want)
			}
		}
	}
	n, _ := ReadNode("t.yaml", []byte("[aaaa, bbbb, cccc]"))
	if _, err := n.AppendJSON(nil, 8); err == nil || !strings.Contains(err.Error(), "more than 8 bytes as JSON") {
		t.Errorf("AppendJSON past its cap: %v", err)
	}
}

// TestGlobals: SAM's Globals.Function under a function's own properties and variables.
func TestGlobals(t *testing.T) {
	tpl, err := Read("t.yaml", []byte(`Globals:
  Function:
    Timeout: 30
    Environment: {Variables: {A: global-a, B: global-b}}
Resources:
  F:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: 256
      Environment: {Variables: {C: own-c, A: own-a}}
  G:
    Type: AWS::Serverless::Function
    Properties: {Environment: {Variables: [x]}}
`))
	if err != nil {
		t.Fatal(err)
	}
	f := tpl.Resource("F")
	if tpl.Property(f, "Timeout").Text != "30" || tpl.Property(f, "MemorySize").Text != "256" || tpl.Property(f, "Runtime") != nil {
		t.Error("Property does not merge Globals.Function")
	}
	env, err := tpl.Environment(f)
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, p := range env {
		got = append(got, p.Key+"="+p.Value.Text)
	}
	if strings.Join(got, " ") != "A=own-a B=global-b C=own-c" {
		t.Errorf("Environment = %v", got)
	}
	if _, err := tpl.Environment(tpl.Resource("G")); err == nil || !strings.HasPrefix(err.Error(), "t.yaml:13:43: function G: Environment.Variables must be a mapping") {
		t.Errorf("Environment of a list: %v", err)
	}
}

func mustUnmarshal(t *testing.T, s string, v any) {
	t.Helper()
	if err := json.Unmarshal([]byte(s), v); err != nil {
		t.Fatal(err)
	}
}

func jsonEqual(a, b any) bool { return reflect.DeepEqual(a, b) }

// TestReadNode pins what the reader refuses in any document, and where it says so (these were
// the cases of klt's YAML loader, which this package replaced).
func TestReadNode(t *testing.T) {
	for in, want := range map[string]string{
		"a: &a [*a]\n":                       "t.yaml:1:8: an alias inside its own anchor stands for an endless document",
		"Resources: {A: 1, A: 2}\n":          `t.yaml:1:19: mapping key "A" given twice (first at line 1, column 13)`,
		"Resources: {1: a, \"1\": b}\n":      `t.yaml:1:19: mapping key "1" given twice`,
		"k: &k key\n*k : 1\nkey: 2\n":        `t.yaml:3:1: mapping key "key" given twice (first at line 2, column 1)`,
		"a: [x\n":                            "t.yaml: invalid YAML: ",
		"a: " + strings.Repeat("x", 1<<20-2): "t.yaml: more than 1048576 bytes (1 MB, the largest template CloudFormation takes)",
	} {
		_, err := ReadNode("t.yaml", []byte(in))
		if err == nil || !strings.HasPrefix(err.Error(), want) {
			t.Errorf("ReadNode(%.40q): %v; want %s...", in, err, want)
		}
	}
	// The same anchor used many times within the limit is fine, and one key in two mappings.
	ok := "a: &a [x, x, x]\nb: [*a, *a, *a]\nc: {k: 1}\nd: {k: 2}\n"
	if n, err := ReadNode("t.yaml", []byte(ok)); err != nil || n.Get("b").Items[2] != n.Get("a") {
		t.Errorf("ReadNode(%q): %v, %v", ok, n, err)
	}
	if n, err := ReadNode("t.yaml", []byte("# nothing\n")); err != nil || !n.IsNull() || n.Pos.String() != "t.yaml:1:1" {
		t.Errorf("an empty document: %v, %v; want a null node at 1:1", n, err)
	}
	if n, _ := ReadNode("t.yaml", []byte("{a: !Sub x, b: {Fn::Sub: x}, c: x}")); n.Get("a").Written() != "!Sub" || n.Get("b").Written() != "Fn::Sub" || n.Get("c").Written() != "" {
		t.Errorf("Written: %q %q %q", n.Get("a").Written(), n.Get("b").Written(), n.Get("c").Written())
	}
}
