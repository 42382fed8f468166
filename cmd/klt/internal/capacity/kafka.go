package capacity

import (
	"fmt"
	"math"
	"strconv"
	"time"
)

// kafkaStage is a function behind a Kafka mapping: the direct design's function or the
// fan-out design's dispatcher. It holds what the stage's figures are made of; its methods
// compute the figures.
type kafkaStage struct {
	name     string // "function" or "dispatcher"
	function string // the sample stack's function: "ConsumerFunction"
	in       *Input
	// batchSize is the mapping's BatchSize; perRecord or perBatch the handler's time.
	batchSize int
	perRecord time.Duration
	perBatch  time.Duration

	eventBytes int // one record's bytes in the event
	b          int // records per invocation: BatchSize, or fewer by the 6 MB payload
	figs       figures
	// kc is the invocation's time under key concurrency (the key-concurrent design); nil: the
	// records one after another.
	kc *kcTime
}

// newKafkaStage checks the stage's invocation against the payload and the timeout (field
// names the input its time came from, for the error) and records the figures every other
// one rests on.
func newKafkaStage(in *Input, name, function, field string, batchSize int, perRecord, perBatch Duration) (*kafkaStage, error) {
	return newKafkaStageTimed(in, name, function, field, batchSize, perRecord, perBatch, nil, nil)
}

// newKafkaStageTimed is newKafkaStage with the invocation's time under key concurrency (kc,
// nil for none) and figures to put first (pre).
func newKafkaStageTimed(in *Input, name, function, field string, batchSize int, perRecord, perBatch Duration, kc *kcTime, pre figures) (*kafkaStage, error) {
	s := &kafkaStage{name: name, function: function, in: in, batchSize: batchSize,
		perRecord: time.Duration(perRecord), perBatch: time.Duration(perBatch), kc: kc, figs: pre}
	s.eventBytes = eventBytes(in.RecordSize)
	s.figs.add(name+".event_bytes_per_record", float64(s.eventBytes), "bytes",
		fmt.Sprintf("ceil(%d × 4/3) + %d = %d (the value in base64, and the record's JSON around it: an estimate)", in.RecordSize, eventOverheadBytes, s.eventBytes), srcESMConfig)
	if s.eventBytes > payloadBytes {
		return nil, errField("record_size", in.RecordSize, fmt.Sprintf("its event takes about %d bytes, over the %d-byte (6 MB) payload of an invocation: the mapping cannot deliver it", s.eventBytes, payloadBytes))
	}
	s.b = min(batchSize, payloadBytes/s.eventBytes)
	s.figs.add(name+".records_per_invocation", float64(s.b), "records",
		fmt.Sprintf("min(BatchSize %d, floor(%d / %d)) = %d", batchSize, payloadBytes, s.eventBytes, s.b), srcESMConfig)
	if kc != nil {
		kc.addFigures(&s.figs, name, s.b)
	}
	d := s.invocation(float64(s.b))
	s.figs.add(name+".invocation_seconds", d, "s", s.durationFormula(d), srcOnePartition)
	if time.Duration(d*float64(time.Second)) > kafkaTimeout {
		v := perRecord
		if perBatch > 0 {
			v = perBatch
		}
		return nil, errField(field, v, fmt.Sprintf("an invocation of %d records then lasts %.6g s, over the %v a Kafka mapping's function may run (%s)", s.b, d, kafkaTimeout, srcKafkaTimeout))
	}
	perInv := float64(s.b) / d
	s.figs.add(name+".records_per_second_per_invocation", perInv, "records/s",
		fmt.Sprintf("%d records / %.6g s = %.6g", s.b, d, perInv), srcOnePartition)
	if s.provisioned() {
		pp := s.perPoller()
		s.figs.add(name+".records_per_second_per_poller", pp, "records/s",
			fmt.Sprintf("min(%d invocations × %.6g records/s, %d B/s / %d B) = %.6g", invocationsPerPoller, perInv, pollerBytesPerSecond, in.RecordSize, pp), srcLowLatency)
	}
	return s, nil
}

// eventBytes is one record's bytes in a Kafka event: its value in base64 and the JSON around
// it, an estimate.
func eventBytes(recordSize int) int {
	return int(math.Ceil(float64(recordSize)*4/3)) + eventOverheadBytes
}

func (s *kafkaStage) provisioned() bool { return s.in.Mode == modeProv }

// invocation is Db(n), the seconds of an invocation of n records: n times the time per
// record, or the batch's time scaled linearly to n records.
func (s *kafkaStage) invocation(n float64) float64 {
	seq := n
	if s.kc != nil {
		seq = s.kc.records(n)
	}
	if s.perBatch > 0 {
		return s.perBatch.Seconds() * seq / float64(s.batchSize)
	}
	return seq * s.perRecord.Seconds()
}

