// Package emfout writes CloudWatch Embedded Metric Format lines for the packages that emit
// metrics (batch, fanout).
package emfout

import (
	"io"
	"os"
	"sync"
)

var stdoutMu sync.Mutex // one line at a time on standard output, whichever package writes it

// WriteLine writes one EMF line to w. Lines written to os.Stdout, which CloudWatch Logs reads
// line by line, are written one at a time across every package of the toolkit.
func WriteLine(w io.Writer, line []byte) error {
	if w == os.Stdout {
		stdoutMu.Lock()
		defer stdoutMu.Unlock()
	}
	_, err := w.Write(line)
	return err
}
