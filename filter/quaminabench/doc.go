// Package quaminabench measures package filter against Quamina (github.com/timbray/quamina,
// quamina.net/go/quamina/v2), the fastest EventBridge-pattern matcher in Go, in one test
// binary: BenchmarkQuamina runs filter.Criteria.Which and Quamina's MatchesForEvent on the
// five patterns and 1,000 documents of filter's BenchmarkMatch, and TestAgreement checks that
// both find the same matches on every document.
//
// The module is apart from the toolkit's, since the Go module proxy does not serve Quamina:
// scripts/bench-quamina QUAMINA_DIR copies it to a scratch directory, points it at the
// Quamina checkout, copies in filter/benchdocs_test.go (benchPatterns, benchDocs), and runs
// interleaved rounds summarised by benchstat. See README.md.
package quaminabench
