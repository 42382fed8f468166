package cfnschema

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/template"
)

// testSchema has one property per construct the checker reads.
const testSchema = `{
  "additionalProperties": false,
  "definitions": {
    "Dest": {"type": "object", "additionalProperties": false, "required": ["Arn"],
             "properties": {"Arn": {"type": "string", "minLength": 3}}}
  },
  "properties": {
    "Name":     {"type": "string", "maxLength": 5, "pattern": "^[a-z]+$"},
    "Size":     {"type": "integer", "minimum": 1, "maximum": 10},
    "Ratio":    {"type": "number"},
    "On":       {"type": "boolean"},
    "Mode":     {"type": "string", "enum": ["A", "B"]},
    "Fixed":    {"const": 7},
    "List":     {"type": "array", "minItems": 1, "maxItems": 2, "items": {"type": "string", "enum": ["x", "y"]}},
    "Dest":     {"$ref": "#/definitions/Dest"},
    "Either":   {"type": "object", "properties": {"P": {"type": "string"}, "Q": {"type": "string"}},
                 "oneOf": [{"required": ["P"]}, {"required": ["Q"]}]},
    "Some":     {"type": "object", "properties": {"P": {"type": "string"}, "Q": {"type": "string"}},
                 "anyOf": [{"required": ["P"]}, {"required": ["Q"]}]},
    "Xor":      {"type": "object", "properties": {"P": {"type": "string"}, "Q": {"type": "string"}},
                 "requiredXor": ["P", "Q"]},
    "Deps":     {"type": "object", "properties": {"P": {"type": "string"}, "Q": {"type": "string"}, "R": {"type": "string"}},
                 "dependencies": {"P": ["Q"]}, "dependentExcluded": {"Q": ["R"]}},
    "Cond":     {"type": "object", "properties": {"Kind": {"type": "string"}, "Url": {"type": "string"}},
                 "if": {"properties": {"Kind": {"const": "web"}}, "required": ["Kind"]}, "then": {"required": ["Url"]}},
    "Map":      {"type": "object", "patternProperties": {"^[a-z]+$": {"type": "integer"}}, "additionalProperties": false},
    "Free":     {"type": "object"},
    "Any":      {}
  },
  "required": ["Size"]
}`

