package capacity

import (
	"fmt"
	"math"
	"strings"
	"time"
)

// LMI is the Lambda Managed Instances part of an Input: the direct design's function run on
// the EC2 instances of a capacity provider, where one execution environment serves several
// invocations at once, priced by the instance hour (plus AWS's management fee) instead of by
// the GB-second.
//
// The model: the function needs as many concurrent invocations on LMI as on demand (a
// partition is in one invocation at a time either way); an execution environment of Memory
// MB has Memory / 1024 / MemoryGiBPerVCPU vCPUs and serves MaxConcurrency invocations; Lambda
// keeps TargetUtilization of them busy (the rest is its headroom) and at least 3 environments
// on at least 3 instances; the instances are as many InstanceType as hold the environments'
// vCPUs and memory (and, with CPUPerRecord, the records' CPU). A standard Kafka mapping
// carries at most 1 MB/s to an LMI function, and an account has at most 100 of them: a load
// above it is not carried by one mapping (lmi_limits.go cites each figure).
type LMI struct {
	// InstanceType is the capacity provider's instance type (AllowedInstanceTypes): one of
	// m7g.large (default on arm64), m7g.xlarge, c7g.large, c7g.xlarge, r7g.large, m7i.large
	// (default on x86_64), c7i.large; its architecture is Input.Architecture.
	InstanceType string `json:"instance_type,omitempty"`
	// Memory is the function's memory in MB on LMI: 2,048 (default, the smallest AWS allows)
	// to 32,768.
	Memory int `json:"memory,omitempty"`
	// MemoryGiBPerVCPU is ExecutionEnvironmentMemoryGiBPerVCpu, 2 (default) to 8.
	MemoryGiBPerVCPU float64 `json:"memory_gib_per_vcpu,omitempty"`
	// MaxConcurrency is PerExecutionEnvironmentMaxConcurrency: the invocations one execution
	// environment serves at once, 1 to 1,600 and at most 64 per vCPU. Default 64 per vCPU,
	// AWS's most, for a handler whose time is spent waiting (on I/O); a handler that computes
	// needs less (give CPUPerRecord, and the plan adds the vCPUs its records take).
	MaxConcurrency int `json:"max_concurrency,omitempty"`
	// TargetUtilization is the share of the capacity Lambda keeps in use, above 0 to 1;
	// default 0.5, the plan's reading of AWS's default headroom ("for your traffic to double
	// within 5 minutes").
	TargetUtilization float64 `json:"target_utilization,omitempty"`
	// CPUPerRecord is the CPU time (one vCPU's) the handler spends on a record; 0 (default):
	// not given, the plan counts concurrency and memory only.
	CPUPerRecord Duration `json:"cpu_per_record,omitempty"`
}

