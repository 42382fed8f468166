package template

import (
	"errors"
	"reflect"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// evalTemplate has one of everything the evaluator evaluates; the values to evaluate are the
// properties of resource V, one per test.
const evalTemplate = `Parameters:
  Stage: {Type: String, Default: dev}
  Size: {Type: Number, Default: 5}
  Subnets: {Type: CommaDelimitedList, Default: "a, b,c"}
  Zones: {Type: "List<AWS::EC2::AvailabilityZone::Name>", Default: [z1, z2]}
  NoDefault: {Type: String}
Conditions:
  IsProd: !Equals [!Ref Stage, prod]
  IsDev: !Not [!Condition IsProd]
  Both: !And [!Condition IsDev, !Equals [!Ref Size, "5"]]
  Either: {"Fn::Or": [{Condition: IsProd}, !Equals [[a, b], [a, b]]]}
  Loop: !Not [!Condition Loop2]
  Loop2: !Not [!Condition Loop]
  InEU: !Equals [!Ref "AWS::Region", eu-west-1]
Mappings:
  Sizes:
    dev: {Memory: 256, List: [x, y]}
Resources:
  Queue: {Type: AWS::SQS::Queue}
  V:
    Type: Test::Values
    Properties:
      ref: !Ref Stage
      refNum: !Ref Size
      refList: !Ref Subnets
      refList2: !Ref Zones
      refPseudo: !Ref AWS::Region
      refQueue: !Ref Queue
      getAtt: !GetAtt Queue.Arn
      getAttList: {"Fn::GetAtt": [Queue, !Ref Stage]}
      sub: !Sub "${AWS::StackName}-${Stage}-${Queue.Arn}-${!Literal}-${ Stage }"
      subVars: !Sub ["${A}/${B}", {A: !Ref Stage, B: x}]
      join: !Join ["-", [a, !Ref Stage, !Select [1, !Ref Subnets]]]
      select: !Select ["0", [!Ref Stage, b]]
      split: !Split [",", "a,b,,c"]
      ifTrue: !If [IsDev, yes-dev, no]
      ifFalse: !If [IsProd, prod, !Ref AWS::NoValue]
      findInMap: !FindInMap [Sizes, !Ref Stage, Memory]
      findList: !FindInMap [Sizes, dev, List]
      base64: !Base64 hello
      length: !Length [a, b, c]
      toJSON: !ToJsonString {a: [1, x]}
      list: [a, !Ref AWS::NoValue, !If [IsProd, x, !Ref AWS::NoValue], b]
      mapping: {a: 1, gone: !Ref AWS::NoValue, t: true, n: ~}
      noValue: !Ref AWS::NoValue
      # unknown
      importValue: !ImportValue shared
      getAZs: !Select [0, !GetAZs ""]
      noDefault: !Sub "x-${NoDefault}"
      pseudoUnknown: !Ref AWS::NotificationARNs
      # mistakes
      refNothing: !Ref Nothing
      getAttNothing: !GetAtt Nothing.Arn
      selectOut: !Select [5, [a]]
      joinList: !Join ["", [a, [b]]]
      subList: !Sub "${Subnets}"
      subOpen: !Sub "a-${Stage"
      noCondition: !If [Nope, a, b]
      loop: !If [Loop, a, b]
      equalsValue: !Equals [a, a]
      findMissing: !FindInMap [Sizes, prod, Memory]
      ifShape: !If [IsProd, a]
      splitEmpty: !Split ["", abc]
`

// testResources answers for the template's Queue, and says ErrUnknown for anything else.
type testResources struct{}

func (testResources) Ref(r *Resource) (any, error) {
	return "https://queue/" + r.LogicalID, nil
}

func (testResources) GetAtt(r *Resource, attr string) (any, error) {
	if attr == "Arn" || attr == "dev" {
		return "arn:" + attr + ":" + r.LogicalID, nil
	}
	return nil, ErrUnknown
}

func evalValues(t *testing.T) (*Evaluator, *Node) {
	t.Helper()
	tpl, err := Read("t.yaml", []byte(evalTemplate))
	if err != nil {
		t.Fatal(err)
	}
	return &Evaluator{Template: tpl, Pseudo: LocalPseudo(), Resources: testResources{}}, tpl.Resource("V").Properties
}

func TestEval(t *testing.T) {
	ev, props := evalValues(t)
	tests := map[string]any{
		"ref":        "dev",
		"refNum":     "5",
		"refList":    []any{"a", "b", "c"},
		"refList2":   []any{"z1", "z2"},
		"refPseudo":  "us-east-1",
		"refQueue":   "https://queue/Queue",
		"getAtt":     "arn:Arn:Queue",
		"getAttList": "arn:dev:Queue",
		"sub":        "local-dev-arn:Arn:Queue-${Literal}-dev",
		"subVars":    "dev/x",
		"join":       "a-dev-b",
		"select":     "dev",
		"split":      []any{"a", "b", "", "c"},
		"ifTrue":     "yes-dev",
		"ifFalse":    NoValue,
		"findInMap":  "256",
		"findList":   []any{"x", "y"},
		"base64":     "aGVsbG8=",
		"length":     "3",
		"toJSON":     `{"a":["1","x"]}`,
		"list":       []any{"a", "b"},
		"mapping":    map[string]any{"a": "1", "t": "true", "n": nil},
		"noValue":    NoValue,
	}
	for key, want := range tests {
		got, err := ev.Eval(props.Get(key))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("%s = %#v, %v; want %#v", key, got, err, want)
		}
	}
	for name, want := range map[string]bool{"IsProd": false, "IsDev": true, "Both": true, "Either": true, "InEU": false} {
		if got, err := ev.Condition(name, Pos{}); err != nil || got != want {
			t.Errorf("condition %s = %v, %v; want %v", name, got, err, want)
		}
	}
	ev.Parameters = map[string]string{"Stage": "prod", "Subnets": "p,q"}
	ev.conditions = nil // the parameters changed
	if got, err := ev.Eval(props.Get("join")); err != nil || got != "a-prod-q" {
		t.Errorf("join with parameters = %v, %v", got, err)
	}
}

