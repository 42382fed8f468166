package stackrun

import (
	"bytes"
	"math"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm"
)

// The ledger keeps each invocation from the mappings' events: its start (Delivered), its
// end (the last Succeeded or Failed event of its number), its records and partitions; an
// SQS mapping's FIFO groups; and the phases number invocations apart.
func TestLedgerInvocations(t *testing.T) {
	l := ledger.New()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	k := func(p int32, o int64) esm.RecordRef { return esm.RecordRef{Topic: "orders", Partition: p, Offset: o} }
	obs := mappingObserver{l, "p1"}
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 1, At: at(0), Records: []esm.RecordRef{k(0, 1), k(0, 2), k(3, 1)}})
	obs.Observe(esm.Event{Kind: esm.Failed, Mapping: "K", Invocation: 1, At: at(900), Records: []esm.RecordRef{k(3, 1)}, Reason: "ReportBatchItemFailures"})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "K", Invocation: 1, At: at(1000), Records: []esm.RecordRef{k(0, 1), k(0, 2)}})
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 2, At: at(500), Records: []esm.RecordRef{k(1, 1)}})
	obs.Observe(esm.Event{Kind: esm.GaveUp, Mapping: "K", At: at(600), Records: []esm.RecordRef{k(1, 1)}})
	// Phase p2's mapping numbers its invocations from 1 again.
	(mappingObserver{l, "p2"}).Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 1, At: at(5000), Records: []esm.RecordRef{k(2, 9)}})
	sq := func(id, g string) esm.RecordRef { return esm.RecordRef{MessageID: id, MessageGroupID: g} }
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "Q", Invocation: 1, At: at(0), Records: []esm.RecordRef{sq("a", "g1"), sq("b", "g2"), sq("c", "g1")}})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "Q", Invocation: 7, At: at(10)})

	invs := l.InvocationsOf("p1", "K")
	if len(invs) != 2 {
		t.Fatalf("invocations: %+v", invs)
	}
	if v := invs[0]; v.Records != 3 || v.Partitions != 2 || !v.Failed || !v.End.Equal(at(1000)) {
		t.Errorf("invocation 1: %+v", v)
	}
	if _, ok := invs[1].Seconds(); ok {
		t.Errorf("invocation 2 never ended, but has a duration: %+v", invs[1])
	}
	if p2 := l.InvocationsOf("p2", "K"); len(p2) != 1 || !p2[0].Start.Equal(at(5000)) {
		t.Errorf("phase p2: %+v", p2)
	}
	if g := l.GroupsOf("p1", "Q"); len(g) != 2 || !g["g1"] || !g["g2"] {
		t.Errorf("groups: %v", g)
	}
	if q := l.InvocationsOf("p1", "Q"); len(q) != 1 || q[0].Partitions != 0 || q[0].Records != 3 {
		t.Errorf("SQS invocations: %+v", q)
	}
	if n := l.StrayEndsOf("p1", "Q"); n != 1 {
		t.Errorf("stray ends: %d, want 1 (invocation 7 never started)", n)
	}
}

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

// mappingLoad measures a mapping over its load phases: durations from Delivered to the last
// end, records and partitions per invocation, per-record time, and the mean concurrency over
// the phase's time, which runs on to the last invocation's end when that is after the last
// fate.
func TestMappingLoad(t *testing.T) {
	l := ledger.New()
	s := &stack{obs: &observation{ledger: l}, out: &bytes.Buffer{}}
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	k := func(p int32, o int64) esm.RecordRef { return esm.RecordRef{Topic: "orders", Partition: p, Offset: o} }
	obs := mappingObserver{l, "p1"}
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
	spans := []phaseSpan{{"p1", at(-500), at(1800)}}
	got, notes := s.mappingLoad(report.Mapping{Name: "K"}, "orders", spans)
	if len(notes) != 0 {
		t.Errorf("notes: %q", notes)
	}
	want := report.MappingLoad{Seconds: 2.5, Invocations: 2, InvocationMsP50: 1000, InvocationMsP99: 2000, InvocationMsMean: 1500,
		RecordsPerInvocation: 2.5, PartitionsPerInvocation: 1.5, RecordMsP50: 500, RecordMsP99: 1000, RecordMsMean: 750,
		ConcurrencyMean: 3.0 / 2.5, ConcurrencyMax: 2, RecordBytesMean: 10}
	if !sameLoad(*got, want) {
		t.Errorf("load:\n got %+v\nwant %+v", *got, want)
	}
	if none, _ := s.mappingLoad(report.Mapping{Name: "K"}, "orders", nil); none != nil {
		t.Errorf("a mapping in no load phase: %+v, want nil", none)
	}
}

func sameLoad(a, b report.MappingLoad) bool {
	eq := func(x, y float64) bool { return math.Abs(x-y) < 1e-9 }
	return eq(a.Seconds, b.Seconds) && a.Invocations == b.Invocations && a.Unfinished == b.Unfinished &&
		eq(a.InvocationMsP50, b.InvocationMsP50) && eq(a.InvocationMsP99, b.InvocationMsP99) && eq(a.InvocationMsMean, b.InvocationMsMean) &&
		eq(a.RecordsPerInvocation, b.RecordsPerInvocation) && eq(a.PartitionsPerInvocation, b.PartitionsPerInvocation) &&
		eq(a.RecordMsP50, b.RecordMsP50) && eq(a.RecordMsP99, b.RecordMsP99) && eq(a.RecordMsMean, b.RecordMsMean) &&
		eq(a.ConcurrencyMean, b.ConcurrencyMean) && a.ConcurrencyMax == b.ConcurrencyMax && a.MessageGroups == b.MessageGroups &&
		eq(a.RecordBytesMean, b.RecordBytesMean)
}
