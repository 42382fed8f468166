package capacity

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"testing"
)

// The figures below are worked by hand from the cited prices (prices.go, lmi_limits.go), not
// copied from the program:
//
//	m7g.large: 2 vCPU, 8 GiB, $0.0816 an hour (unconfirmed: srcEC2Price); fee 15% (srcLMIPricing)
//	3 instances (Lambda's default minimum) a month: 3 × 720 h = 2,160 instance-hours
//	  EC2   2,160 × $0.0816          = $176.256
//	  fee   2,160 × $0.0816 × 0.15   = $26.4384
//	  both                           = $202.6944
//	on-demand GB-seconds, arm64 $0.0000133334, 256 MB, 2,592,000 s a month:
//	  300 ms a record: 0.3 × 0.25 × 0.0000133334 × 2,592,000 = $2.59201296 a month per record/s
//	  50 ms for 20 records (2.5 ms a record): 0.0025 × 0.25 × … = $0.02160010800 per record/s
const (
	handThreeInstances = 176.256 + 26.4384 // $202.6944
	handSlope300ms     = 0.3 * 0.25 * 0.0000133334 * 2_592_000
	handSlope50ms20    = 0.0025 * 0.25 * 0.0000133334 * 2_592_000
)

func costLine(t *testing.T, lines []CostLine, prefix string) CostLine {
	t.Helper()
	for _, l := range lines {
		if strings.HasPrefix(l.Item, prefix) {
			return l
		}
	}
	t.Fatalf("no cost line %q in %v", prefix, lines)
	return CostLine{}
}

// TestLMITalkExample: the talk's example, 5 partitions at 300 ms a record. LMI does not lift
// the partition bound (one invocation per partition at a time either way), so neither carries
// 100 records/s; up to the 16.7 records/s 5 partitions carry, 3 instances ($202.69) never cost
// less than the on-demand GB-seconds (16.667 × $2.592 = $43.20): no break-even.
func TestLMITalkExample(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Partitions: 5, Duration: ms(300)})
	l := p.LMI
	if l.ReachesTarget || l.MonthlyCostUSD != nil || l.OnDemandMonthlyUSD != nil {
		t.Fatalf("LMI reaches 100 records/s on 5 partitions: %+v", l)
	}
	if !strings.Contains(l.Bound, "LMI does not lift its bound") || !strings.Contains(l.Bound, "5 partitions") {
		t.Errorf("bound = %q, want the partitions, not lifted by LMI", l.Bound)
	}
	if !near(l.MaxRecordsPerSecond, 5/0.3) {
		t.Errorf("max = %v, want 5 / 0.3 s = 16.667", l.MaxRecordsPerSecond)
	}
	if l.BreakEvenRecordsPerSecond != nil {
		t.Errorf("break-even at %v records/s, want none up to 16.667", *l.BreakEvenRecordsPerSecond)
	}
	if !strings.Contains(l.BreakEven, "$202.69") || !strings.Contains(l.BreakEven, "$43.20") {
		t.Errorf("break-even text %q, want $202.69 of instances against $43.20 (16.667 × $2.592)", l.BreakEven)
	}
}