// TestEvalErrors: what cannot be known is ErrUnknown, a mistake is not; both name the place.
func TestEvalErrors(t *testing.T) {
	ev, props := evalValues(t)
	at := regexp.MustCompile(`^t\.yaml:\d+:\d+: `)
	tests := []struct {
		key, err string
		unknown  bool
	}{
		{"importValue", "!ImportValue is an intrinsic function klt cannot evaluate", true},
		{"getAZs", "!GetAZs is an intrinsic function klt cannot evaluate", true},
		{"noDefault", "parameter NoDefault has no Default, and no value was given", true},
		{"pseudoUnknown", "pseudo parameter AWS::NotificationARNs has no value here", true},
		{"refNothing", "Ref Nothing: no such parameter or resource", false},
		{"getAttNothing", "Fn::GetAtt Nothing.Arn: no resource Nothing", false},
		{"selectOut", `Fn::Select: index "5" is not in the list of 1`, false},
		{"joinList", "Fn::Join: item 1 is a list, not a string", false},
		{"subList", "Fn::Sub: ${Subnets} is a list, not a string", false},
		{"subOpen", "Fn::Sub: ${ without its }", false},
		{"noCondition", `no condition "Nope" in Conditions`, false},
		{"loop", `condition "Loop" depends on itself`, false},
		{"equalsValue", "!Equals is a condition function", false},
		{"findMissing", "Fn::FindInMap: no Mappings.Sizes.prod in the template", false},
		{"ifShape", "Fn::If takes [condition name, value if true, value if false]", false},
		{"splitEmpty", "Fn::Split: the delimiter is empty", false},
	}
	for _, tt := range tests {
		v, err := ev.Eval(props.Get(tt.key))
		if err == nil || !strings.Contains(err.Error(), tt.err) || !at.MatchString(err.Error()) {
			t.Errorf("%s = %v, %v; want FILE:LINE:COL: ...%s", tt.key, v, err, tt.err)
			continue
		}
		if errors.Is(err, ErrUnknown) != tt.unknown {
			t.Errorf("%s: errors.Is(%v, ErrUnknown) = %v", tt.key, err, !tt.unknown)
		}
	}
	// A hook's ErrUnknown stays ErrUnknown, at the place of the GetAtt.
	n, _ := ReadNode("u.yaml", []byte("!GetAtt Queue.QueueUrl"))
	if _, err := ev.Eval(n); !errors.Is(err, ErrUnknown) || !strings.HasPrefix(err.Error(), "u.yaml:1:1: Fn::GetAtt Queue.QueueUrl: ") {
		t.Errorf("hook error = %v", err)
	}
	// Without Resources, a resource's value is unknown.
	ev.Resources = nil
	if _, err := ev.Eval(props.Get("refQueue")); !errors.Is(err, ErrUnknown) {
		t.Errorf("Ref of a resource without Resources = %v", err)
	}
}

// TestEvalBounded: a value that doubles at each level stops at MaxText, whatever the depth.
func TestEvalBounded(t *testing.T) {
	src := "Parameters: {P: {Type: String, Default: " + strings.Repeat("x", 1000) + "}}\nResources:\n  R:\n    Properties:\n      V: "
	inner := "!Ref P"
	for range 40 {
		inner = `!Sub ["${a}${a}", {a: ` + inner + `}]`
	}
	tpl, err := Read("t.yaml", []byte(src+inner+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	ev := &Evaluator{Template: tpl}
	if _, err := ev.Eval(tpl.Resource("R").Properties.Get("V")); !errors.Is(err, ErrTooLarge) {
		t.Errorf("doubling Sub = %v, want ErrTooLarge", err)
	}
}

func TestRefs(t *testing.T) {
	_, props := evalValues(t)
	for key, want := range map[string][]string{
		"sub":        {"Stage", "Queue"},
		"subVars":    {"Stage"},
		"getAttList": {"Queue", "Stage"},
		"join":       {"Stage", "Subnets"},
		"refPseudo":  nil,
		"ifFalse":    nil,
		"list":       nil,
	} {
		if got := Refs(props.Get(key)); !slices.Equal(got, want) {
			t.Errorf("Refs(%s) = %v, want %v", key, got, want)
		}
	}
	if got := Refs(props); !slices.Contains(got, "Nothing") || !slices.Contains(got, "NoDefault") {
		t.Errorf("Refs of all = %v", got)
	}
}