func (s *kafkaStage) durationFormula(d float64) string {
	if s.kc != nil {
		per := s.perRecord.String()
		if s.perBatch > 0 {
			per = fmt.Sprintf("%v / %d", s.perBatch, s.batchSize)
		}
		_, l := s.kc.keys.figures(float64(s.b))
		return fmt.Sprintf("%s × max(longest key chain %.6g, %d records / key_concurrency %d) = %.6g (records of one key one after another, at most %d in flight)",
			per, l, s.b, s.kc.n, d, s.kc.n)
	}
	if s.perBatch > 0 {
		return fmt.Sprintf("%v × %d / %d = %.6g (the batch's time, linear in its records)", s.perBatch, s.b, s.batchSize, d)
	}
	return fmt.Sprintf("%d × %v = %.6g (the records one after another)", s.b, s.perRecord, d)
}

// perPoller is one provisioned poller's records per second: its 5 invocations, or its 5 MB/s.
func (s *kafkaStage) perPoller() float64 {
	perInv := float64(s.b) / s.invocation(float64(s.b))
	return math.Min(invocationsPerPoller*perInv, pollerBytesPerSecond/float64(s.in.RecordSize))
}

// need is what a stage needs for a rate: its concurrency, pollers and partitions, or why no
// count reaches the rate.
type need struct {
	conc, pollers, partitions int
	why                       string // empty when the counts reach the rate
}

// needs computes the counts for rate.
func (s *kafkaStage) needs(rate float64) need {
	d := s.invocation(float64(s.b))
	var n need
	n.conc = max(1, ceilInt(rate*d/float64(s.b)))
	if s.provisioned() {
		n.pollers = max(ceilInt(float64(n.conc)/invocationsPerPoller), ceilInt(rate*float64(s.in.RecordSize)/pollerBytesPerSecond))
	}
	n.partitions = max(ceilInt(float64(n.conc)*s.in.PartitionsPerInvocation), n.pollers)
	switch {
	case n.pollers > maxPollers:
		n.why = fmt.Sprintf("%s: %d pollers needed, over the %d a mapping can have (ProvisionedPollerConfig's MaximumPollers)", s.name, n.pollers, maxPollers)
	case n.conc > s.in.Concurrency:
		n.why = fmt.Sprintf("%s: %d concurrent invocations needed, over the concurrency of %d", s.name, n.conc, s.in.Concurrency)
	case n.partitions > maxPartitions:
		n.why = fmt.Sprintf("%s: %d partitions needed, over the planner's bound of %d", s.name, n.partitions, maxPartitions)
	}
	return n
}

// stage computes the stage's maximum at the given partitions (Input.Partitions, or those
// needed), and the figures of it.
func (s *kafkaStage) stage(partitions int) Stage {
	in := s.in
	d := s.invocation(float64(s.b))
	// floor(partitions / PartitionsPerInvocation) invocations at once, and at least one: a
	// topic with fewer partitions than an invocation holds on average still has one running.
	byParts := max(1, int(float64(partitions)/in.PartitionsPerInvocation))
	conc := min(byParts, in.Concurrency)
	pollers := 0
	if s.provisioned() {
		pollers = min(in.MaximumPollers, partitions, maxPollers)
		s.figs.add(s.name+".pollers_max", float64(pollers), "pollers",
			fmt.Sprintf("min(MaximumPollers %d, partitions %d, %d) = %d", in.MaximumPollers, partitions, maxPollers, pollers), srcScalingModes)
		conc = min(conc, invocationsPerPoller*pollers)
	}
	s.figs.add(s.name+".concurrency_max", float64(conc), "invocations",
		fmt.Sprintf("min(floor(%d partitions / %.6g per invocation) = %d, concurrency %d%s) = %d", partitions, in.PartitionsPerInvocation, byParts, in.Concurrency, pollerTerm(s.provisioned(), pollers), conc), srcOnePartition)
	byConc := float64(conc) * float64(s.b) / d
	st := Stage{Name: s.name, MaxRecordsPerSecond: byConc, Source: srcOnePartition + "; " + srcLowLatency,
		Formula: fmt.Sprintf("%d concurrent invocations × %d records / %.6g s = %.6g records/s", conc, s.b, d, byConc)}
	switch {
	case conc == byParts && byParts <= in.Concurrency:
		st.Bound = fmt.Sprintf("%d partitions, one invocation each at a time (partitions per invocation: %.6g), %.6g s per invocation of %d records", partitions, in.PartitionsPerInvocation, d, s.b)
	case conc == in.Concurrency:
		st.Bound = fmt.Sprintf("the concurrency of %d invocations, %.6g s per invocation of %d records", in.Concurrency, d, s.b)
	default:
		st.Bound = fmt.Sprintf("%d pollers (%s), 5 concurrent invocations each, %.6g s per invocation of %d records", pollers, pollersWhy(in, partitions, pollers), d, s.b)
	}
	if s.provisioned() {
		byBytes := float64(pollers) * pollerBytesPerSecond / float64(in.RecordSize)
		if byBytes < byConc {
			st.MaxRecordsPerSecond = byBytes
			st.Bound = fmt.Sprintf("%d pollers (%s) at 5 MB/s each, records of %d bytes", pollers, pollersWhy(in, partitions, pollers), in.RecordSize)
			st.Formula = fmt.Sprintf("min(%s, %d pollers × %d B/s / %d B = %.6g records/s)", st.Formula, pollers, pollerBytesPerSecond, in.RecordSize, byBytes)
		}
	}
	return st
}

