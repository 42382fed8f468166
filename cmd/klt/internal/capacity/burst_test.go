package capacity

import (
	"testing"
	"time"
)

// TestBurstByHand: a steady 100 records/s, a design of 150, a burst of 300 for 60 s: the
// lag grows by 300 - 150 = 150 a second, to 9,000 at the burst's end, and drains at
// 150 - 100 = 50 a second, in 180 s.
func TestBurstByHand(t *testing.T) {
	// 3 partitions, 100 records × 20 ms = 2 s an invocation: 3 × 100 / 2 = 150 records/s.
	p := mustMake(t, Input{Rate: 100, Burst: 300, BurstFor: Duration(time.Minute), Partitions: 3, Duration: ms(20), BatchSize: 100})
	d := p.Direct
	if d.MaxRecordsPerSecond != 150 {
		t.Fatalf("max = %v, want 150", d.MaxRecordsPerSecond)
	}
	b := d.Burst
	if b == nil || b.LagRecords != 9_000 || b.DrainSeconds == nil || *b.DrainSeconds != 180 {
		t.Fatalf("burst = %+v, want lag 9,000 drained in 180 s", b)
	}
	if n := len(b.Curve); n != 241 || b.Curve[60].Y != 9_000 || b.Curve[240].Y != 0 {
		t.Errorf("curve: %d points, lag %v at 60 s and %v at 240 s; want 241, 9,000, 0", n, b.Curve[60].Y, b.Curve[240].Y)
	}
	// The burst needs 300 × 2 / 100 = 6 invocations at once: 6 partitions, 2 pollers.
	if r := d.Recommended; r == nil || r.MinimumPollers != 1 || r.MaximumPollers != 2 || r.Partitions != 6 || r.Concurrency != 6 {
		t.Errorf("recommended = %+v, want 1 minimum and 2 maximum pollers, 6 partitions, 6 concurrency", r)
	}
}

// TestBurstNeverDrains: a design that does not outrun the steady rate never drains the lag:
// DrainSeconds is null, the curve at most 500 points over 7 days.
func TestBurstNeverDrains(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Burst: 300, BurstFor: Duration(time.Minute), Partitions: 1, Duration: ms(20), BatchSize: 100})
	b := p.Direct.Burst
	if b.DrainSeconds != nil {
		t.Errorf("drain = %v, want null", *b.DrainSeconds)
	}
	if n := len(b.Curve); n > maxCurvePoints || n < 2 {
		t.Errorf("curve of %d points, want 2..500", n)
	}
	last := b.Curve[len(b.Curve)-1]
	if want := float64(60 + 604_800); last.X != want {
		t.Errorf("curve ends at %v s, want %v (7 days past the burst)", last.X, want)
	}
}

// TestStandardQueueRamp: behind a standard queue the workers' concurrency grows by 300 a
// minute, so a burst the workers bind drains later than their cap alone would say.
func TestStandardQueueRamp(t *testing.T) {
	in := Input{Rate: 100, Burst: 10_000, BurstFor: Duration(10 * time.Second), Duration: ms(10), Partitions: 100,
		Fanout: Fanout{Queue: "standard", WorkerDuration: ms(100), WorkerBatchSize: 10, MaximumConcurrency: 1_000}}
	p := mustMake(t, in)
	f := p.Fanout
	// Workers: 10 messages × 100 ms = 1 s, 10 records/s each; 100 records/s needs 10.
	if f.ConcurrencyNeeded != 10 {
		t.Fatalf("concurrency needed = %d, want 10", f.ConcurrencyNeeded)
	}
	// From 10 workers, 5 more a second: 100 + 50t records/s against 10,000 arriving.
	out := fanoutOut(&p.Input, f.Stages[0], f.Stages[1], mustWorkers(t, &p.Input), f.ConcurrencyNeeded)
	if got := out(0); got != 100 {
		t.Errorf("out(0) = %v, want 100 (10 workers)", got)
	}
	if got := out(2); got != 200 {
		t.Errorf("out(2) = %v, want 200 (20 workers)", got)
	}
	if f.Burst == nil || f.Burst.DrainSeconds == nil || f.Burst.LagRecords < 90_000 {
		t.Errorf("burst = %+v, want a lag near 10 s × 10,000 that drains", f.Burst)
	}
}

func mustWorkers(t *testing.T, in *Input) *workerStage {
	t.Helper()
	w, err := newWorkerStage(in, messageBytes(in.RecordSize))
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// TestCurvePoints: 1,000,000 seconds sample to at most 500 points, the last one kept.
func TestCurvePoints(t *testing.T) {
	lags := make([]float64, 1_000_001)
	lags[1_000_000] = 7
	c := curve(lags)
	if len(c) > maxCurvePoints || c[len(c)-1].X != 1_000_000 || c[len(c)-1].Y != 7 {
		t.Errorf("%d points, last %+v", len(c), c[len(c)-1])
	}
}
