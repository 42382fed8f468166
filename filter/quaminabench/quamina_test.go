package quaminabench_test

import (
	"slices"
	"testing"

	"quamina.net/go/quamina/v2"

	"github.com/kafkalambda/toolkit/filter"
)

// benchPatterns and benchDocs are filter's (filter/benchdocs_test.go), which
// scripts/bench-quamina copies beside this file.

// newQuamina returns a Quamina holding benchPatterns, each under its index.
func newQuamina(tb testing.TB) *quamina.Quamina {
	tb.Helper()
	q, err := quamina.New()
	if err != nil {
		tb.Fatal(err)
	}
	for i, p := range benchPatterns {
		if err := q.AddPattern(i, p); err != nil {
			tb.Fatalf("Quamina rejects %s: %v", p, err)
		}
	}
	return q
}

// quaminaWhich appends to dst, in increasing order, the indexes of the patterns Quamina
// matches doc with: the answer Criteria.Which gives.
func quaminaWhich(q *quamina.Quamina, doc []byte, dst []int) ([]int, error) {
	ms, err := q.MatchesForEvent(doc)
	if err != nil {
		return dst, err
	}
	start := len(dst)
	for _, m := range ms {
		dst = append(dst, m.(int))
	}
	slices.Sort(dst[start:])
	return dst, nil
}

// TestAgreement checks that Criteria.Which and Quamina find the same matches on every
// benchmark document, so that BenchmarkQuamina compares equal work.
func TestAgreement(t *testing.T) {
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		t.Fatal(err)
	}
	q := newQuamina(t)
	var got, want []int
	for i, d := range benchDocs() {
		if got, err = c.Which(d, got[:0]); err != nil {
			t.Fatalf("doc %d: Which: %v", i, err)
		}
		if want, err = quaminaWhich(q, d, want[:0]); err != nil {
			t.Fatalf("doc %d: Quamina: %v", i, err)
		}
		if !slices.Equal(got, want) {
			t.Errorf("doc %d: Which = %v, Quamina = %v\n%s", i, got, want, d)
		}
	}
}

// BenchmarkQuamina finds which of the five benchPatterns each of the 1000 benchDocs matches,
// one document per iteration (ns/op and allocs/op are per event), as filter's BenchmarkMatch
// does:
//
//   - impl=toolkit: filter.Criteria.Which, the loop of BenchmarkMatch's impl=toolkit;
//   - impl=quamina: MatchesForEvent on a quamina.Quamina holding the five patterns.
func BenchmarkQuamina(b *testing.B) {
	docs := benchDocs()
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		b.Fatal(err)
	}
	q := newQuamina(b)
	run := func(which func(doc []byte, dst []int) ([]int, error)) func(*testing.B) {
		return func(b *testing.B) {
			b.ReportAllocs()
			dst := make([]int, 0, len(benchPatterns))
			n, matched := 0, 0
			for b.Loop() {
				var err error
				dst, err = which(docs[n%len(docs)], dst[:0])
				if err != nil {
					b.Fatal(err)
				}
				matched += len(dst)
				n++
			}
			if matched == 0 {
				b.Fatal("nothing matched")
			}
		}
	}
	b.Run("impl=toolkit", run(c.Which))
	b.Run("impl=quamina", run(func(doc []byte, dst []int) ([]int, error) { return quaminaWhich(q, doc, dst) }))
}