// fill checks l and fills its defaults and the instance's price into in.Prices.
func (l *LMI) fill(in *Input) error {
	if l.InstanceType == "" {
		l.InstanceType = lmiDefaultInstance[in.Architecture]
	}
	inst, ok := lmiInstanceByName(l.InstanceType)
	if !ok {
		return errField("lmi.instance_type", fmt.Sprintf("%q", l.InstanceType), fmt.Sprintf("want one of %s (the plan knows their vCPUs, memory and price)", strings.Join(lmiInstanceNames(), ", ")))
	}
	if inst.arch != in.Architecture {
		return errField("lmi.instance_type", l.InstanceType, fmt.Sprintf("is an %s instance and the functions are %s (architecture): want one of the %s instances", inst.arch, in.Architecture, in.Architecture))
	}
	if l.Memory == 0 {
		l.Memory = lmiMinMemory
	}
	if err := intIn("lmi.memory", l.Memory, lmiMinMemory, lmiMaxMemory); err != nil {
		return err
	}
	if l.MemoryGiBPerVCPU == 0 {
		l.MemoryGiBPerVCPU = lmiMinRatio
	}
	if err := finite("lmi.memory_gib_per_vcpu", l.MemoryGiBPerVCPU, lmiMinRatio, lmiMaxRatio); err != nil {
		return err
	}
	v := l.vcpus()
	if v < 1 {
		return errField("lmi.memory", l.Memory, fmt.Sprintf("gives %.6g vCPU at %g GiB per vCPU: an LMI function has at least 1 vCPU (%s)", v, l.MemoryGiBPerVCPU, srcLMIScaling))
	}
	if v > float64(inst.vcpus) || float64(l.Memory)/1024 > inst.memoryGiB {
		return errField("lmi.memory", l.Memory, fmt.Sprintf("an environment of %.6g vCPU and %d MB does not fit on a %s (%d vCPU, %g GiB)", v, l.Memory, inst.name, inst.vcpus, inst.memoryGiB))
	}
	most := min(lmiMaxEnvConcurrency, int(math.Floor(lmiMaxPerVCPU*v)))
	if l.MaxConcurrency == 0 {
		l.MaxConcurrency = most
	}
	if err := intIn("lmi.max_concurrency", l.MaxConcurrency, 1, most); err != nil {
		return errField("lmi.max_concurrency", l.MaxConcurrency, fmt.Sprintf("want 1 to %d: at most %d per vCPU on %.6g vCPU, and 1,600 (%s)", most, lmiMaxPerVCPU, v, srcLMIScaling))
	}
	if l.TargetUtilization == 0 {
		l.TargetUtilization = lmiDefaultUtilization
	}
	if math.IsNaN(l.TargetUtilization) || l.TargetUtilization <= 0 || l.TargetUtilization > 1 {
		return errField("lmi.target_utilization", l.TargetUtilization, "want a share above 0, at most 1")
	}
	if err := durIn("lmi.cpu_per_record", l.CPUPerRecord, kafkaTimeout); err != nil {
		return err
	}
	if in.Prices.LMIInstanceHour == 0 {
		in.Prices.LMIInstanceHour = inst.hourUSD
	}
	return nil
}

// vcpus is one execution environment's vCPUs.
func (l *LMI) vcpus() float64 { return float64(l.Memory) / 1024 / l.MemoryGiBPerVCPU }

// LMIPlan is the direct design's function on Lambda Managed Instances beside the direct
// design on demand, for the same load.
type LMIPlan struct {
	// ReachesTarget: the direct design reaches the target (LMI does not lift its bounds: a
	// partition is still in one invocation at a time) and the mappings the load needs are
	// within the account's 100. Bound says why not.
	ReachesTarget bool   `json:"reaches_target"`
	Bound         string `json:"bound,omitempty"`
	// MappingBytesPerSecond is the load's bytes a second; MappingsNeeded the standard Kafka
	// mappings that carry it at 1 MB/s each (1 when one does). More than one mapping means
	// the records split over as many topics (two mappings of one topic each read every
	// record): one mapping cannot carry the load.
	MappingBytesPerSecond float64 `json:"mapping_bytes_per_second"`
	MappingsNeeded        int     `json:"mappings_needed"`
	// MaxRecordsPerSecond is the most one standard mapping carries, and the direct design's
	// bounds allow, on LMI.
	MaxRecordsPerSecond float64 `json:"max_records_per_second"`
	// The capacity: InstanceType's vCPUs and memory, the execution environments and
	// instances the load needs (at least 3 of each: Lambda's default for AZ resiliency).
	InstanceType      string  `json:"instance_type"`
	InstanceVCPUs     int     `json:"instance_vcpus"`
	InstanceMemoryGiB float64 `json:"instance_memory_gib"`
	Environments      int     `json:"environments"`
	Instances         int     `json:"instances"`
	// MonthlyCostUSD is the sum of CostLines (instances, management fee, requests, event
	// poller units, DynamoDB writes, egress); nil when ReachesTarget is false.
	MonthlyCostUSD *float64   `json:"monthly_cost_usd"`
	CostLines      []CostLine `json:"cost_lines"`
	// OnDemandMonthlyUSD is the direct design's cost on demand for the same load (nil when
	// it does not reach the target); Cheaper is "lmi" or "on-demand" (on-demand when they
	// cost the same), empty when either has no cost.
	OnDemandMonthlyUSD *float64 `json:"on_demand_monthly_usd"`
	Cheaper            string   `json:"cheaper"`
	// BreakEvenRecordsPerSecond is the lowest rate, up to MaxRecordsPerSecond, from which the
	// instances and their fee cost no more than the on-demand GB-seconds of the same records
	// (the other lines are the same in both); nil when LMI is cheaper at no such rate.
	// BreakEven says it in words.
	BreakEvenRecordsPerSecond *float64 `json:"break_even_records_per_second"`
	BreakEven                 string   `json:"break_even"`
	Figures                   []Figure `json:"figures"`
	// Unconfirmed lists the figures of this part that could not be confirmed on an AWS page.
	Unconfirmed []string `json:"unconfirmed"`
}

