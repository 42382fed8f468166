package capacity

import (
	"encoding/json"
	"fmt"
	"math"
)

// figures collects a design's Figures in the order they were computed.
type figures []Figure

func (f *figures) add(name string, value float64, unit, formula, source string) {
	*f = append(*f, Figure{Name: name, Value: value, Unit: unit, Formula: formula, Source: source})
}

// reaches is max >= rate, forgiving the rounding of the float arithmetic.
func reaches(mx, rate float64) bool { return mx >= rate*(1-1e-9) }

// makePlan makes the plan of a filled, checked Input.
func makePlan(in Input, notes []string) (*Plan, error) {
	p := &Plan{Input: in, Notes: append(planNotes(&in), notes...)}
	var err error
	if p.Direct, err = direct(&p.Input); err != nil {
		return nil, err
	}
	if p.Fanout, err = fanout(&p.Input); err != nil {
		return nil, err
	}
	if p.Input.KeyConcurrency > 0 {
		kc, err := keyConcurrent(&p.Input, p.Direct.PartitionsNeeded)
		if err != nil {
			return nil, err
		}
		p.KeyConcurrent = &kc
	}
	if p.LMI, err = lmiPlan(&p.Input, p.Direct); err != nil {
		return nil, err
	}
	// Only designs that reach the target are compared: one that does not has no cost. On a
	// tie the simpler design wins: direct, then key-concurrent (no queue), then the fan-out.
	for _, d := range p.Designs() {
		if !d.ReachesTarget {
			continue
		}
		if p.Cheaper == "" || *d.MonthlyCostUSD < *p.Design(p.Cheaper).MonthlyCostUSD {
			p.Cheaper = d.Name
		}
	}
	return p, nil
}

// Designs are the plan's designs in the order of a tie: direct, key-concurrent (when
// planned), fanout.
func (p *Plan) Designs() []*Design {
	ds := []*Design{&p.Direct}
	if p.KeyConcurrent != nil {
		ds = append(ds, p.KeyConcurrent)
	}
	return append(ds, &p.Fanout)
}

// Design returns the design named name ("direct", "key_concurrent", "fanout"), nil when the
// plan has none of that name.
func (p *Plan) Design(name string) *Design {
	for _, d := range p.Designs() {
		if d.Name == name {
			return d
		}
	}
	return nil
}

// partitionsFor is the partitions a design's maximum is computed at: the topic's, or those
// the rate needs (at least 1, at most the planner's bound).
func partitionsFor(in *Input, n need) int {
	if in.Partitions > 0 {
		return in.Partitions
	}
	return min(max(1, n.partitions), maxPartitions)
}

// direct is the direct design: Kafka -> mapping -> the function.
func direct(in *Input) (Design, error) {
	field := "duration"
	if in.BatchDuration > 0 {
		field = "batch_duration"
	}
	s, err := newKafkaStage(in, "function", "ConsumerFunction", field, in.BatchSize, in.Duration, in.BatchDuration)
	if err != nil {
		return Design{}, err
	}
	return designFrom(in, s, designDir), nil
}

// designFrom is the design named name of one function behind a Kafka mapping, the stage s:
// the direct design, or the key-concurrent one.
func designFrom(in *Input, s *kafkaStage, name string) Design {
	n := s.needs(in.Rate)
	parts := partitionsFor(in, n)
	st := s.stage(parts)
	d := Design{Name: name, MaxRecordsPerSecond: st.MaxRecordsPerSecond, Bound: st.Bound, Stages: []Stage{st}, CostLines: []CostLine{}}
	d.ReachesTarget = n.why == "" && reaches(d.MaxRecordsPerSecond, in.Rate)
	if n.why != "" {
		d.Bound = n.why
	} else {
		d.PollersNeeded, d.ConcurrencyNeeded, d.PartitionsNeeded = n.pollers, n.conc, n.partitions
		s.figs.addNeeds(s, n, in.Rate)
	}
	if d.ReachesTarget {
		d.EventPollerUnits = s.epus(in.Rate, n.pollers)
		beff, formula := s.perInvocationBatch(in.Rate, n)
		s.figs.add(s.name+".records_per_invocation_at_rate", beff, "records", formula, srcESMConfig)
		c := coster{in: in}
		c.function(s.function, in.Rate/beff, s.invocation(beff))
		c.pollerUnits(s.function, n.pollers, in.Rate)
		c.writes(s.function)
		c.egress()
		d.CostLines, d.MonthlyCostUSD = c.lines, c.total()
		r := recommend(in, n, s.needs)
		d.Recommended = &r
	} else {
		d.Lifts = s.lifts(n, parts)
	}
	if in.Burst > 0 {
		mx := d.MaxRecordsPerSecond
		d.Burst = simulate(in, func(int) float64 { return mx })
	}
	d.Figures = s.figs
	return d
}

