package suggest

import (
	"math"
	"strings"
	"testing"
)

func TestDistance(t *testing.T) {
	long := strings.Repeat("a", 65)
	for _, c := range []struct {
		a, b string
		want int
	}{
		{"", "", 0},
		{"topic", "topic", 0},
		{"topc", "topic", 1},
		{"VisiblityTimeout", "VisibilityTimeout", 1},
		{"kitten", "sitting", 3},
		{"", "abc", 3},
		{long, "a", math.MaxInt},
		{"a", long, math.MaxInt},
	} {
		if got := Distance(c.a, c.b); got != c.want {
			t.Errorf("Distance(%q, %q) = %d, want %d", c.a, c.b, got, c.want)
		}
	}
}
