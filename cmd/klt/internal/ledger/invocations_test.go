package ledger

import (
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/esm"
)

// observer records a mapping's events of phase into l, as klt local's observer does.
type observer struct {
	l     *Ledger
	phase string
}

func (o observer) Observe(e esm.Event) { o.l.Invoked(o.phase, e) }

// The ledger keeps each invocation from the mappings' events: its start (Delivered), its
// end (the last Succeeded or Failed event of its number), its records and partitions; an
// SQS mapping's FIFO groups; and the phases number invocations apart.
func TestLedgerInvocations(t *testing.T) {
	l := New()
	t0 := time.Now()
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	k := func(p int32, o int64) esm.RecordRef { return esm.RecordRef{Topic: "orders", Partition: p, Offset: o} }
	obs := observer{l, "p1"}
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 1, At: at(0), Records: []esm.RecordRef{k(0, 1), k(0, 2), k(3, 1)}})
	obs.Observe(esm.Event{Kind: esm.Failed, Mapping: "K", Invocation: 1, At: at(900), Records: []esm.RecordRef{k(3, 1)}, Reason: "ReportBatchItemFailures"})
	obs.Observe(esm.Event{Kind: esm.Succeeded, Mapping: "K", Invocation: 1, At: at(1000), Records: []esm.RecordRef{k(0, 1), k(0, 2)}})
	obs.Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 2, At: at(500), Records: []esm.RecordRef{k(1, 1)}})
	obs.Observe(esm.Event{Kind: esm.GaveUp, Mapping: "K", At: at(600), Records: []esm.RecordRef{k(1, 1)}})
	// Phase p2's mapping numbers its invocations from 1 again.
	(observer{l, "p2"}).Observe(esm.Event{Kind: esm.Delivered, Mapping: "K", Invocation: 1, At: at(5000), Records: []esm.RecordRef{k(2, 9)}})
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
