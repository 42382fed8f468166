package stackrun

import (
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// stallGrace is how long a Kafka mapping may have records waiting (lag), none in an
// invocation, and make no progress past its batching window before klt local says so: a
// retry's backoff is at most 1 s, so nothing of the mapping's own should keep it waiting
// this long. The mapping stalled four times in earlier rounds; the last stall was not looked
// at, so klt now writes every goroutine's stack when it sees one.
const stallGrace = 60 * time.Second

// stallWatch notices mappings that stall, once per stall.
type stallWatch struct {
	marks map[*running]*stallMark
}

type stallMark struct {
	progress [7]int64 // the counters that move when the mapping does
	since    time.Time
	reported bool
}

// check reports whether the Kafka mapping of r, whose counters are s at now, has just been
// seen stalled: lag, nothing in flight, and the same counters for its batching window (window)
// plus stallGrace. It reports a stall once; progress ends it.
func (w *stallWatch) check(r *running, s esm.Snapshot, window time.Duration, now time.Time) bool {
	if w.marks == nil {
		w.marks = map[*running]*stallMark{}
	}
	progress := [7]int64{s.In, s.Delivered, s.Succeeded, s.DeadLettered, s.Filtered, s.Invocations, s.Errors}
	m := w.marks[r]
	if m == nil || m.progress != progress || s.Lag == 0 || s.InFlight != 0 {
		w.marks[r] = &stallMark{progress: progress, since: now}
		return false
	}
	if m.reported || now.Sub(m.since) < max(window, 0)+stallGrace {
		return false
	}
	m.reported = true
	return true
}

// watchStalls checks the phase's Kafka mappings; for one that stalled it writes every
// goroutine's stack into the log directory and says where.
func (s *stack) watchStalls(w *stallWatch, phase string, runs []*running, now time.Time) {
	for _, r := range runs {
		if r.kafka == nil {
			continue
		}
		snap := r.counters.Snapshot()
		if !w.check(r, snap, r.spec.Window, now) {
			continue
		}
		path := filepath.Join(s.logDir, fmt.Sprintf("stall-%s-%s-%s.txt", phase, r.spec.Id, now.UTC().Format("150405")))
		err := writeGoroutines(path)
		if err != nil {
			path = fmt.Sprintf("(not written: %v)", err)
		}
		fmt.Fprintf(s.out, "klt local: mapping %s: %d records waiting, none in an invocation, and no progress for %v: the mapping stalled; its goroutines: %s (please report it)\n",
			r.spec.Id, snap.Lag, now.Sub(w.marks[r].since).Round(time.Second), path)
	}
}

// writeGoroutines writes every goroutine's stack (pprof's goroutine profile, debug=2) to path.
func writeGoroutines(path string) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := pprof.Lookup("goroutine").WriteTo(f, 2); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