// checkYAML checks props (the Properties of one resource, as YAML indented by 6) against
// testSchema and returns the problems as "LINE:COL PATH: PROBLEM; FIX".
func checkYAML(t *testing.T, props string) []string {
	t.Helper()
	var root map[string]any
	if err := json.Unmarshal([]byte(testSchema), &root); err != nil {
		t.Fatal(err)
	}
	src := "Parameters:\n  Names: {Type: CommaDelimitedList}\n  Ids: {Type: 'List<AWS::EC2::Subnet::Id>'}\n  One: {Type: String}\n" +
		"Conditions:\n  C: !Equals [a, b]\nResources:\n  R:\n    Type: Test::Thing\n    Properties:\n" + props
	tmpl, err := template.Read("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	r := tmpl.Resource("R")
	k := &check{c: New(tmpl), root: root, typ: r.Type}
	k.value(r.Properties, root, "Properties")
	var out []string
	for _, p := range k.problems {
		s := fmt.Sprintf("%d:%d %s: %s", p.Pos.Line-10, p.Pos.Col, p.Path, p.Problem)
		if p.Fix != "" {
			s += "; " + p.Fix
		}
		out = append(out, s)
	}
	return out
}

func TestCheck(t *testing.T) {
	tests := []struct {
		name, props string
		want        []string // lines counted from the first line of props; a problem of the
		// whole Properties is at its first key here (Checker.Resource moves it to the key
		// Properties, TestResource)
	}{
		{"good", "      Size: 5\n      Name: abc\n      Ratio: 1.5\n      On: true\n      Mode: A\n      Fixed: 7\n      List: [x]\n      Free: {A: 1}\n      Any: [1]\n", nil},
		{"scalars as CloudFormation reads them", "      Size: '5'\n      On: 'False'\n      Ratio: '2'\n      Name: 12\n", nil},
		{"unknown, did you mean", "      Size: 1\n      Sise: 1\n      mode: A\n",
			[]string{"2:7 Properties.Sise: unknown Test::Thing property Sise; did you mean Size?", "3:7 Properties.mode: unknown Test::Thing property mode; did you mean Mode?"}},
		{"unknown, far from every name", "      Size: 1\n      Zzzzzzzz: 1\n", []string{"2:7 Properties.Zzzzzzzz: unknown Test::Thing property Zzzzzzzz"}},
		{"unknown inside a definition", "      Size: 1\n      Dest: {Arn: abc, Arm: x}\n", []string{"2:24 Properties.Dest.Arm: unknown property Arm; did you mean Arn?"}},
		{"required", "      Name: abc\n", []string{"1:7 Properties: missing required property Size; add Size"}},
		{"types", "      Size: x\n      On: maybe\n      Ratio: [1]\n      Name: {a: b}\n      List: x\n      Free: x\n", []string{
			`1:7 Properties.Size: got "x", want integer`, `2:7 Properties.On: got "maybe", want boolean`,
			"3:7 Properties.Ratio: got a list, want number", "4:7 Properties.Name: got a mapping, want string",
			`5:7 Properties.List: got "x", want array`, `6:7 Properties.Free: got "x", want object`}},
		{"enum and const", "      Size: 1\n      Mode: C\n      Fixed: 8\n", []string{
			`2:7 Properties.Mode: "C" is not one of the allowed values; use one of A, B`, `3:7 Properties.Fixed: "8" is not the one allowed value; use 7`}},
		{"ranges and lengths", "      Size: 11\n      Name: abcdef\n", []string{
			"1:7 Properties.Size: 11 is over the maximum 10", "2:7 Properties.Name: a string of 6 characters is longer than 5"}},
		{"pattern", "      Size: 1\n      Name: AB\n", []string{`2:7 Properties.Name: "AB" does not match the pattern ^[a-z]+$`}},
		{"array lengths and items", "      Size: 1\n      List: []\n      Free: {}\n", []string{"2:7 Properties.List: 0 items, want at least 1"}},
		{"array too long, bad item", "      Size: 1\n      List: [x, y, z]\n", []string{
			"2:7 Properties.List: 3 items, want at most 2", `2:20 Properties.List[2]: "z" is not one of the allowed values; use one of x, y`}},
		{"$ref", "      Size: 1\n      Dest: {}\n", []string{"2:7 Properties.Dest: missing required property Arn; add Arn"}},
		{"$ref, value", "      Size: 1\n      Dest: {Arn: ab}\n", []string{`2:14 Properties.Dest.Arn: "ab" is shorter than 3 characters`}},
		{"oneOf both", "      Size: 1\n      Either: {P: a, Q: b}\n", []string{"2:7 Properties.Either: only one of P, Q may be set; remove all but one"}},
		{"oneOf none", "      Size: 1\n      Either: {}\n", []string{"2:7 Properties.Either: needs one of P, Q; add one of them"}},
		{"oneOf one", "      Size: 1\n      Either: {Q: b}\n", nil},
		{"anyOf", "      Size: 1\n      Some: {}\n      Either: {P: a}\n", []string{"2:7 Properties.Some: needs one of P, Q; add one of them"}},
		{"anyOf both", "      Size: 1\n      Some: {P: a, Q: b}\n", nil},
		{"requiredXor", "      Size: 1\n      Xor: {P: a, Q: b}\n", []string{"2:19 Properties.Xor: only one of P, Q may be set; remove all but one"}},
		{"dependencies", "      Size: 1\n      Deps: {P: a}\n", []string{"2:14 Properties.Deps.P: P needs Q; add Q, or remove P"}},
		{"dependentExcluded", "      Size: 1\n      Deps: {Q: a, R: b}\n", []string{"2:20 Properties.Deps.R: Q and R cannot both be set; remove one of them"}},
		{"if then", "      Size: 1\n      Cond: {Kind: web}\n", []string{"2:7 Properties.Cond: missing required property Url; add Url"}},
		{"if, else", "      Size: 1\n      Cond: {Kind: ftp}\n", nil},
		{"patternProperties", "      Size: 1\n      Map: {ab: 1, cd: x, X1: 2}\n", []string{
			`2:20 Properties.Map.cd: got "x", want integer`, "2:27 Properties.Map.X1: unknown property X1"}},
		{"intrinsics of the right kind", "      Size: !Ref One\n      Name: !Sub '${One}'\n      List: !Ref Names\n      Free: !GetAtt X.Y\n" +
			"      Dest: !FindInMap [M, a, b]\n      Ratio: !Select [0, !Ref Names]\n      Mode: !Join ['', [A]]\n      On: !ImportValue x\n", nil},
		{"list parameter where a string is wanted", "      Size: 1\n      Name: !Ref Ids\n", []string{"2:7 Properties.Name: !Ref gives a list, want string"}},
		{"string where a list is wanted", "      Size: 1\n      List: !Ref One\n      Free: !Sub x\n", []string{
			"2:7 Properties.List: !Ref gives a string, want array", "3:7 Properties.Free: !Sub gives a string, want object"}},
		{"list functions", "      Size: 1\n      List: !Split [',', a]\n      Name: !GetAZs ''\n", []string{"3:7 Properties.Name: !GetAZs gives a list, want string"}},
		{"Fn::If checks both branches", "      Size: !If [C, 3, 30]\n      Mode: !If [C, A, !Ref AWS::NoValue]\n", []string{"1:24 Properties.Size: 30 is over the maximum 10"}},
		{"list items", "      Size: 1\n      List: [!Ref One, !If [C, x, w]]\n", []string{
			`2:35 Properties.List[1]: "w" is not one of the allowed values; use one of x, y`}},
		{"AWS::NoValue is absent", "      Size: !Ref AWS::NoValue\n      Sise: !Ref AWS::NoValue\n", []string{"1:7 Properties: missing required property Size; add Size"}},
		{"Fn::Transform beside properties", "      Size: 1\n      Fn::Transform: {Name: AWS::Include}\n", nil},
		{"Properties an intrinsic", "      Fn::If: [C, {Size: 1}, {Size: 0}]\n", []string{"1:31 Properties.Size: 0 is under the minimum 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := checkYAML(t, tt.props)
			if strings.Join(got, "\n") != strings.Join(tt.want, "\n") {
				t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(tt.want, "\n  "))
			}
		})
	}
}

