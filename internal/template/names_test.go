package template

import (
	"strings"
	"testing"
)

// TestLogicalIDs: Read refuses, at the name's place, a logical ID CloudFormation refuses (a
// resource's, a parameter's, an output's, a SAM event's): anything but A-Za-z0-9, or over
// 255 characters; it takes the longest alphanumeric one.
func TestLogicalIDs(t *testing.T) {
	fn := func(events string) string {
		return "Resources:\n  Fn:\n    Type: AWS::Serverless::Function\n    Properties:\n      Events:\n        " + events + ":\n          Type: SQS\n"
	}
	for _, tc := range []struct{ name, doc, want string }{
		{"make assignment", "Resources:\n  \"x:=$(shell touch F)\":\n    Type: AWS::SQS::Queue\n", "t.yaml:2:3: the resource logical ID \"x:=$(shell touch F)\" is not alphanumeric"},
		{"path", "Resources:\n  Fn/../../x:\n    Type: AWS::SQS::Queue\n", "t.yaml:2:3: the resource logical ID"},
		{"dash", "Resources:\n  My-Queue:\n    Type: AWS::SQS::Queue\n", "t.yaml:2:3:"},
		{"too long", "Resources:\n  " + strings.Repeat("Q", 256) + ":\n    Type: AWS::SQS::Queue\n", "of 256 characters is too long"},
		{"parameter", "Parameters:\n  A=b:\n    Type: String\nResources:\n  Q:\n    Type: AWS::SQS::Queue\n", "t.yaml:2:3: the parameter logical ID"},
		{"output", "Resources:\n  Q:\n    Type: AWS::SQS::Queue\nOutputs:\n  Q_Url:\n    Value: x\n", "t.yaml:5:3: the output logical ID"},
		{"event", fn("Work.Queue"), "t.yaml:6:9: the event logical ID"},
		{"empty", "Resources:\n  \"\":\n    Type: AWS::SQS::Queue\n", "not alphanumeric"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Read("t.yaml", []byte(tc.doc))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read: %v, want %q", err, tc.want)
			}
		})
	}
	if _, err := Read("t.yaml", []byte("Resources:\n  "+strings.Repeat("Q", 255)+":\n    Type: AWS::SQS::Queue\n"+fn("Work1")[len("Resources:\n"):])); err != nil {
		t.Fatalf("a 255-character alphanumeric ID: %v", err)
	}
}
