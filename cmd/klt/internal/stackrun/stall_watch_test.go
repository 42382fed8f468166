package stackrun

import (
	"bytes"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// A mapping with lag, nothing in flight and no progress is reported once its window plus
// stallGrace have passed, once per stall; progress, no lag, or an invocation under way end it.
func TestStallWatch(t *testing.T) {
	var w stallWatch
	r := &running{}
	t0 := time.Unix(1000, 0)
	stuck := esm.Snapshot{In: 10, Delivered: 5, Lag: 5}
	window := 2 * time.Second
	steps := []struct {
		at   time.Duration
		s    esm.Snapshot
		want bool
	}{
		{0, stuck, false},
		{window + stallGrace - time.Millisecond, stuck, false},
		{window + stallGrace, stuck, true},
		{window + stallGrace + time.Minute, stuck, false}, // reported once
		{window + stallGrace + 2*time.Minute, esm.Snapshot{In: 10, Delivered: 6, Lag: 4}, false},
		{2*(window+stallGrace) + 2*time.Minute, esm.Snapshot{In: 10, Delivered: 6, Lag: 4}, true}, // stalled again
	}
	for i, st := range steps {
		if got := w.check(r, st.s, window, t0.Add(st.at)); got != st.want {
			t.Errorf("step %d (%v): %v, want %v", i, st.at, got, st.want)
		}
	}
	for _, s := range []esm.Snapshot{{In: 1, Lag: 0}, {In: 1, Lag: 3, InFlight: 3}} {
		var w stallWatch
		w.check(r, s, 0, t0)
		if w.check(r, s, 0, t0.Add(time.Hour)) {
			t.Errorf("%+v reported as a stall", s)
		}
	}
}

func TestWriteGoroutines(t *testing.T) {
	path := filepath.Join(t.TempDir(), "g.txt")
	if err := writeGoroutines(path); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(b, []byte("TestWriteGoroutines")) {
		t.Errorf("the dump does not show this test's goroutine:\n%.500s", b)
	}
}