// lmiModel is the arithmetic of the LMI part for one input.
type lmiModel struct {
	in   *Input
	inst lmiInstance
	dRec float64 // seconds of invocation per record: Db(B) / B
}

// environments is the execution environments a rate needs: its concurrent invocations over
// MaxConcurrency × TargetUtilization, at least 3.
func (m lmiModel) environments(conc int) int {
	l := m.in.LMI
	return max(lmiMinEnvironments, ceilInt(float64(conc)/(float64(l.MaxConcurrency)*l.TargetUtilization)))
}

// concurrency is the concurrent invocations a rate needs, as on demand.
func (m lmiModel) concurrency(rate float64) int { return max(1, ceilInt(rate*m.dRec)) }

// instances is the instances a rate needs: those that hold its environments' vCPUs and
// memory and its records' CPU over TargetUtilization, at least 3.
func (m lmiModel) instances(rate float64) int {
	l := m.in.LMI
	envs := m.environments(m.concurrency(rate))
	vcpu := math.Max(float64(envs)*l.vcpus(), rate*time.Duration(l.CPUPerRecord).Seconds()/l.TargetUtilization)
	mem := float64(envs) * float64(l.Memory) / 1024
	return max(lmiMinInstances, ceilInt(vcpu/float64(m.inst.vcpus)), ceilInt(mem/m.inst.memoryGiB))
}

// instanceMonthly is the month of n instances with the management fee.
func (m lmiModel) instanceMonthly(n int) float64 {
	p := m.in.Prices
	return float64(n) * p.LMIInstanceHour * (1 + p.LMIManagementFee) * monthHours
}

// onDemandSlope is the on-demand GB-seconds' cost of a month per record a second.
func (m lmiModel) onDemandSlope() float64 {
	return m.dRec * float64(m.in.Memory) / 1024 * m.in.Prices.LambdaGBSecond * monthSeconds
}

// breakEven is the lowest rate up to hi at which the instances cost no more than the
// on-demand GB-seconds, or false. The instances are a step function of the rate and the
// GB-seconds a line through 0: on each step of k instances the two meet at cost(k) / slope,
// if that rate is on the step; else the search goes on from the step's end.
func (m lmiModel) breakEven(hi float64) (float64, bool) {
	s := m.onDemandSlope()
	if s <= 0 || hi <= 0 {
		return 0, false
	}
	r := math.Min(minRate, hi)
	for range 100_000 {
		k := m.instances(r)
		cand := m.instanceMonthly(k) / s
		if cand <= r {
			return r, true
		}
		if cand > hi {
			if m.instances(hi) == k {
				return 0, false
			}
			cand = hi
		}
		if m.instances(cand) == k {
			return cand, true
		}
		// The step ends between r and cand: find its end, where k+ instances begin.
		lo, up := r, cand
		for range 200 {
			mid := (lo + up) / 2
			if mid <= lo || mid >= up {
				break
			}
			if m.instances(mid) == k {
				lo = mid
			} else {
				up = mid
			}
		}
		if up <= r || up > hi {
			return 0, false
		}
		r = up
	}
	return 0, false
}

