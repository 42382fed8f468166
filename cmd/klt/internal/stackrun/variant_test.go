package stackrun

import (
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// --variant takes NAME=FUNCTION:PARAMETER=VALUE, refuses anything else and a name twice.
func TestVariantsFlag(t *testing.T) {
	var vs []Variant
	f := VariantsFlag{&vs}
	if err := f.Set("KeyConcurrentConsumer=ConsumerFunction:KeyConcurrency=100"); err != nil {
		t.Fatal(err)
	}
	if want := (Variant{"KeyConcurrentConsumer", "ConsumerFunction", "KeyConcurrency", "100"}); len(vs) != 1 || vs[0] != want {
		t.Fatalf("variants %+v, want %+v", vs, want)
	}
	for _, bad := range []string{"KeyConcurrentConsumer=ConsumerFunction:KeyConcurrency=1", "K=F", "K=F:P", "K-1=F:P=1", "=F:P=1", "K=:P=1", "K=F:=1"} {
		if err := f.Set(bad); err == nil {
			t.Errorf("--variant %q accepted", bad)
		}
	}
}

// A variant's pipeline is named by its shape and the parameter it changes; the pipeline of
// the function it copies keeps its name, as if the variant were not there.
func TestPipelineNamesWithAVariant(t *testing.T) {
	direct := &pipeline{functions: []string{"ConsumerFunction"}}
	fan := &pipeline{functions: []string{"DispatcherFunction", "WorkerFunction"}}
	kc := &pipeline{functions: []string{"KeyConcurrentConsumer"}}
	names := pipelineNames([]*pipeline{direct, fan, kc}, map[string]Variant{"KeyConcurrentConsumer": {"KeyConcurrentConsumer", "ConsumerFunction", "KeyConcurrency", "100"}})
	if names[direct] != "direct" || names[fan] != "fan-out" || names[kc] != "direct, KeyConcurrency=100" {
		t.Errorf("names %q, %q, %q", names[direct], names[fan], names[kc])
	}
}

// A server fault's row tells the fates of the phase's records no record fault was armed for:
// a poison order's failure queue, and the phase's total deliveries, are not its.
func TestServerFaultLeavesRecordFaultsTheirRows(t *testing.T) {
	rec := func(off int64, fate string, deliveries int) ledger.RecordAccount {
		return ledger.RecordAccount{ID: ledger.RecordID{Topic: "orders", Offset: off}, Fate: fate, Deliveries: map[string]int{"M": deliveries}}
	}
	a := ledger.PipelineAccount{
		Records: []ledger.RecordAccount{rec(0, ledger.FateSucceeded, 1), rec(1, ledger.FateFailureQueue, 1), rec(2, ledger.FateSucceeded, 2), rec(3, ledger.FateSucceeded, 5)},
		Fates:   map[string]int{ledger.FateSucceeded: 3, ledger.FateFailureQueue: 1, ledger.FateLost: 0}, Attempts: 9,
	}
	phase := []armed{
		{spec: FaultSpec{Kind: faultValue}, id: a.Records[1].ID, found: true},
		{spec: FaultSpec{Kind: faultTimeout}, id: a.Records[3].ID, found: true},
		{spec: FaultSpec{Kind: faultDynamoDB, N: 3, Op: "PutItem"}},
	}
	got := withoutRecordFaults(a, phase)
	if len(got.Records) != 2 || got.Fates[ledger.FateFailureQueue] != 0 || got.Fates[ledger.FateSucceeded] != 2 || got.Attempts != 3 {
		t.Errorf("records %d, fates %v, attempts %d: want 2 records, both succeeded, 3 deliveries", len(got.Records), got.Fates, got.Attempts)
	}
	if len(a.Records) != 4 || a.Fates[ledger.FateFailureQueue] != 1 {
		t.Error("the phase's account was changed")
	}
	if s := report.FatesText(got); !strings.HasPrefix(s, "2 records: 2 ") {
		t.Errorf("fates text %q", s)
	}
}
