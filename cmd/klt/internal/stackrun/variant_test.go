package stackrun

import (
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/esm/samspec"
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

// A variant of template.yaml's consumer copies its Kafka mapping (same topic and settings, its
// own ID, function and consumer group); a variant of a parameter the template lacks, of the
// worker (an SQS mapping invokes it), or under a name the template has, is refused.
func TestAddVariantsOnTheTemplate(t *testing.T) {
	tpl, err := samspec.ReadInvokeTemplate("../../../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	r, err := samspec.NewLocalResolver(tpl, map[string]string{"KafkaBootstrapServers": "127.0.0.1:9092"})
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := samspec.LocalMappings(tpl, r)
	if err != nil {
		t.Fatal(err)
	}
	stackWith := func(v Variant) *stack {
		return &stack{c: Config{Template: "template.yaml", Variants: []Variant{v}}, t: tpl, specs: append([]*samspec.MappingSpec(nil), ms...)}
	}
	s := stackWith(Variant{"KeyConcurrentConsumer", "ConsumerFunction", "KeyConcurrency", "100"})
	if err := s.addVariants(); err != nil {
		t.Fatal(err)
	}
	var orig, c *samspec.MappingSpec
	for _, m := range s.specs {
		switch m.Id {
		case "ConsumerSelfManagedMapping":
			orig = m
		case "KeyConcurrentConsumerMapping":
			c = m
		}
	}
	if c == nil || orig == nil || c.Function != "KeyConcurrentConsumer" || c.GroupID != "KeyConcurrentConsumer" || c.GroupID == orig.GroupID ||
		c.Topics[0] != orig.Topics[0] || c.BatchSize != orig.BatchSize || c.Filter != orig.Filter || orig.Function != "ConsumerFunction" {
		t.Errorf("copy %+v of %+v", c, orig)
	}
	for v, want := range map[Variant]string{
		{"K", "ConsumerFunction", "NoSuchParameter", "1"}:                 "has no parameter NoSuchParameter",
		{"K", "WorkerFunction", "KeyConcurrency", "1"}:                    "an SQS mapping",
		{"ConsumerFunction", "DispatcherFunction", "KeyConcurrency", "1"}: "already has ConsumerFunction",
		{"K", "NoFunction", "KeyConcurrency", "1"}:                        "no enabled Kafka mapping",
	} {
		if err := stackWith(v).addVariants(); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("--variant %s: %v, want an error saying %q", v, err, want)
		}
	}
}
