// The Quamina comparison of package filter, a module of its own so that the toolkit's
// go.mod never requires Quamina, which the Go module proxy does not serve. Build and run it
// with scripts/bench-quamina QUAMINA_DIR, which points the Quamina replace below at a
// checkout and copies filter's benchmark input in (see README.md).
module github.com/kafkalambda/toolkit/filter/quaminabench

go 1.26.0

require (
	github.com/kafkalambda/toolkit v0.0.0
	quamina.net/go/quamina/v2 v2.0.0
)

replace github.com/kafkalambda/toolkit => ../..

// scripts/bench-quamina replaces this path by the checkout it is given.
replace quamina.net/go/quamina/v2 => ./quamina
