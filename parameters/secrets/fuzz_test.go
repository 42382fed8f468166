package secrets

import (
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/limits"
)

// FuzzSecretID: the ID check never panics, and what it accepts is what GetSecretValue takes:
// not empty, within the length limit, no space or control character.
func FuzzSecretID(f *testing.F) {
	for _, s := range []string{"orders/db", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:orders/db-AbCdEf", "a b", "", strings.Repeat("x", 2049), "\x7f", "é"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if checkSecretID(s) != nil {
			return
		}
		if s == "" || len(s) > limits.MaxSecretsManagerSecretIDBytes || strings.ContainsAny(s, "\x00\n\r\t\x7f ") {
			t.Fatalf("accepted %q", s)
		}
	})
}
