package report

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"sync"
	"time"
)

// Recorder samples the mappings' counters at a fixed interval into time series: for each
// mapping, records succeeded per second (over the trailing second) and lag (records not yet
// delivered); for each function, the sum of its mappings' rates (the report's throughput)
// and, when the caller observes side effects (MappingStatus.Applied), the side effects per
// second; and, when [WithPartitionLag] is given, the lag of each partition. Times are seconds
// since [Recorder.Start]. It records every phase of a run, the fault phase included: start it
// before the first, mark each with [Recorder.Phase], stop it after the last.
//
// A Recorder is started once and stopped once; its methods are safe for concurrent use.
type Recorder struct {
	sample   func() []MappingStatus
	lags     func() map[string]int64
	interval time.Duration

	mu       sync.Mutex
	start    time.Time
	history  map[string][]doneAt // per mapping, raw samples of the last second or so
	mappings map[string]*MappingSeries
	funcs    map[string]string // mapping -> function
	funcRate map[string][]Point
	lag      map[string][]Point
	applied  map[string]map[string]*appliedSum // per function, per mapping
	appHist  map[string][]doneAt               // per function, raw samples of the applied sum
	appRate  map[string][]Point
	phases   []PhaseSpan

	stop chan struct{}
	done chan struct{}
	once sync.Once
}

// appliedSum is what one mapping applied: base over its earlier phases, last in this one.
type appliedSum struct{ base, last int64 }

// MappingSeries are one mapping's time series.
type MappingSeries struct {
	Function   string  // the function the mapping invokes
	Throughput []Point // records succeeded per second over the trailing second
	Lag        []Point // the mapping's lag: records not yet delivered
}

// RecorderOption configures a [Recorder].
type RecorderOption func(*Recorder) error

// WithInterval sets how often the Recorder samples, between 250 ms and 1 s. The default is
// 500 ms.
func WithInterval(d time.Duration) RecorderOption {
	return func(r *Recorder) error {
		if d < 250*time.Millisecond || d > time.Second {
			return fmt.Errorf("report: recorder interval %v out of range [250ms, 1s]", d)
		}
		r.interval = d
		return nil
	}
}

// WithPartitionLag records, at each sample, the lag f returns for each partition, keyed
// "topic-partition" ("orders-0"). When two mappings read the same topic, f should prefix the
// key with the mapping's name to keep their series apart. Without this option the report has
// no partition lag series.
func WithPartitionLag(f func() map[string]int64) RecorderOption {
	return func(r *Recorder) error {
		if f == nil {
			return errors.New("report: WithPartitionLag: nil function")
		}
		r.lags = f
		return nil
	}
}

// NewRecorder returns a Recorder of the statuses sample returns. sample (and the function
// given to [WithPartitionLag]) are called from the Recorder's own goroutine.
func NewRecorder(sample func() []MappingStatus, opts ...RecorderOption) (*Recorder, error) {
	if sample == nil {
		return nil, errors.New("report: NewRecorder: nil sample function")
	}
	r := &Recorder{
		sample: sample, interval: 500 * time.Millisecond,
		history: map[string][]doneAt{}, mappings: map[string]*MappingSeries{}, funcs: map[string]string{},
		funcRate: map[string][]Point{}, lag: map[string][]Point{},
		applied: map[string]map[string]*appliedSum{}, appHist: map[string][]doneAt{}, appRate: map[string][]Point{},
		stop: make(chan struct{}), done: make(chan struct{}),
	}
	for _, o := range opts {
		if err := o(r); err != nil {
			return nil, err
		}
	}
	return r, nil
}

// Start takes the first sample (at t = 0) and goes on sampling in a goroutine of its own.
func (r *Recorder) Start() {
	now := time.Now()
	r.mu.Lock()
	if r.start.IsZero() { // a Phase marked before Start started the clock
		r.start = now
	}
	r.mu.Unlock()
	r.record(now)
	go func() {
		defer close(r.done)
		t := time.NewTicker(r.interval)
		defer t.Stop()
		for {
			select {
			case <-r.stop:
				return
			case <-t.C:
				r.record(time.Now())
			}
		}
	}()
}