// fanout is the fan-out design: Kafka -> mapping -> dispatcher -> SQS -> mapping -> workers.
func fanout(in *Input) (Design, error) {
	f := in.Fanout
	field := "fanout.dispatch_duration"
	if f.DispatchBatchDuration > 0 {
		field = "fanout.dispatch_batch_duration"
	}
	disp, err := newKafkaStage(in, "dispatcher", "DispatcherFunction", field, f.DispatchBatchSize, f.DispatchDuration, f.DispatchBatchDuration)
	if err != nil {
		return Design{}, err
	}
	q := newQueueStage(in)
	w, err := newWorkerStage(in, q.msgBytes)
	if err != nil {
		return Design{}, err
	}
	n := disp.needs(in.Rate)
	sd := disp.stage(partitionsFor(in, n))
	sq, qwhy := q.stage()
	sw := w.stage()
	d := Design{Name: designFan, Stages: []Stage{sd, sq, sw}, CostLines: []CostLine{}}
	low := sd
	for _, st := range d.Stages[1:] {
		if st.MaxRecordsPerSecond < low.MaxRecordsPerSecond {
			low = st
		}
	}
	d.MaxRecordsPerSecond, d.Bound = low.MaxRecordsPerSecond, low.Name+": "+low.Bound
	wc, wwhy := w.needs(in.Rate)
	why := firstOf(n.why, qwhy, wwhy)
	if why == "" && !reaches(sq.MaxRecordsPerSecond, in.Rate) {
		why = "queue: " + sq.Bound
	}
	d.ReachesTarget = why == "" && reaches(d.MaxRecordsPerSecond, in.Rate)
	if why != "" {
		d.Bound = why
	} else {
		d.PollersNeeded, d.ConcurrencyNeeded, d.PartitionsNeeded = n.pollers, wc, n.partitions
		disp.figs.addNeeds(disp, n, in.Rate)
		w.figs.add("workers.concurrency_needed", float64(wc), "invocations",
			fmt.Sprintf("ceil(%.6g records/s × %.6g s / %d) = %d", in.Rate, w.invocation(float64(w.bw)), w.bw, wc), srcSQSScaling)
	}
	if d.ReachesTarget {
		d.EventPollerUnits = disp.epus(in.Rate, n.pollers)
		beff, formula := disp.perInvocationBatch(in.Rate, n)
		disp.figs.add("dispatcher.records_per_invocation_at_rate", beff, "records", formula, srcESMConfig)
		c := coster{in: in}
		c.function(disp.function, in.Rate/beff, disp.invocation(beff))
		c.pollerUnits(disp.function, n.pollers, in.Rate)
		c.function("WorkerFunction", in.Rate/float64(w.bw), w.invocation(float64(w.bw)))
		c.queue(q, w.bw)
		c.writes("WorkerFunction")
		c.egress()
		d.CostLines, d.MonthlyCostUSD = c.lines, c.total()
		r := recommend(in, n, disp.needs)
		r.Concurrency = wc
		if burstConc, _ := w.needs(math.Max(in.Rate, in.Burst)); burstConc > 0 {
			r.Concurrency = burstConc
		}
		d.Recommended = &r
	} else {
		if n.why != "" || !reaches(sd.MaxRecordsPerSecond, in.Rate) {
			d.Lifts = append(d.Lifts, disp.lifts(n, partitionsFor(in, n))...)
		}
		d.Lifts = append(d.Lifts, fanoutLifts(in, q, w, sq)...)
	}
	if in.Burst > 0 {
		d.Burst = simulate(in, fanoutOut(in, sd, sq, w, wc))
	}
	d.Figures = append(append(append(figures{}, disp.figs...), q.figs...), w.figs...)
	return d, nil
}

