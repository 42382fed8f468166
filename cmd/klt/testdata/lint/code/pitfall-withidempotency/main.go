// Command pitfall-withidempotency is a fixture of klt lint's tests: it is read, never built.
// It calls batch.WithIdempotency with a store made elsewhere, and names no table.
package main

import "github.com/kafkalambda/toolkit/batch"

func main() {
	_ = batch.WithIdempotency(nil)
}
