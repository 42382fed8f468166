// Command worker is a fixture of klt lint's tests: it is read, never built.
package main

import (
	"github.com/kafkalambda/toolkit/fanout"
)

func main() {
	_ = fanout.WorkerHandler(nil)
}
