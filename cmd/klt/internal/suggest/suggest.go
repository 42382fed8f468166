// Package suggest measures how far apart two names are, for the "did you mean" hints of
// klt's messages (a misspelt record-line field, a misspelt CloudFormation property).
package suggest

import "math"

// maxLen is the longest name Distance measures: longer names are never slips of a field or
// property name, so they count as far away without the quadratic work.
const maxLen = 64

// Distance is the Levenshtein distance between a and b, in bytes (the names it compares are
// ASCII), or math.MaxInt when either is longer than 64 bytes.
func Distance(a, b string) int {
	if len(a) > maxLen || len(b) > maxLen {
		return math.MaxInt
	}
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
