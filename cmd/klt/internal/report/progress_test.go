package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// fakeClock is a clock a test moves by hand.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time      { return c.t }
func (c *fakeClock) add(d time.Duration) { c.t = c.t.Add(d) }
func newClock() *fakeClock               { return &fakeClock{time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)} }

// syncBuffer is a bytes.Buffer safe for the Progress goroutine and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestProgressPlainHasNoEscapes(t *testing.T) {
	var c esm.Counters
	var out syncBuffer
	p, err := NewProgress(&out, func() []MappingStatus {
		c.In.Add(10)
		c.Succeeded.Add(5)
		return []MappingStatus{{Name: "ConsumerSelfManagedMapping", Snapshot: c.Snapshot()}}
	}, PlainEvery(300*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if p.terminal {
		t.Fatal("a bytes buffer was taken for a terminal")
	}
	p.Start()
	time.Sleep(800 * time.Millisecond)
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if strings.ContainsAny(got, "\x1b\r") {
		t.Errorf("plain progress has escape codes or carriage returns: %q", got)
	}
	blocks := strings.Count(got, "mappings at ")
	if blocks < 3 || blocks > 5 {
		t.Errorf("%d blocks in 800 ms at one per 300 ms, plus first and final; want 3 to 5:\n%s", blocks, got)
	}
	if n := strings.Count(got, "ConsumerSelfManagedMapping"); n != blocks {
		t.Errorf("%d mapping lines for %d blocks", n, blocks)
	}
	lines := strings.Split(strings.TrimSpace(got), "\n")
	for _, col := range []string{"delivered", "succeeded", "in flight", "lag", "succeeded/s"} {
		if !strings.Contains(lines[0], col) {
			t.Errorf("header %q lacks column %q", lines[0], col)
		}
	}
}

// A file that is not a character device (a log file, a pipe's destination) gets plain lines.
func TestProgressFileIsNotATerminal(t *testing.T) {
	f, err := os.Create(t.TempDir() + "/log")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if isTerminal(f) {
		t.Error("a regular file was taken for a terminal")
	}
	p, err := NewProgress(f, func() []MappingStatus { return nil })
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(f.Name())
	if bytes.ContainsRune(b, '\x1b') || !bytes.Contains(b, []byte("mappings at")) {
		t.Errorf("Stop wrote %q", b)
	}
}

func TestProgressTerminalRedrawsInPlace(t *testing.T) {
	clk := newClock()
	n := 2
	var out bytes.Buffer
	p, err := NewProgress(&out, func() []MappingStatus {
		st := []MappingStatus{{Name: "A"}, {Name: "B"}, {Name: "C"}}
		return st[:n]
	}, Terminal(true))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t

	p.tick(false)
	first := out.String()
	if regexp.MustCompile(`\x1b\[\d+A`).MatchString(first) {
		t.Errorf("first block moves the cursor up: %q", first)
	}
	if got := strings.Count(first, "\x1b[2K"); got != 3 {
		t.Errorf("first block clears %d lines, want 3 (header + 2)", got)
	}
	out.Reset()
	n = 3
	clk.add(250 * time.Millisecond)
	p.tick(false)
	if got := out.String(); !strings.HasPrefix(got, "\x1b[3A") || strings.Count(got, "\x1b[2K") != 4 {
		t.Errorf("second block: %q, want cursor up 3 then 4 cleared lines", got)
	}
	out.Reset()
	n = 1
	clk.add(250 * time.Millisecond)
	p.tick(false)
	// Up 4, two lines drawn, two stale lines cleared, back up 2.
	if got := out.String(); !strings.HasPrefix(got, "\x1b[4A") || !strings.HasSuffix(got, "\r\x1b[2K\n\r\x1b[2K\n\x1b[2A") {
		t.Errorf("shrinking block: %q", got)
	}
}

func TestProgressRateOverLastSecond(t *testing.T) {
	clk := newClock()
	var done atomic.Int64
	var out bytes.Buffer
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "M", Snapshot: esm.Snapshot{Succeeded: done.Load()}}}
	}, Terminal(false), PlainEvery(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t
	// 10 records per 250 ms (40/s) for two seconds, then 5 per 250 ms (20/s).
	for range 8 {
		p.tick(false)
		clk.add(250 * time.Millisecond)
		done.Add(10)
	}
	for range 4 {
		p.tick(false)
		clk.add(250 * time.Millisecond)
		done.Add(5)
	}
	out.Reset()
	p.tick(false)
	if !strings.Contains(out.String(), " 20.0") {
		t.Errorf("rate after a second at 20/s:\n%s", out.String())
	}
}

