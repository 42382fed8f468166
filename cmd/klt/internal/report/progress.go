package report

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"sync"
	"text/tabwriter"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// MappingStatus is one event source mapping's counters at a moment.
type MappingStatus struct {
	// Name is the mapping's logical ID in the template; progress lines show it.
	Name string
	// Function is the function the mapping invokes; the [Recorder] keys throughput by it.
	Function string
	// Snapshot is a copy of the mapping's counters.
	Snapshot esm.Snapshot
	// FailureQueue counts the records the function sent to its own failure queue so far, as
	// the caller observed them there (the mapping counts them as succeeded); Unobservable
	// when the function has no failure queue the caller reads.
	FailureQueue Count
	// Applied counts the side effects the caller observed so far of the records this mapping
	// delivered (items written, messages sent, requests to the sink); Unobservable when it
	// observes none. The display shows their rate per second, the [Recorder] their series.
	Applied Count
}

// sampleEvery is how often Progress samples the counters, so that its rate covers the last
// second whatever its drawing interval.
const sampleEvery = 250 * time.Millisecond

// Progress is the live display of a run: one line per mapping with its counters, named and
// defined as the report's mappings table names them ([MappingDefinitions]): delivered,
// succeeded, in flight, lag, and, once any mapping's is not 0, failure queue, reported
// failed, error failed, retried, dead-lettered and filtered; then the records succeeded per
// second over the last second and, when the caller observes side effects
// (MappingStatus.Applied), the side effects per second. The counters move per record, as each
// response arrives (esm counts so).
//
// It writes a block only when a figure changed since the last one it wrote: on a terminal it
// redraws the block in place (ANSI cursor-up and clear-line), at most every 250 ms; anywhere
// else it prints the block as plain lines, at most every 2 s (see [PlainEvery]), with no
// escape codes, so that logs and CI output stay readable. An idle stack writes nothing.
//
// A Progress is started once and stopped once; its methods are safe for concurrent use. While
// it runs, write the run's other messages to the same writer through the Progress itself (it
// is an [io.Writer]): each then lands between two blocks, never inside one, whatever goroutine
// writes it.
type Progress struct {
	w          io.Writer
	sample     func() []MappingStatus
	terminal   bool
	plainEvery time.Duration

	mu         sync.Mutex
	started    time.Time
	history    map[string][]doneAt // per mapping, samples of Succeeded over the last second or so
	appHistory map[string][]doneAt // per mapping, samples of Applied
	shown      string              // the figures of the block last written (see render)
	drawn      int                 // lines of the block on screen (terminal mode)
	block      []string            // the lines of the block on screen (terminal mode)
	lastOut    time.Time           // when the last block was written
	err        error               // first write error

	stop chan struct{}
	done chan struct{}
	once sync.Once
	now  func() time.Time
}

type doneAt struct {
	t    time.Time
	done int64
}

// ProgressOption configures a [Progress].
type ProgressOption func(*Progress)

// Terminal forces terminal mode (redraw in place) on or off. By default it is on when the
// writer is an *os.File on a character device and the TERM environment variable is not
// "dumb", and off otherwise.
func Terminal(on bool) ProgressOption { return func(p *Progress) { p.terminal = on } }

// PlainEvery sets how often at most a Progress not in terminal mode prints a block (it prints
// one only when a figure changed). The default is 2 s; values below 250 ms count as 250 ms,
// the sampling interval.
func PlainEvery(d time.Duration) ProgressOption { return func(p *Progress) { p.plainEvery = d } }