// TestResource checks resources against the vendored schemas: the three misspellings of
// issue 18, a required property missing where there are no Properties, and a type klt has
// no schema of.
func TestResource(t *testing.T) {
	src := `Resources:
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: f
      MaximumBatchingWindowInSecond: 5
      FunctionResponseType: [ReportBatchItemFailures]
  Queue:
    Type: AWS::SQS::Queue
    Properties:
      VisiblityTimeout: 60
  Table:
    Type: AWS::DynamoDB::Table
  Key:
    Type: AWS::KMS::Key
  Fn:
    Type: AWS::Serverless::Function
`
	tmpl, err := template.Read("t.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	c := New(tmpl)
	var got []string
	for _, r := range tmpl.Resources {
		probs, err := c.Resource(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range probs {
			got = append(got, fmt.Sprintf("%s %s %s: %s; %s", p.Pos, r.LogicalID, p.Path, p.Problem, p.Fix))
		}
	}
	want := []string{
		"t.yaml:6:7 Mapping Properties.MaximumBatchingWindowInSecond: unknown AWS::Lambda::EventSourceMapping property MaximumBatchingWindowInSecond; did you mean MaximumBatchingWindowInSeconds?",
		"t.yaml:7:7 Mapping Properties.FunctionResponseType: unknown AWS::Lambda::EventSourceMapping property FunctionResponseType; did you mean FunctionResponseTypes?",
		"t.yaml:11:7 Queue Properties.VisiblityTimeout: unknown AWS::SQS::Queue property VisiblityTimeout; did you mean VisibilityTimeout?",
		"t.yaml:12:3 Table Properties: missing required property KeySchema; add KeySchema",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n  %s\nwant\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
	if u := Unchecked(tmpl); strings.Join(u, ",") != "AWS::KMS::Key" {
		t.Errorf("Unchecked = %q, want [AWS::KMS::Key]", u)
	}
}

// TestVendored: the vendored schemas hold the types the toolkit's templates use, and each
// one's $refs resolve.
func TestVendored(t *testing.T) {
	for _, typ := range []string{"AWS::Lambda::EventSourceMapping", "AWS::Lambda::Function", "AWS::SQS::Queue",
		"AWS::SNS::Topic", "AWS::DynamoDB::Table", "AWS::Kinesis::Stream", "AWS::MSK::Cluster", "AWS::IAM::Role",
		"AWS::SecretsManager::Secret", "AWS::EC2::SecurityGroupIngress", "AWS::EC2::Subnet", "AWS::Logs::LogGroup",
		"AWS::CloudWatch::Alarm", "AWS::S3::Bucket", "AWS::Events::Rule", "AWS::Pipes::Pipe", "AWS::Glue::Schema"} {
		if !Known(typ) {
			t.Errorf("no schema of %s", typ)
		}
	}
	all, err := load()
	if err != nil {
		t.Fatal(err)
	}
	for typ, root := range all {
		k := &check{root: root, typ: typ}
		var walk func(v any)
		walk = func(v any) {
			switch v := v.(type) {
			case map[string]any:
				if ref, ok := v["$ref"].(string); ok && len(k.resolve(map[string]any{"$ref": ref})) == 0 {
					t.Errorf("%s: $ref %s does not resolve", typ, ref)
				}
				for _, x := range v {
					walk(x)
				}
			case []any:
				for _, x := range v {
					walk(x)
				}
			}
		}
		walk(root)
	}
}

func TestNearest(t *testing.T) {
	names := []string{"BatchSize", "Enabled", "FunctionResponseTypes", "Topics"}
	for in, want := range map[string]string{"BatchSzie": "BatchSize", "batchsize": "BatchSize", "Topic": "Topics",
		"Enable": "Enabled", "Queues": "", "X": "", "FunctionResponseType": "FunctionResponseTypes"} {
		if got := nearest(in, names); got != want {
			t.Errorf("nearest(%q) = %q, want %q", in, got, want)
		}
	}
}
