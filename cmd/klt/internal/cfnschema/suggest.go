package cfnschema

import "strings"

// nearest returns the name of names nearest to s: one that differs only in case, else the
// closest by edit distance when it is close enough to be a slip (at most 3 edits, and at most
// a third of s), else "".
func nearest(s string, names []string) string {
	best, bestD := "", 4
	for _, name := range names {
		if strings.EqualFold(name, s) {
			return name
		}
		if d := distance(strings.ToLower(s), strings.ToLower(name)); d < bestD && 3*d <= len(s) {
			best, bestD = name, d
		}
	}
	return best
}

// distance is the Levenshtein distance of a and b, in bytes (property names are ASCII).
func distance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