// TestLMITalkExampleAtItsPartitions: the same load with the 30 partitions it needs. 30
// concurrent invocations fit in 3 environments (64 per 1-vCPU environment at 50% use: 32
// each), on 3 m7g.large (the default minimum; 3 × 1 vCPU ≤ 6, 3 × 2 GiB ≤ 24). LMI costs
// $202.6944 of instances and fee where on demand pays 100 × $2.59201296 = $259.201296 of
// GB-seconds; every other line is the same, so LMI is cheaper by $56.506896, and the two break
// even at $202.6944 / $2.59201296 = 78.1996 records/s.
func TestLMITalkExampleAtItsPartitions(t *testing.T) {
	p := mustMake(t, Input{Rate: 100, Partitions: 30, Duration: ms(300)})
	l := p.LMI
	if !l.ReachesTarget || l.MappingsNeeded != 1 {
		t.Fatalf("reaches %v with %d mappings (%s); want yes with 1 (0.1024 MB/s)", l.ReachesTarget, l.MappingsNeeded, l.Bound)
	}
	if l.Environments != 3 || l.Instances != 3 {
		t.Errorf("%d environments on %d instances, want 3 on 3", l.Environments, l.Instances)
	}
	if c := costLine(t, l.CostLines, "EC2 instances"); !near(c.MonthlyUSD, 176.256) {
		t.Errorf("instances $%v, want 2,160 h × $0.0816 = $176.256", c.MonthlyUSD)
	}
	if c := costLine(t, l.CostLines, "LMI management fee"); !near(c.MonthlyUSD, 26.4384) {
		t.Errorf("fee $%v, want 2,160 h × $0.0816 × 0.15 = $26.4384", c.MonthlyUSD)
	}
	od := costLine(t, p.Direct.CostLines, "Lambda duration")
	if !near(od.MonthlyUSD, 100*handSlope300ms) {
		t.Errorf("on-demand duration $%v, want 100 × $2.59201296 = $259.201296", od.MonthlyUSD)
	}
	// No duration line on LMI; the requests are the same as on demand.
	for _, c := range l.CostLines {
		if strings.HasPrefix(c.Item, "Lambda duration") {
			t.Errorf("LMI has a duration line: %+v", c)
		}
	}
	if a, b := costLine(t, l.CostLines, "Lambda requests"), costLine(t, p.Direct.CostLines, "Lambda requests"); !near(a.MonthlyUSD, b.MonthlyUSD) {
		t.Errorf("requests $%v on LMI, $%v on demand; want the same", a.MonthlyUSD, b.MonthlyUSD)
	}
	if l.Cheaper != "lmi" || !near(*l.OnDemandMonthlyUSD-*l.MonthlyCostUSD, 100*handSlope300ms-handThreeInstances) {
		t.Errorf("cheaper %q by $%v, want lmi by $259.201296 - $202.6944 = $56.506896", l.Cheaper, *l.OnDemandMonthlyUSD-*l.MonthlyCostUSD)
	}
	if l.BreakEvenRecordsPerSecond == nil || math.Abs(*l.BreakEvenRecordsPerSecond-handThreeInstances/handSlope300ms) > 1e-6 {
		t.Errorf("break-even %v, want $202.6944 / $2.59201296 = %.6f records/s", l.BreakEvenRecordsPerSecond, handThreeInstances/handSlope300ms)
	}
}

// TestLMI20000: AWS's 20,000 records/s (batches of 20 in 50 ms; with-kafka-low-latency). The
// load is 20,000 × 1,024 B = 20.48 MB/s, over the 1 MB/s of one standard Kafka mapping on
// LMI: it takes ceil(20.48) = 21 mappings (records split over 21 topics). 50 concurrent
// invocations fit in 3 environments, on 3 instances. LMI a month: $202.6944 + requests
// 1,000 invocations/s × 2,592,000 = 2,592 million × $0.20 = $518.40 + event poller units
// 21 mappings × 1 EPU × 720 h × $0.185 = $2,797.20 + DynamoDB writes 20,000 × 2 × 2,592,000
// = 103,680 million × $0.625 = $64,800 = $68,318.2944. On demand: $518.40 + GB-seconds
// 2,592 million × 0.05 s × 0.25 GB × $0.0000133334 = $432.00216 + 2 EPUs (10 pollers, 20.48
// MB/s over 20) × 720 × $0.185 = $266.40 + $64,800 = $66,016.80216. On demand is cheaper by
// $2,301.49224, and LMI breaks even with no rate one mapping carries (976.6 records/s); the
// instances alone would from $202.6944 / $0.021600108 = 9,383.95 records/s.
func TestLMI20000(t *testing.T) {
	p := mustMake(t, Input{Rate: 20_000, BatchSize: 20, BatchDuration: ms(50)})
	l := p.LMI
	if l.MappingsNeeded != 21 || !strings.Contains(l.Bound, "21 mappings") {
		t.Fatalf("mappings %d (%q), want 21: 20.48 MB/s at 1 MB/s each", l.MappingsNeeded, l.Bound)
	}
	if !near(l.MaxRecordsPerSecond, 1e6/1024) {
		t.Errorf("max on one mapping = %v, want 1,000,000 / 1,024 = 976.5625", l.MaxRecordsPerSecond)
	}
	if l.Environments != 3 || l.Instances != 3 {
		t.Errorf("%d environments on %d instances, want 3 on 3", l.Environments, l.Instances)
	}
	if c := costLine(t, l.CostLines, "Event poller units"); !near(c.MonthlyUSD, 2797.2) {
		t.Errorf("EPUs $%v, want 21 × 720 × $0.185 = $2,797.20", c.MonthlyUSD)
	}
	const lmi, od = handThreeInstances + 518.4 + 2797.2 + 64_800, 518.4 + 432.00216 + 266.4 + 64_800
	if l.MonthlyCostUSD == nil || !near(*l.MonthlyCostUSD, lmi) {
		t.Errorf("LMI $%v, want $%v", l.MonthlyCostUSD, lmi)
	}
	if l.OnDemandMonthlyUSD == nil || !near(*l.OnDemandMonthlyUSD, od) {
		t.Errorf("on demand $%v, want $%v", l.OnDemandMonthlyUSD, od)
	}
	if l.Cheaper != "on-demand" {
		t.Errorf("cheaper %q, want on-demand", l.Cheaper)
	}
	if l.BreakEvenRecordsPerSecond != nil {
		t.Errorf("break-even %v within one mapping, want none", *l.BreakEvenRecordsPerSecond)
	}
	// $202.6944 / $0.021600108 = 9,383.95 records/s, 9,383.95 × 1,024 B = 9.6 MB/s: 10 mappings.
	if want := fmt.Sprintf("from %.6g records/s, which takes 10 standard mappings", handThreeInstances/handSlope50ms20); want != "from 9383.95 records/s, which takes 10 standard mappings" || !strings.Contains(l.BreakEven, want) {
		t.Errorf("break-even text %q, want %q", l.BreakEven, want)
	}
}

