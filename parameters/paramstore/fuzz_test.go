package paramstore

import (
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/limits"
)

// FuzzNames: the name checks never panic, and what they accept is what SSM takes: not empty,
// within the length limit, no space or control character; a path starts with "/".
func FuzzNames(f *testing.F) {
	for _, s := range []string{"/app/db/url", "name", "arn:aws:ssm:eu-west-1:123456789012:parameter/app/x", "a b", "/", "", "x:3", strings.Repeat("/a", 20), "\x7f", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, check := range []func(string) error{checkSSMName, checkSSMPath} {
			if check(s) != nil {
				continue
			}
			if s == "" || len(s) > limits.MaxSSMParameterNameBytes || strings.ContainsAny(s, "\x00\n\r\t\x7f ") {
				t.Fatalf("accepted %q", s)
			}
		}
		if checkSSMPath(s) == nil && !strings.HasPrefix(s, "/") {
			t.Fatalf("path %q accepted without a leading /", s)
		}
	})
}
