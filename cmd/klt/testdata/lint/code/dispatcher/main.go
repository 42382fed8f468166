// Command dispatcher is a fixture of klt lint's tests: it is read, never built.
package main

import (
	"os"

	"github.com/kafkalambda/toolkit/fanout"
)

func main() {
	d, err := fanout.NewDispatcher(nil, os.Getenv("WORK_QUEUE_URL"))
	_, _ = d, err
}
