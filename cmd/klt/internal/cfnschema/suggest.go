package cfnschema

import (
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/suggest"
)

// nearest returns the name of names nearest to s: one that differs only in case, else the
// closest by edit distance when it is close enough to be a slip (at most 3 edits, and at most
// a third of s), else "".
func nearest(s string, names []string) string {
	best, bestD := "", 4
	for _, name := range names {
		if strings.EqualFold(name, s) {
			return name
		}
		if d := suggest.Distance(strings.ToLower(s), strings.ToLower(name)); d < bestD && 3*d <= len(s) {
			best, bestD = name, d
		}
	}
	return best
}
