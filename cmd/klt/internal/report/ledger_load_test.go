package report

import (
	"math"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm"
)

// observer records a mapping's events of phase into l, as klt local's observer does.
type observer struct {
	l     *ledger.Ledger
	phase string
}

func (o observer) Observe(e esm.Event) { o.l.Invoked(o.phase, e) }

// maxConcurrency counts the invocations running at one moment; one that ends as another
// starts did not run beside it, and one that never ended runs to the end.
func TestMaxConcurrency(t *testing.T) {
	t0 := time.Now()
	at := func(s int) time.Time { return t0.Add(time.Duration(s) * time.Second) }
	for _, tc := range []struct {
		name string
		invs []ledger.Invocation
		want int
	}{
		{"none", nil, 0},
		{"back to back", []ledger.Invocation{{Start: at(0), End: at(1)}, {Start: at(1), End: at(2)}}, 1},
		{"overlapping", []ledger.Invocation{{Start: at(0), End: at(3)}, {Start: at(1), End: at(2)}, {Start: at(1), End: at(4)}}, 3},
		{"unfinished", []ledger.Invocation{{Start: at(0)}, {Start: at(5), End: at(6)}}, 2},
	} {
		if got := maxConcurrency(tc.invs); got != tc.want {
			t.Errorf("%s: %d, want %d", tc.name, got, tc.want)
		}
	}
}

// LoadOf measures a mapping over its load phases: durations from Delivered to the last
// end, records and partitions per invocation, per-record time, and the mean concurrency over
// the phase's time, which runs on to the last invocation's end when that is after the last
// fate.
func TestLoadOf(t *testing.T) {
	l := ledger.New()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	k := func(p int32, o int64) esm.RecordRef { return esm.RecordRef{Topic: "orders", Partition: p, Offset: o} }
	obs := observer{l, "p1"}
	// Two invocations at once: 4 records of 2 partitions in 2 s, 1 record in 1 s.
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 1, At: at(0), Records: []esm.RecordRef{k(0, 1), k(0, 2), k(1, 1), k(1, 2)}})
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 2, At: at(500), Records: []esm.RecordRef{k(2, 1)}})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "K", Invocation: 2, At: at(1500), Records: []esm.RecordRef{k(2, 1)}})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "K", Invocation: 1, At: at(2000), Records: []esm.RecordRef{k(0, 1), k(0, 2), k(1, 1), k(1, 2)}})
	for i, p := range []int32{0, 0, 1, 1, 2} {
		l.Produced(ledger.Input{ID: ledger.RecordID{Topic: "orders", Partition: p, Offset: int64(i)}, Key: []byte("k"), Value: []byte("123456789"), At: at(0), Phase: "p1"})
	}
	// The phase's last fate at 1.8 s: the last end (2 s) is later, so the phase counts 2.5 s
	// from its start at -0.5 s.
	spans := []LoadSpan{{"p1", at(-500), at(1800)}}
	got, notes := LoadOf(l, "K", "orders", spans)
	if len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	want := MappingLoad{Seconds: 2.5, Invocations: 2, InvocationMsP50: 1000, InvocationMsP99: 2000, InvocationMsMean: 1500,
		RecordsPerInvocation: 2.5, PartitionsPerInvocation: 1.5, RecordMsP50: 500, RecordMsP99: 1000, RecordMsMean: 750,
		ConcurrencyMean: 3.0 / 2.5, ConcurrencyMax: 2, RecordBytesMean: 10}
	if !sameLoad(*got, want) {
		t.Errorf("load:\n got %+v\nwant %+v", *got, want)
	}
	if none, _ := LoadOf(l, "K", "orders", nil); none != nil {
		t.Errorf("a mapping in no load phase: %+v, want nil", none)
	}
}

func sameLoad(a, b MappingLoad) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return eq(a.Seconds, b.Seconds) && a.Invocations == b.Invocations && a.Unfinished == b.Unfinished &&
		eq(a.InvocationMsP50, b.InvocationMsP50) && eq(a.InvocationMsP99, b.InvocationMsP99) && eq(a.InvocationMsMean, b.InvocationMsMean) &&
		eq(a.RecordsPerInvocation, b.RecordsPerInvocation) && eq(a.PartitionsPerInvocation, b.PartitionsPerInvocation) &&
		eq(a.RecordMsP50, b.RecordMsP50) && eq(a.RecordMsP99, b.RecordMsP99) && eq(a.RecordMsMean, b.RecordMsMean) &&
		eq(a.ConcurrencyMean, b.ConcurrencyMean) && a.ConcurrencyMax == b.ConcurrencyMax && a.MessageGroups == b.MessageGroups &&
		eq(a.RecordBytesMean, b.RecordBytesMean)
}
