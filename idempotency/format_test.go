package idempotency

import (
	"crypto/md5"
	"testing"

	"github.com/kafkalambda/toolkit/internal/completion"
)

// TestFormatDigest checks Digest against the IDs the store writes (config.id, with the
// default hash) and against the digests Python's hashlib gives for json.dumps("orders-0-42"):
// md5 hex 524c0e2c37707af4f090042a2c5af8d9, base64 UkwOLDdwevTwkAQqLFr42Q==.
func TestFormatDigest(t *testing.T) {
	c := &config{prefix: "fn", newHash: md5.New}
	for f, want := range map[Format]string{FormatPython: "524c0e2c37707af4f090042a2c5af8d9", FormatTypeScript: "UkwOLDdwevTwkAQqLFr42Q=="} {
		got, err := f.Digest("orders-0-42")
		if err != nil || got != want {
			t.Errorf("%v.Digest = %q, %v; want %q", f, got, err, want)
		}
		id, err := c.id(f, "orders-0-42")
		if err != nil || id != "fn#"+got {
			t.Errorf("%v: the store writes %q (%v), Digest gives %q", f, id, err, got)
		}
	}
}

// A completion under WithoutResult stores a non-empty completion.Outcome, and nothing for any
// other result.
func TestOutcomeData(t *testing.T) {
	for _, c := range []struct {
		result any
		want   string
	}{{completion.Sunk, `{"outcome":"sunk"}`}, {completion.Outcome(""), ""}, {struct{}{}, ""}, {"sunk", ""}} {
		if got := outcomeData(c.result); got != c.want {
			t.Errorf("outcomeData(%#v) = %q, want %q", c.result, got, c.want)
		}
	}
}