func pollerTerm(provisioned bool, pollers int) string {
	if !provisioned {
		return ""
	}
	return fmt.Sprintf(", %d pollers × %d", pollers, invocationsPerPoller)
}

// pollersWhy says what set the pollers.
func pollersWhy(in *Input, partitions, pollers int) string {
	switch {
	case pollers == partitions && partitions < in.MaximumPollers:
		return "capped at the partitions"
	case pollers == in.MaximumPollers && in.MaximumPollers < maxPollers:
		return "MaximumPollers"
	default:
		return "the most a mapping has"
	}
}

// perInvocationBatch is the records an invocation carries at rate, with n the counts the rate
// needs: a batch closes when full or when the window has passed since its first record; with
// no window, an invocation takes what has arrived while the last one ran (a fixed point, found
// in a few steps).
func (s *kafkaStage) perInvocationBatch(rate float64, n need) (float64, string) {
	b := float64(s.b)
	w := time.Duration(s.in.Window).Seconds()
	if w > 0 {
		pollers := n.pollers
		if pollers == 0 { // on-demand: as many as a provisioned mapping would have
			pollers = ceilInt(float64(n.conc) / invocationsPerPoller)
		}
		pollers = max(1, pollers)
		beff := math.Min(b, math.Max(1, rate/float64(pollers)*w))
		return beff, fmt.Sprintf("min(%d, max(1, %.6g records/s / %d pollers × %.6g s window)) = %.6g", s.b, rate, pollers, w, beff)
	}
	conc := max(1, n.conc)
	beff := b
	for range 8 {
		beff = math.Min(b, math.Max(1, rate/float64(conc)*s.invocation(beff)))
	}
	return beff, fmt.Sprintf("min(%d, max(1, %.6g records/s / %d invocations × Db(n))), a fixed point after 8 steps (no window) = %.6g", s.b, rate, conc, beff)
}

// ceilInt is math.Ceil as an int, for figures the input bounds keep far below 2^53. It
// forgives a relative error of 1e-9, so that 20,000 × 0.05 / 20 is 50 and not 51.
func ceilInt(v float64) int { return int(math.Ceil(v - math.Abs(v)*1e-9)) }

// lifts are the inputs that lift the stage's bound when it does not reach the rate, with n
// the counts the rate needs and partitions those the stage's maximum was computed at: more
// partitions, a higher concurrency, a higher MaximumPollers, each when it is within its range.
func (s *kafkaStage) lifts(n need, partitions int) []Lift {
	in := s.in
	var l []Lift
	if n.partitions > partitions && n.partitions <= maxPartitions {
		l = append(l, Lift{Field: "partitions", Value: strconv.Itoa(n.partitions),
			Why: fmt.Sprintf("%d partitions hold the %d concurrent invocations of the %s the target needs: one invocation per partition at a time", n.partitions, n.conc, s.name), Source: srcOnePartition})
	}
	if n.conc > in.Concurrency && n.conc <= maxConcurrency {
		l = append(l, Lift{Field: "concurrency", Value: strconv.Itoa(n.conc),
			Why: fmt.Sprintf("the %s needs %d concurrent invocations: reserved concurrency, or a higher concurrent executions quota (1,000 a Region by default)", s.name, n.conc), Source: srcLambdaLimits})
	}
	if s.provisioned() && n.pollers > in.MaximumPollers && n.pollers <= maxPollers {
		l = append(l, Lift{Field: "maximum_pollers", Value: strconv.Itoa(n.pollers),
			Why: fmt.Sprintf("the %s's mapping needs %d pollers: set ProvisionedPollerConfig's MaximumPollers (AWS's default is 200, the most 2,000)", s.name, n.pollers), Source: srcPollerConfig})
	}
	return l
}