// fanoutOut is the fan-out design's records per second, second by second from a burst's
// start: the dispatcher's and the queue's maximum, and the workers', which on a standard
// queue ramp from the steady rate's concurrency by 5 a second (300 a minute) up to their cap.
func fanoutOut(in *Input, sd, sq Stage, w *workerStage, steady int) func(int) float64 {
	fixed := math.Min(sd.MaxRecordsPerSecond, sq.MaxRecordsPerSecond)
	if in.Fanout.Queue == queueFIFO {
		mx := math.Min(fixed, w.capacityAt(w.cap))
		return func(int) float64 { return mx }
	}
	start := max(steady, sqsStartConcurrency)
	return func(t int) float64 {
		conc := min(w.cap, start+sqsRampPerSecond*t)
		return math.Min(fixed, w.capacityAt(conc))
	}
}

func firstOf(s ...string) string {
	for _, v := range s {
		if v != "" {
			return v
		}
	}
	return ""
}

// addNeeds records the counts a rate needs as figures.
func (f *figures) addNeeds(s *kafkaStage, n need, rate float64) {
	stage := s.name
	f.add(stage+".concurrency_needed", float64(n.conc), "invocations",
		fmt.Sprintf("ceil(%.6g records/s × %.6g s / %d records) = %d", rate, s.invocation(float64(s.b)), s.b, n.conc), srcOnePartition)
	f.add(stage+".pollers_needed", float64(n.pollers), "pollers",
		fmt.Sprintf("max(ceil(%d / %d invocations), ceil(%.6g records/s × %d B / %d B/s)) = %d (0 in on-demand mode: Lambda picks them)", n.conc, invocationsPerPoller, rate, s.in.RecordSize, pollerBytesPerSecond, n.pollers), srcLowLatency)
	f.add(stage+".partitions_needed", float64(n.partitions), "partitions",
		fmt.Sprintf("max(ceil(%d × %.6g partitions per invocation), %d pollers) = %d", n.conc, s.in.PartitionsPerInvocation, n.pollers, n.partitions), srcScalingModes)
}

// recommend is the configuration with headroom, for a design that reaches the target:
// MinimumPollers for the steady rate (at most the 200 AWS allows), the rest for the burst. A
// burst beyond any count leaves the steady rate's counts: the burst is then absorbed as lag
// (Design.Burst).
func recommend(in *Input, steady need, needs func(float64) need) Recommended {
	r := Recommended{MinimumPollers: min(steady.pollers, maxMinimumPollers), MaximumPollers: steady.pollers,
		Partitions: steady.partitions, Concurrency: steady.conc}
	if in.Burst > in.Rate {
		if b := needs(in.Burst); b.why == "" {
			r.MaximumPollers, r.Partitions, r.Concurrency = b.pollers, b.partitions, b.conc
		}
	}
	return r
}