// Stop ends sampling and takes a last sample, which ends the last phase. Calling it again
// does nothing.
func (r *Recorder) Stop() {
	r.once.Do(func() {
		close(r.stop)
		r.mu.Lock()
		started := !r.start.IsZero()
		r.mu.Unlock()
		if started {
			<-r.done
			r.record(time.Now())
		}
	})
}

// record takes one sample at now.
func (r *Recorder) record(now time.Time) {
	st := r.sample()
	var lags map[string]int64
	if r.lags != nil {
		lags = r.lags()
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start.IsZero() {
		r.start = now
	}
	t := now.Sub(r.start).Seconds()
	sum := map[string]float64{}
	for _, m := range st {
		ms := r.mappings[m.Name]
		if ms == nil {
			ms = &MappingSeries{Function: m.Function}
			r.mappings[m.Name] = ms
		}
		rate := r.rate(now, m.Name, m.Snapshot.Succeeded)
		ms.Throughput = append(ms.Throughput, Point{t, rate})
		ms.Lag = append(ms.Lag, Point{t, float64(m.Snapshot.Lag)})
		sum[m.Function] += rate
		if n, ok := m.Applied.Value(); ok {
			if r.applied[m.Function] == nil {
				r.applied[m.Function] = map[string]*appliedSum{}
			}
			a := r.applied[m.Function][m.Name]
			if a == nil {
				a = &appliedSum{}
				r.applied[m.Function][m.Name] = a
			}
			if n < a.last { // the mapping started again (a new phase): keep what it applied before
				a.base += a.last
			}
			a.last = n
		}
	}
	for _, fn := range slices.Sorted(maps.Keys(sum)) {
		r.funcRate[fn] = append(r.funcRate[fn], Point{t, sum[fn]})
	}
	// Applied per function: the sum over its mappings of what each applied, over every phase
	// (so the sum never goes back).
	for _, fn := range slices.Sorted(maps.Keys(r.applied)) {
		var total int64
		for _, a := range r.applied[fn] {
			total += a.base + a.last
		}
		r.appRate[fn] = append(r.appRate[fn], Point{t, rateOverLastSecond(r.appHist, now, fn, total)})
	}
	for k, v := range lags {
		r.lag[k] = append(r.lag[k], Point{t, float64(v)})
	}
	if n := len(r.phases); n > 0 {
		r.phases[n-1].End = t
	}
}

// rate adds a sample for mapping name and returns the records done per second since the
// newest sample at least a second old (or since the first sample, within the first second).
func (r *Recorder) rate(now time.Time, name string, done int64) float64 {
	return rateOverLastSecond(r.history, now, name, done)
}

// Phase marks the start of a phase of the run, now: the previous phase (if any) ends here.
// The charts mark each phase. The recorder goes on sampling across phases: start it before
// the first and stop it after the last, the fault phase included.
func (r *Recorder) Phase(name string) { r.phaseAt(name, time.Now()) }

func (r *Recorder) phaseAt(name string, now time.Time) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.start.IsZero() {
		r.start = now
	}
	t := now.Sub(r.start).Seconds()
	if n := len(r.phases); n > 0 && r.phases[n-1].End < t {
		r.phases[n-1].End = t
	}
	r.phases = append(r.phases, PhaseSpan{Name: name, Start: t, End: t})
}

// Series returns a copy of the series recorded so far, as the report holds them.
func (r *Recorder) Series() Series {
	r.mu.Lock()
	defer r.mu.Unlock()
	s := Series{Throughput: map[string][]Point{}, Applied: map[string][]Point{}, Lag: map[string][]Point{}, Phases: slices.Clone(r.phases)}
	for k, v := range r.funcRate {
		s.Throughput[k] = slices.Clone(v)
	}
	for k, v := range r.appRate {
		s.Applied[k] = slices.Clone(v)
	}
	for k, v := range r.lag {
		s.Lag[k] = slices.Clone(v)
	}
	return s
}

// Mappings returns a copy of each mapping's series recorded so far, keyed by mapping name.
func (r *Recorder) Mappings() map[string]MappingSeries {
	r.mu.Lock()
	defer r.mu.Unlock()
	out := make(map[string]MappingSeries, len(r.mappings))
	for k, v := range r.mappings {
		out[k] = MappingSeries{Function: v.Function, Throughput: slices.Clone(v.Throughput), Lag: slices.Clone(v.Lag)}
	}
	return out
}