// lmiPlan prices the direct design's function on LMI for in.Rate beside the direct design
// on demand (d).
func lmiPlan(in *Input, d Design) (LMIPlan, error) {
	field := "duration"
	if in.BatchDuration > 0 {
		field = "batch_duration"
	}
	s, err := newKafkaStage(in, "lmi", "ConsumerFunction", field, in.BatchSize, in.Duration, in.BatchDuration)
	if err != nil {
		return LMIPlan{}, err
	}
	l := in.LMI
	inst, _ := lmiInstanceByName(l.InstanceType)
	m := lmiModel{in: in, inst: inst, dRec: s.invocation(float64(s.b)) / float64(s.b)}
	p := LMIPlan{InstanceType: inst.name, InstanceVCPUs: inst.vcpus, InstanceMemoryGiB: inst.memoryGiB, CostLines: []CostLine{},
		Unconfirmed: []string{
			fmt.Sprintf("the %s price, $%g an hour: %s", inst.name, inst.hourUSD, srcEC2Price),
			"the management fee (15%), the request charge and the absence of a duration charge: " + srcLMIPricing,
			fmt.Sprintf("target_utilization %g is the plan's reading of AWS's default headroom, not a figure AWS gives (%s)", lmiDefaultUtilization, srcLMIScaling),
		}}
	var figs figures
	bytes := in.Rate * float64(in.RecordSize)
	p.MappingBytesPerSecond = bytes
	p.MappingsNeeded = max(1, ceilInt(bytes/lmiKafkaBytesPerSecond))
	figs.add("lmi.mappings_needed", float64(p.MappingsNeeded), "standard Kafka mappings",
		fmt.Sprintf("max(1, ceil(%.6g records/s × %d B / %d B/s)) = %d", in.Rate, in.RecordSize, lmiKafkaBytesPerSecond, p.MappingsNeeded), srcLMIQuotas)
	quotaRate := lmiKafkaBytesPerSecond / float64(in.RecordSize)
	p.MaxRecordsPerSecond = math.Min(d.MaxRecordsPerSecond, quotaRate)
	figs.add("lmi.max_records_per_second", p.MaxRecordsPerSecond, "records/s",
		fmt.Sprintf("min(direct %.6g records/s, %d B/s / %d B = %.6g records/s on one standard mapping)", d.MaxRecordsPerSecond, lmiKafkaBytesPerSecond, in.RecordSize, quotaRate), srcLMIQuotas)
	switch {
	case !d.ReachesTarget:
		p.Bound = "the direct design does not reach the target, and LMI does not lift its bound (a partition is in one invocation at a time on LMI too): " + d.Bound
	case p.MappingsNeeded > lmiKafkaMappings:
		p.Bound = fmt.Sprintf("%.6g MB/s needs %d standard Kafka mappings at 1 MB/s each, over the %d an account may have on LMI (neither raisable); AWS's quotas page does not say whether a mapping in provisioned mode is capped (not confirmed): on-demand Lambda or the fan-out design carries it", bytes/1e6, p.MappingsNeeded, lmiKafkaMappings)
	default:
		p.ReachesTarget = true
	}
	if p.MappingsNeeded > 1 && p.Bound == "" {
		p.Bound = fmt.Sprintf("one standard Kafka mapping carries at most 1 MB/s to an LMI function (not raisable): %.6g MB/s needs %d mappings, the records split over %d topics (two mappings of one topic each read every record); AWS's quotas page does not say whether a mapping in provisioned mode is capped (not confirmed), so the plan caps both modes", bytes/1e6, p.MappingsNeeded, p.MappingsNeeded)
		p.Unconfirmed = append(p.Unconfirmed, "whether provisioned mode lifts the 1 MB/s of a Kafka mapping on LMI: the quota names the standard mapping; "+srcLMIQuotas)
	}
	conc := m.concurrency(in.Rate)
	p.Environments = m.environments(conc)
	figs.add("lmi.vcpus_per_environment", l.vcpus(), "vCPU",
		fmt.Sprintf("%d MB / 1024 / %g GiB per vCPU = %.6g", l.Memory, l.MemoryGiBPerVCPU, l.vcpus()), srcLMIConfig)
	figs.add("lmi.environments", float64(p.Environments), "execution environments",
		fmt.Sprintf("max(%d, ceil(%d concurrent invocations / (%d per environment × %g target utilization))) = %d", lmiMinEnvironments, conc, l.MaxConcurrency, l.TargetUtilization, p.Environments), srcLMIScaling)
	p.Instances = m.instances(in.Rate)
	vcpu := fmt.Sprintf("%d environments × %.6g vCPU", p.Environments, l.vcpus())
	if l.CPUPerRecord > 0 {
		vcpu = fmt.Sprintf("max(%s, %.6g records/s × %.6g s CPU / %g)", vcpu, in.Rate, time.Duration(l.CPUPerRecord).Seconds(), l.TargetUtilization)
	}
	figs.add("lmi.instances", float64(p.Instances), inst.name,
		fmt.Sprintf("max(%d, ceil(%s / %d vCPU), ceil(%d × %d MB / 1024 / %g GiB)) = %d",
			lmiMinInstances, vcpu, inst.vcpus, p.Environments, l.Memory, inst.memoryGiB, p.Instances), srcLMIScaling)
	if d.MonthlyCostUSD != nil {
		od := *d.MonthlyCostUSD
		p.OnDemandMonthlyUSD = &od
	}
	if p.ReachesTarget {
		c := coster{in: in}
		hours := float64(p.Instances) * monthHours
		c.add(CostLine{Item: fmt.Sprintf("EC2 instances (%s, LMI)", inst.name), Quantity: hours, Unit: "instance-hours", UnitPrice: in.Prices.LMIInstanceHour,
			Formula: fmt.Sprintf("%d instances × %d hours = %g instance-hours × $%g", p.Instances, monthHours, hours, in.Prices.LMIInstanceHour),
			Source:  srcEC2Price})
		c.add(CostLine{Item: "LMI management fee", Quantity: hours, Unit: "instance-hours", UnitPrice: math.Round(in.Prices.LMIInstanceHour*in.Prices.LMIManagementFee*1e12) / 1e12,
			Formula: fmt.Sprintf("%g instance-hours × $%g × %g", hours, in.Prices.LMIInstanceHour, in.Prices.LMIManagementFee),
			Source:  srcLMIPricing})
		n := s.needs(in.Rate)
		beff, _ := s.perInvocationBatch(in.Rate, n)
		c.requests(s.function, in.Rate/beff, srcLMIPricing)
		c.pollerUnitsSplit(s.function, n.pollers, in.Rate, p.MappingsNeeded)
		c.writes(s.function)
		c.egress()
		p.CostLines, p.MonthlyCostUSD = c.lines, c.total()
		if p.OnDemandMonthlyUSD != nil {
			p.Cheaper = "on-demand"
			if *p.MonthlyCostUSD < *p.OnDemandMonthlyUSD {
				p.Cheaper = "lmi"
			}
		}
	}
	if r, ok := m.breakEven(p.MaxRecordsPerSecond); ok {
		p.BreakEvenRecordsPerSecond = &r
		k := m.instances(r)
		p.BreakEven = fmt.Sprintf("LMI costs no more than on demand from %.6g records/s: %d %s with the fee, $%.2f a month, against %.6g records/s × %.6g s × %d MB / 1024 × $%g × %d s = $%.2f of on-demand GB-seconds (requests, pollers and writes cost the same in both); above it LMI grows by whole instances",
			r, k, inst.name, m.instanceMonthly(k), r, m.dRec, in.Memory, in.Prices.LambdaGBSecond, monthSeconds, r*m.onDemandSlope())
	} else {
		p.BreakEven = fmt.Sprintf("LMI is not cheaper at any rate up to %.6g records/s (the most one standard mapping and the direct design carry): at least %d %s with the fee cost $%.2f a month, %.6g records/s of on-demand GB-seconds $%.2f",
			p.MaxRecordsPerSecond, lmiMinInstances, inst.name, m.instanceMonthly(m.instances(p.MaxRecordsPerSecond)), p.MaxRecordsPerSecond, p.MaxRecordsPerSecond*m.onDemandSlope())
		if r, ok := m.breakEven(d.MaxRecordsPerSecond); ok && r > p.MaxRecordsPerSecond {
			p.BreakEven += fmt.Sprintf("; past one mapping, the instances alone cost no more than the GB-seconds from %.6g records/s, which takes %d standard mappings (and their event poller units)",
				r, ceilInt(r*float64(in.RecordSize)/lmiKafkaBytesPerSecond))
		}
	}
	p.Figures = figs
	return p, nil
}
