//go:build race

package filter_test

// The race detector slows code down five to tenfold: the time bounds of the fuzz and
// bounded-work tests stretch with it.
func init() { slowInput *= 10 }