// TestLMIQuotaMappings: 1 MB records at 200 a second are 200 MB/s: 200 standard mappings,
// over the 100 an account may have: LMI does not carry the load, and has no cost.
func TestLMIQuotaMappings(t *testing.T) {
	p := mustMake(t, Input{Rate: 200, RecordSize: 1_000_000, Duration: ms(10), BatchSize: 1})
	l := p.LMI
	if l.ReachesTarget || l.MonthlyCostUSD != nil || l.MappingsNeeded != 200 || !strings.Contains(l.Bound, "over the 100") {
		t.Errorf("reaches %v, %d mappings, %q; want no: 200 mappings over the 100", l.ReachesTarget, l.MappingsNeeded, l.Bound)
	}
}

// TestLMIInputs: the settings AWS refuses are refused, naming the field.
func TestLMIInputs(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    Input
		field string
	}{
		{"x86 instance on arm64", Input{LMI: LMI{InstanceType: "m7i.large"}}, "lmi.instance_type"},
		{"unknown instance", Input{LMI: LMI{InstanceType: "t4g.nano"}}, "lmi.instance_type"},
		{"memory below 2 GB", Input{LMI: LMI{Memory: 1024}}, "lmi.memory"},
		{"ratio 1", Input{LMI: LMI{MemoryGiBPerVCPU: 1}}, "lmi.memory_gib_per_vcpu"},
		{"65 per vCPU", Input{LMI: LMI{MaxConcurrency: 65}}, "lmi.max_concurrency"},
		{"environment larger than the instance", Input{LMI: LMI{Memory: 16_384, MemoryGiBPerVCPU: 2}}, "lmi.memory"},
		{"utilization 1.5", Input{LMI: LMI{TargetUtilization: 1.5}}, "lmi.target_utilization"},
	} {
		in := c.in
		in.Rate, in.Duration = 10, ms(10)
		_, err := Make(in)
		var fe *FieldError
		if !errors.As(err, &fe) || fe.Field != c.field || !errors.Is(err, ErrInput) {
			t.Errorf("%s: err %v, want a FieldError on %s", c.name, err, c.field)
		}
	}
	// A handler that computes: 1 ms of CPU per record at 20,000 records/s is 20 vCPUs busy,
	// 40 with the 50% headroom: 20 m7g.large.
	p := mustMake(t, Input{Rate: 20_000, BatchSize: 20, BatchDuration: ms(50), LMI: LMI{CPUPerRecord: ms(1)}})
	if p.LMI.Instances != 20 {
		t.Errorf("instances %d, want ceil(20,000 × 0.001 s / 0.5 / 2 vCPU) = 20", p.LMI.Instances)
	}
}