// NewProgress returns a Progress that writes to w the statuses sample returns. sample is
// called from the Progress's own goroutine and must be safe for that. It fails when w or
// sample is nil.
func NewProgress(w io.Writer, sample func() []MappingStatus, opts ...ProgressOption) (*Progress, error) {
	if w == nil {
		return nil, errors.New("report: NewProgress: nil writer")
	}
	if sample == nil {
		return nil, errors.New("report: NewProgress: nil sample function")
	}
	p := &Progress{
		w: w, sample: sample, terminal: isTerminal(w), plainEvery: 2 * time.Second,
		history: map[string][]doneAt{}, appHistory: map[string][]doneAt{}, stop: make(chan struct{}), done: make(chan struct{}),
		now: time.Now,
	}
	for _, o := range opts {
		o(p)
	}
	if p.plainEvery < sampleEvery {
		p.plainEvery = sampleEvery
	}
	return p, nil
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok || os.Getenv("TERM") == "dumb" {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

// Start begins sampling and drawing in a goroutine of its own. It draws the first block at
// once; after that, a block only when a figure changed.
func (p *Progress) Start() {
	p.mu.Lock()
	p.started = p.now()
	p.mu.Unlock()
	p.tick(true)
	go func() {
		defer close(p.done)
		t := time.NewTicker(sampleEvery)
		defer t.Stop()
		for {
			select {
			case <-p.stop:
				return
			case <-t.C:
				p.tick(false)
			}
		}
	}()
}

// Stop ends sampling and prints the final block once (in terminal mode, in place of the live
// one). It returns the first error met writing to w, if any. Calling Stop again does nothing
// and returns the same error.
func (p *Progress) Stop() error {
	p.once.Do(func() {
		close(p.stop)
		p.mu.Lock()
		started := !p.started.IsZero()
		p.mu.Unlock()
		if started {
			<-p.done
		}
		p.tick(true)
	})
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.err
}

// tick samples the mappings and writes a block when a figure changed since the last block
// written and the last one is old enough (250 ms on a terminal, PlainEvery otherwise), or
// when force is set. An idle stack writes nothing.
func (p *Progress) tick(force bool) {
	st := p.sample()
	p.mu.Lock()
	defer p.mu.Unlock()
	now := p.now()
	if p.started.IsZero() {
		p.started = now
	}
	lines, figures := p.render(now, st)
	if p.err != nil {
		return
	}
	every := p.plainEvery
	if p.terminal {
		every = sampleEvery
	}
	if !force && (figures == p.shown || now.Sub(p.lastOut) < every) {
		return
	}
	p.shown, p.lastOut = figures, now
	out := strings.Join(lines, "\n") + "\n"
	if p.terminal {
		out = p.redraw(lines)
	}
	_, err := io.WriteString(p.w, out)
	p.noteErr(err)
}

// Write writes b to the Progress's writer between two blocks: it waits for a block being
// drawn, and no block is drawn while it writes. It returns what the writer returns. A write
// error is also the one Stop returns, if it is the first.
//
// In terminal mode the block on screen moves down under b: it is cleared, b is written where it
// was, and the block is drawn again below (when b ends a line; otherwise at the next tick). Not
// in terminal mode, b is written as it is.
func (p *Progress) Write(b []byte) (int, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !p.terminal || p.drawn == 0 {
		n, err := p.w.Write(b)
		p.noteErr(err)
		return n, err
	}
	var out strings.Builder
	fmt.Fprintf(&out, "\x1b[%dA\r\x1b[J", p.drawn) // up to the block's first line; clear to the end
	p.drawn = 0
	out.Write(b)
	redraw := bytes.HasSuffix(b, []byte("\n"))
	if redraw {
		out.WriteString(p.redraw(p.block))
	}
	_, err := io.WriteString(p.w, out.String())
	p.noteErr(err)
	if err != nil {
		return 0, err
	}
	return len(b), nil
}

// noteErr keeps err as the first write error, if it is one and the first. p.mu is held.
func (p *Progress) noteErr(err error) {
	if err != nil && p.err == nil {
		p.err = fmt.Errorf("report: progress: %w", err)
	}
}

// column is one counter of the live display: its name (the report's, defined in its legend),
// its value for a status, and whether it is shown even while every mapping's value is 0.
type column struct {
	name   string
	always bool
	value  func(m MappingStatus) (v int64, observed bool)
}

func snap(f func(s esm.Snapshot) int64) func(m MappingStatus) (int64, bool) {
	return func(m MappingStatus) (int64, bool) { return f(m.Snapshot), true }
}

// columns are the live display's counters, named as the report's mappings table names them.
// A column that is 0 for every mapping (or unobservable, for the failure queue) is left out
// until it is not, so that the block fits a terminal; delivered, succeeded, in flight and lag
// are always there.
var columns = []column{
	{"delivered", true, snap(func(s esm.Snapshot) int64 { return s.Delivered })},
	{"succeeded", true, snap(func(s esm.Snapshot) int64 { return s.Succeeded })},
	{"failure queue", false, func(m MappingStatus) (int64, bool) { return m.FailureQueue.Value() }},
	{"reported failed", false, snap(func(s esm.Snapshot) int64 { return s.ReportedFailed })},
	{"error failed", false, snap(func(s esm.Snapshot) int64 { return s.ErrorFailed })},
	{"retried", false, snap(func(s esm.Snapshot) int64 { return s.Retried })},
	{"dead-lettered", false, snap(func(s esm.Snapshot) int64 { return s.DeadLettered })},
	{"filtered", false, snap(func(s esm.Snapshot) int64 { return s.Filtered })},
	{"in flight", true, snap(func(s esm.Snapshot) int64 { return s.InFlight })},
	{"lag", true, snap(func(s esm.Snapshot) int64 { return s.Lag })},
}

// render records the sample and returns the block's lines, a header with the elapsed time
// then one line per mapping, and its figures: the lines without the elapsed time, which
// change only when a count or a rate does.
func (p *Progress) render(now time.Time, st []MappingStatus) (lines []string, figures string) {
	var shown []column
	for _, c := range columns {
		show := c.always
		for _, m := range st {
			if v, ok := c.value(m); ok && (v != 0 || c.name == "failure queue") {
				show = true
			}
		}
		if show {
			shown = append(shown, c)
		}
	}
	applied := false
	for _, m := range st {
		applied = applied || m.Applied.IsObserved()
	}
	head := "mappings at " + fmtElapsed(now.Sub(p.started))
	nw := len(head)
	for _, m := range st {
		nw = max(nw, len(m.Name))
	}
	row := func(b io.Writer, name string, cells []string) {
		fmt.Fprintf(b, "%-*s\t%s\t\n", nw, name, strings.Join(cells, "\t"))
	}
	var b strings.Builder
	// Names left-aligned (padded here), counts right-aligned (by the tabwriter).
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	var hdr []string
	for _, c := range shown {
		hdr = append(hdr, c.name)
	}
	hdr = append(hdr, "succeeded/s")
	if applied {
		hdr = append(hdr, "applied/s")
	}
	row(tw, head, hdr)
	fig := []string{strings.Join(hdr, "|")}
	for _, m := range st {
		var cells []string
		for _, c := range shown {
			v, ok := c.value(m)
			cells = append(cells, map[bool]string{true: strconv.FormatInt(v, 10), false: "-"}[ok])
		}
		cells = append(cells, fmtNum(rateOverLastSecond(p.history, now, m.Name, m.Snapshot.Succeeded)))
		if applied {
			if n, ok := m.Applied.Value(); ok {
				cells = append(cells, fmtNum(rateOverLastSecond(p.appHistory, now, m.Name, n)))
			} else {
				cells = append(cells, "-")
			}
		}
		row(tw, m.Name, cells)
		fig = append(fig, m.Name+"|"+strings.Join(cells, "|"))
	}
	tw.Flush()
	lines = strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	for i, l := range lines {
		lines[i] = strings.TrimRight(l, " ")
	}
	return lines, strings.Join(fig, "\n")
}

// rateOverLastSecond adds a sample of name's done counter to history and returns the
// records done per second since the newest sample at least a second old (or since the first
// sample, within the first second). A counter lower than its last sample started again (a new
// mapping of the same name): its history starts again with it.
func rateOverLastSecond(history map[string][]doneAt, now time.Time, name string, done int64) float64 {
	if h := history[name]; len(h) > 0 && done < h[len(h)-1].done {
		history[name] = nil
	}
	h := append(history[name], doneAt{now, done})
	// Keep the newest sample at least a second old, as the base, and everything after it.
	cut := 0
	for i := range h {
		if now.Sub(h[i].t) >= time.Second {
			cut = i
		}
	}
	h = h[cut:]
	history[name] = h
	dt := now.Sub(h[0].t).Seconds()
	if dt <= 0 {
		return 0
	}
	return float64(done-h[0].done) / dt
}

// redraw returns the escape sequences that replace the block on screen with lines.
func (p *Progress) redraw(lines []string) string {
	var b strings.Builder
	if p.drawn > 0 {
		fmt.Fprintf(&b, "\x1b[%dA", p.drawn)
	}
	for _, l := range lines {
		b.WriteString("\r\x1b[2K")
		b.WriteString(l)
		b.WriteString("\n")
	}
	// A shorter block than the last one: clear the lines left below it, then come back.
	if extra := p.drawn - len(lines); extra > 0 {
		for range extra {
			b.WriteString("\r\x1b[2K\n")
		}
		fmt.Fprintf(&b, "\x1b[%dA", extra)
	}
	p.drawn = len(lines)
	p.block = lines
	return b.String()
}

func fmtElapsed(d time.Duration) string {
	return fmt.Sprintf("%.1fs", d.Seconds())
}