// planNotes are what every plan assumes.
func planNotes(in *Input) []string {
	n := []string{
		"MB is 1,000,000 bytes: a poller's 5 MB/s and an event poller unit's 20 MB/s are taken as 5,000,000 and 20,000,000 bytes a second (AWS does not say which megabyte; the smaller errs towards more pollers)",
		fmt.Sprintf("a record takes ceil(record_size × 4/3) + %d bytes in the Kafka event (base64 and its JSON) and ceil(record_size × 4/3) + %d in fanout's SQS message: estimates", eventOverheadBytes, messageOverheadBytes),
		"costs are for a 30-day month (720 hours, 2,592,000 s) at the steady rate; Lambda bills each invocation rounded up to 1 ms and the plan does not round; the free tiers are not taken off",
		"data transfer inside the Region between Lambda, MSK, SQS and DynamoDB is not charged (https://aws.amazon.com/lambda/pricing/, Data Transfer): only egress_bytes, sent out of the Region, is",
		"concurrency caps each function; the fan-out design's dispatcher and workers draw on the same account's concurrent executions",
		"SQS requests count the dispatcher's sends and the mapping's receives and deletes; the mapping's empty long polls of an idle queue are not counted",
		"the SQS mapping is in its default (on-demand) scaling; provisioned mode for SQS mappings is not modelled; its cap is taken as 1,250 concurrent invocations (services-sqs-scaling: up to 1,250 once the account's quota is raised, 1,000 batches otherwise), which the account's default 1,000 caps first",
	}
	n = append(n, "lmi prices the direct design's function on Lambda Managed Instances; the fan-out's dispatcher and workers on LMI are not modelled (a standard SQS mapping on LMI carries at most 5 MB/s, not raisable: "+srcLMIQuotas+")")
	if in.KeyConcurrency > 0 {
		draw := fmt.Sprintf("drawn at random (Zipf exponent key_skew %g)", in.KeySkew)
		if in.KeysInTurn {
			draw = "sent in turn (keys_in_turn)"
		}
		n = append(n, fmt.Sprintf("key_concurrent is the direct design's function with batch.WithKeyConcurrency(%d): an invocation of b records lasts d × max(L(b), b / %d), L(b) the expected longest same-key chain of its records, their keys %s from the keys_per_invocation of the topic's %d keys; the partitions are taken as evenly loaded (a hot key's partition receiving more records is not modelled); docs/plan.md derives the formulas", in.KeyConcurrency, in.KeyConcurrency, draw, in.Keys))
		n = append(n, "key_concurrent needs batch.WithIdempotency (records after a failed one that succeeded come again on the redelivery and are skipped through the store): its DynamoDB writes are priced as the direct design's; lmi prices the direct design's function only")
	}
	if in.Duration > 0 {
		n = append(n, "the handler takes its records one after another (duration, not batch_duration): an invocation of n records lasts n × duration")
	} else {
		n = append(n, "an invocation of n records lasts batch_duration × n / batch_size (linear in its records)")
	}
	if in.Mode == modeOnDem {
		n = append(n, "on-demand mode: Lambda picks the pollers from the offset lag, so there are no event poller units to pay and no 5 MB/s per poller bound in the plan; pollers_needed is 0")
	} else {
		n = append(n, fmt.Sprintf("maximum_pollers %d: AWS's default MaximumPollers is %d (1 to %d; %s), so a plan that needs more says so and the mapping must set it; recommended.minimum_pollers is at most %d, MinimumPollers' bound", in.MaximumPollers, defaultMaximumPollers, maxPollers, srcPollerConfig, maxMinimumPollers))
	}
	if in.PollerGroup {
		n = append(n, fmt.Sprintf("poller_group: the mapping pays its share of its group's event poller units, unrounded; a group holds up to %d mappings whose maximum pollers add up to at most %d (%s)", pollerGroupMappings, maxPollers, srcPollerConfig))
	}
	if in.Fanout.Queue == queueStd {
		n = append(n, "a standard queue has no documented throughput limit: its stage's max_records_per_second is null in JSON (unbounded in the model)")
	}
	if in.Fanout.HighThroughput {
		n = append(n, fmt.Sprintf("the high-throughput FIFO queue takes %d API calls per second per action (fifo_calls_per_second; 2,400 by default, the lowest Regions' quota; us-east-1, us-west-2 and eu-west-1 have 70,000)", in.Fanout.FIFOCallsPerSecond))
	}
	return n
}

// MarshalJSON writes a Stage, its max_records_per_second null when the stage has no limit
// (a standard queue's, +Inf in the model): JSON has no infinity.
func (s Stage) MarshalJSON() ([]byte, error) {
	type plain Stage
	v := struct {
		plain
		Max *float64 `json:"max_records_per_second"`
	}{plain: plain(s)}
	if !math.IsInf(s.MaxRecordsPerSecond, 0) && !math.IsNaN(s.MaxRecordsPerSecond) {
		v.Max = &s.MaxRecordsPerSecond
	}
	return json.Marshal(v)
}

// UnmarshalJSON reads what MarshalJSON writes: a null maximum is +Inf.
func (s *Stage) UnmarshalJSON(b []byte) error {
	type plain Stage
	v := struct {
		*plain
		Max *float64 `json:"max_records_per_second"`
	}{plain: (*plain)(s)}
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	s.MaxRecordsPerSecond = math.Inf(1)
	if v.Max != nil {
		s.MaxRecordsPerSecond = *v.Max
	}
	return nil
}