// A mapping that starts again under the same name (klt local's next phase) starts its counts
// at zero: its rate is never negative.
func TestProgressRateAfterCounterRestart(t *testing.T) {
	clk := newClock()
	var done atomic.Int64
	var out bytes.Buffer
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "M", Snapshot: esm.Snapshot{Succeeded: done.Load()}}}
	}, Terminal(false), PlainEvery(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t
	for range 8 {
		p.tick(false)
		clk.add(250 * time.Millisecond)
		done.Add(10)
	}
	done.Store(0)
	for range 2 {
		p.tick(false)
		clk.add(250 * time.Millisecond)
	}
	out.Reset()
	p.tick(false)
	if strings.Contains(out.String(), "-") {
		t.Errorf("negative rate after the counter restarted:\n%s", out.String())
	}
}

type failingWriter struct{}

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("disk full") }

func TestProgressReportsWriteError(t *testing.T) {
	p, err := NewProgress(failingWriter{}, func() []MappingStatus { return nil })
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	err = p.Stop()
	if err == nil || !strings.Contains(err.Error(), "disk full") {
		t.Errorf("Stop = %v, want the write error", err)
	}
	if err2 := p.Stop(); err2 != err {
		t.Errorf("second Stop = %v, want %v", err2, err)
	}
}

func TestRecorderSeries(t *testing.T) {
	var done [3]int64
	var lag int64 = 100
	rec, err := NewRecorder(func() []MappingStatus {
		return []MappingStatus{
			{Name: "DirectMapping", Function: "ConsumerFunction", Snapshot: esm.Snapshot{Succeeded: done[0], Lag: lag}},
			{Name: "WorkerMappingA", Function: "WorkerFunction", Snapshot: esm.Snapshot{Succeeded: done[1]}},
			{Name: "WorkerMappingB", Function: "WorkerFunction", Snapshot: esm.Snapshot{Succeeded: done[2]}},
		}
	}, WithPartitionLag(func() map[string]int64 { return map[string]int64{"orders-0": lag, "orders-1": lag / 2} }))
	if err != nil {
		t.Fatal(err)
	}
	clk := newClock()
	rec.start = clk.t
	// Every 500 ms: direct does 8 (16/s), each worker mapping 100 (200/s, 400/s together).
	for range 7 {
		rec.record(clk.t)
		clk.add(500 * time.Millisecond)
		done[0] += 8
		done[1] += 100
		done[2] += 100
		lag -= 10
	}
	s := rec.Series()
	c := s.Throughput["ConsumerFunction"]
	w := s.Throughput["WorkerFunction"]
	if len(c) != 7 || len(w) != 7 || len(s.Throughput) != 2 {
		t.Fatalf("throughput series: %v", s.Throughput)
	}
	if c[0] != (Point{0, 0}) {
		t.Errorf("first point %v, want [0 0]", c[0])
	}
	if c[6] != (Point{3, 16}) {
		t.Errorf("direct at 3 s: %v, want [3 16]", c[6])
	}
	if w[6] != (Point{3, 400}) {
		t.Errorf("workers at 3 s: %v, want the sum of both mappings, [3 400]", w[6])
	}
	if l := s.Lag["orders-1"]; len(l) != 7 || l[0] != (Point{0, 50}) || l[6] != (Point{3, 20}) {
		t.Errorf("orders-1 lag: %v", l)
	}
	m := rec.Mappings()
	if got := m["DirectMapping"]; got.Function != "ConsumerFunction" || got.Lag[6] != (Point{3, 40}) || got.Throughput[6] != (Point{3, 16}) {
		t.Errorf("DirectMapping series: %+v", got)
	}
	if got := m["WorkerMappingB"].Throughput[6]; got != (Point{3, 200}) {
		t.Errorf("WorkerMappingB throughput at 3 s: %v, want [3 200]", got)
	}
}

func TestRecorderRuns(t *testing.T) {
	var c esm.Counters
	rec, err := NewRecorder(func() []MappingStatus {
		c.Succeeded.Add(1)
		return []MappingStatus{{Name: "M", Function: "F", Snapshot: c.Snapshot()}}
	}, WithInterval(250*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	rec.Start()
	time.Sleep(600 * time.Millisecond)
	rec.Stop()
	rec.Stop()
	pts := rec.Series().Throughput["F"]
	// t = 0, 0.25, 0.5 and the final sample at about 0.6.
	if len(pts) < 3 || len(pts) > 5 {
		t.Fatalf("%d samples in 600 ms at 250 ms: %v", len(pts), pts)
	}
	for i := 1; i < len(pts); i++ {
		if pts[i][0] <= pts[i-1][0] {
			t.Errorf("times not increasing: %v", pts)
		}
	}
}

func TestRecorderOptions(t *testing.T) {
	sample := func() []MappingStatus { return nil }
	for _, d := range []time.Duration{0, 100 * time.Millisecond, 2 * time.Second} {
		if _, err := NewRecorder(sample, WithInterval(d)); err == nil {
			t.Errorf("WithInterval(%v): no error", d)
		}
	}
	if _, err := NewRecorder(sample, WithPartitionLag(nil)); err == nil {
		t.Error("WithPartitionLag(nil): no error")
	}
	if _, err := NewRecorder(nil); err == nil {
		t.Error("NewRecorder(nil): no error")
	}
}

func TestNewProgressRejectsNil(t *testing.T) {
	if _, err := NewProgress(nil, func() []MappingStatus { return nil }); err == nil {
		t.Error("nil writer: no error")
	}
	if _, err := NewProgress(&bytes.Buffer{}, nil); err == nil {
		t.Error("nil sample: no error")
	}
}

// TestProgressWriteBetweenBlocks writes messages through a running Progress from another
// goroutine, as klt local does: under -race the writer is shared safely, and in plain mode
// every message and every block arrive whole, in the order they were written.
func TestProgressWriteBetweenBlocks(t *testing.T) {
	var out bytes.Buffer // not safe for concurrent use: the Progress must serialise
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "A"}}
	}, Terminal(false), PlainEvery(0))
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			for i := range 50 {
				fmt.Fprintf(p, "klt local: message %d of writer %d\n", i, g)
				time.Sleep(time.Millisecond)
			}
		})
	}
	wg.Wait()
	if err := p.Stop(); err != nil {
		t.Fatal(err)
	}
	msgs := 0
	lines := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
	for i, l := range lines {
		switch l = strings.TrimSpace(l); {
		case strings.HasPrefix(l, "klt local: message "):
			msgs++
		case strings.HasPrefix(l, "mappings at "):
			if i+1 >= len(lines) || !strings.HasPrefix(strings.TrimSpace(lines[i+1]), "A ") {
				t.Errorf("block cut after its header at line %d: %q", i, lines[i:min(i+2, len(lines))])
			}
		case strings.HasPrefix(l, "A "):
		default:
			t.Errorf("line %d mixes a message and a block: %q", i, l)
		}
	}
	if msgs != 200 {
		t.Errorf("%d messages, want 200", msgs)
	}
}

// TestProgressTerminalWriteAboveBlock: on a terminal, a message replaces the block on screen
// and the block is drawn again under it, so the message is neither drawn over nor left inside;
// the next change of a figure redraws the block in place.
func TestProgressTerminalWriteAboveBlock(t *testing.T) {
	clk := newClock()
	var out bytes.Buffer
	var delivered int64
	p, err := NewProgress(&out, func() []MappingStatus {
		return []MappingStatus{{Name: "A", Snapshot: esm.Snapshot{Delivered: delivered}}}
	}, Terminal(true))
	if err != nil {
		t.Fatal(err)
	}
	p.now = clk.now
	p.started = clk.t
	p.tick(false) // two lines on screen
	out.Reset()
	if _, err := io.WriteString(p, "klt local: hello\n"); err != nil {
		t.Fatal(err)
	}
	got := out.String()
	if !strings.HasPrefix(got, "\x1b[2A\r\x1b[Jklt local: hello\n\r\x1b[2K  mappings at ") || strings.Count(got, "\x1b[2K") != 2 {
		t.Errorf("message on a terminal: %q; want up 2, clear, the message, then the block's 2 lines again", got)
	}
	out.Reset()
	clk.add(250 * time.Millisecond)
	delivered++
	p.tick(false)
	if got := out.String(); !strings.HasPrefix(got, "\x1b[2A") {
		t.Errorf("next block: %q; want it redrawn in place, up 2", got)
	}
}
