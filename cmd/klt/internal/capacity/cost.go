package capacity

import (
	"fmt"
	"math"
)

// EventPollerUnits is the event poller units a set of Kafka mappings takes by their pollers
// alone (10 pollers an EPU): ungrouped, each mapping pays its own, the sum of ceil(p/10);
// in one poller group they share, ceil(sum/10). AWS's example: 10 mappings of one poller each
// take 10 EPUs ungrouped ($1,332 a month at $0.185 an EPU-hour) and 1 grouped ($133.20).
// https://aws.amazon.com/lambda/pricing/ (Provisioned Mode for ESM).
func EventPollerUnits(pollers []int, grouped bool) int {
	sum, each := 0, 0
	for _, p := range pollers {
		sum += p
		each += (p + pollersPerEPU - 1) / pollersPerEPU
	}
	if grouped {
		return (sum + pollersPerEPU - 1) / pollersPerEPU
	}
	return each
}

// epus is the EPUs the stage's mapping takes at rate with pollers: one for every 10 pollers
// and every 20 MB/s, whichever is more. 0 in on-demand mode.
func (s *kafkaStage) epus(rate float64, pollers int) int {
	if !s.provisioned() {
		return 0
	}
	e := max(EventPollerUnits([]int{pollers}, false), ceilInt(rate*float64(s.in.RecordSize)/epuBytesPerSecond))
	s.figs.add(s.name+".event_poller_units", float64(e), "EPUs",
		fmt.Sprintf("max(ceil(%d pollers / %d), ceil(%.6g records/s × %d B / %d B/s)) = %d", pollers, pollersPerEPU, rate, s.in.RecordSize, epuBytesPerSecond, e), srcEPUPricing)
	return e
}

// coster adds up a design's cost lines.
type coster struct {
	in    *Input
	lines []CostLine
}

func (c *coster) add(l CostLine) {
	l.MonthlyUSD = l.Quantity * l.UnitPrice
	c.lines = append(c.lines, l)
}

// total is the sum of the lines, Design.MonthlyCostUSD.
func (c *coster) total() *float64 {
	t := 0.0
	for _, l := range c.lines {
		t += l.MonthlyUSD
	}
	return &t
}

// function adds a function's requests and GB-seconds: invPerSec invocations a second of
// seconds each.
func (c *coster) function(name string, invPerSec, seconds float64) {
	p := c.in.Prices
	inv := invPerSec * monthSeconds
	c.requests(name, invPerSec, srcLambdaPricing)
	gbs := inv * seconds * float64(c.in.Memory) / 1024
	c.add(CostLine{Item: "Lambda duration (" + name + ", " + c.in.Architecture + ")", Quantity: gbs, Unit: "GB-seconds",
		UnitPrice: p.LambdaGBSecond,
		Formula:   fmt.Sprintf("%.6g invocations × %.6g s × %d MB / 1024 = %.6g GB-s × $%g", inv, seconds, c.in.Memory, gbs, p.LambdaGBSecond),
		Source:    srcLambdaPricing})
}

// requests adds a function's requests: invPerSec invocations a second, priced per million as
// source states (on demand and on LMI alike).
func (c *coster) requests(name string, invPerSec float64, source string) {
	p := c.in.Prices
	inv := invPerSec * monthSeconds
	c.add(CostLine{Item: "Lambda requests (" + name + ")", Quantity: inv / 1e6, Unit: "million requests",
		UnitPrice: p.LambdaRequests,
		Formula:   fmt.Sprintf("%.6g invocations/s × %d s = %.6g invocations = %.6g million × $%g", invPerSec, monthSeconds, inv, inv/1e6, p.LambdaRequests),
		Source:    source})
}

// pollerUnitsSplit adds the EPU-hours of the load split over mappings Kafka mappings, each
// with its share of the pollers (at least 1) and of the rate; one mapping is pollerUnits.
// Ungrouped, each mapping pays its own EPUs; in a poller group they share them, unrounded.
func (c *coster) pollerUnitsSplit(name string, pollers int, rate float64, mappings int) {
	if mappings <= 1 {
		c.pollerUnits(name, pollers, rate)
		return
	}
	if c.in.Mode != modeProv {
		return
	}
	each := max(1, ceilInt(float64(pollers)/float64(mappings)))
	mb := rate / float64(mappings) * float64(c.in.RecordSize) / 1e6
	units := math.Max(math.Ceil(float64(each)/pollersPerEPU), math.Ceil(mb*1e6/epuBytesPerSecond-1e-9)) * float64(mappings)
	how := fmt.Sprintf("%d mappings × max(ceil(%d pollers / %d), ceil(%.6g MB/s / 20 MB/s)) = %g EPUs", mappings, each, pollersPerEPU, mb, units)
	if c.in.PollerGroup {
		units = math.Max(float64(each*mappings)/pollersPerEPU, rate*float64(c.in.RecordSize)/epuBytesPerSecond)
		how = fmt.Sprintf("max(%d mappings × %d pollers / %d, %.6g MB/s / 20 MB/s) = %.6g EPUs, the mappings' share of their poller group's", mappings, each, pollersPerEPU, rate*float64(c.in.RecordSize)/1e6, units)
	}
	hours := units * monthHours
	c.add(CostLine{Item: fmt.Sprintf("Event poller units (%s's %d Kafka mappings)", name, mappings), Quantity: hours, Unit: "EPU-hours",
		UnitPrice: c.in.Prices.EventPollerUnitHour,
		Formula:   fmt.Sprintf("%s × %d hours = %.6g EPU-hours × $%g", how, monthHours, hours, c.in.Prices.EventPollerUnitHour),
		Source:    srcEPUPricing})
}

// pollerUnits adds the EPU-hours of a Kafka mapping in provisioned mode: its EPUs, or in a
// poller group its share of the group's, unrounded (the group rounds its total).
func (c *coster) pollerUnits(name string, pollers int, rate float64) {
	if c.in.Mode != modeProv {
		return
	}
	byPollers := float64(pollers) / pollersPerEPU
	byBytes := rate * float64(c.in.RecordSize) / epuBytesPerSecond
	units := math.Max(math.Ceil(byPollers), math.Ceil(byBytes-math.Abs(byBytes)*1e-9))
	how := fmt.Sprintf("max(ceil(%d pollers / %d), ceil(%.6g MB/s / 20 MB/s)) = %g EPUs", pollers, pollersPerEPU, rate*float64(c.in.RecordSize)/1e6, units)
	if c.in.PollerGroup {
		units = math.Max(byPollers, byBytes)
		how = fmt.Sprintf("max(%d pollers / %d, %.6g MB/s / 20 MB/s) = %.6g EPUs, the mapping's share of its poller group's", pollers, pollersPerEPU, rate*float64(c.in.RecordSize)/1e6, units)
	}
	hours := units * monthHours
	c.add(CostLine{Item: "Event poller units (" + name + "'s Kafka mapping)", Quantity: hours, Unit: "EPU-hours",
		UnitPrice: c.in.Prices.EventPollerUnitHour,
		Formula:   fmt.Sprintf("%s × %d hours = %.6g EPU-hours × $%g", how, monthHours, hours, c.in.Prices.EventPollerUnitHour),
		Source:    srcEPUPricing})
}

// queue adds the SQS requests of the fan-out: the dispatcher's SendMessageBatch calls, the
// mapping's ReceiveMessage and DeleteMessageBatch calls (10 messages at most each), each
// billed in 64 KB chunks of its payload (a delete carries no message: one chunk).
func (c *coster) queue(q *queueStage, bw int) {
	price, kind := c.in.Prices.SQSStandardRequests, "standard"
	if q.fifo() {
		price, kind = c.in.Prices.SQSFIFORequests, "FIFO"
	}
	rate := c.in.Rate
	per := min(bw, sqsBatchEntries)
	for _, r := range []struct {
		what    string
		entries int
		payload bool
	}{
		{"SendMessageBatch", q.entries, true},
		{"ReceiveMessage", per, true},
		{"DeleteMessageBatch", per, false},
	} {
		calls := rate / float64(r.entries) * monthSeconds
		chunks := 1
		if r.payload {
			chunks = (r.entries*q.msgBytes + sqsChunkBytes - 1) / sqsChunkBytes
		}
		n := calls * float64(chunks)
		c.add(CostLine{Item: fmt.Sprintf("SQS %s requests (%s)", kind, r.what), Quantity: n / 1e6, Unit: "million requests",
			UnitPrice: price,
			Formula: fmt.Sprintf("%.6g records/s / %d per call × %d s × %d chunks of 64 KB (%d × %d B) = %.6g million × $%g",
				rate, r.entries, monthSeconds, chunks, r.entries, chunkBytes(r.payload, q.msgBytes), n/1e6, price),
			Source: srcSQSPricing})
	}
}

func chunkBytes(payload bool, msgBytes int) int {
	if !payload {
		return 0
	}
	return msgBytes
}

// writes adds the DynamoDB writes of idempotency by the function that makes them.
func (c *coster) writes(name string) {
	in := c.in
	if in.IdempotencyWrites == noWrites {
		return
	}
	units := (in.IdempotencyItemSize + writeUnitBytes - 1) / writeUnitBytes
	n := in.Rate * float64(in.IdempotencyWrites*units) * monthSeconds
	c.add(CostLine{Item: "DynamoDB writes (idempotency, " + name + ")", Quantity: n / 1e6, Unit: "million write request units",
		UnitPrice: in.Prices.DynamoDBWriteUnits,
		Formula: fmt.Sprintf("%.6g records/s × %d writes × ceil(%d B / 1024) = %d units × %d s = %.6g million × $%g",
			in.Rate, in.IdempotencyWrites, in.IdempotencyItemSize, units, monthSeconds, n/1e6, in.Prices.DynamoDBWriteUnits),
		Source: srcDynamoDBPricing})
}

// egress adds the data the functions send out of the Region.
func (c *coster) egress() {
	in := c.in
	if in.EgressBytes == 0 {
		return
	}
	gb := in.Rate * float64(in.EgressBytes) * monthSeconds / 1e9
	c.add(CostLine{Item: "Data transfer out of the Region", Quantity: gb, Unit: "GB",
		UnitPrice: in.Prices.DataTransferOutPerGB,
		Formula:   fmt.Sprintf("%.6g records/s × %d B × %d s / 1e9 = %.6g GB × $%g", in.Rate, in.EgressBytes, monthSeconds, gb, in.Prices.DataTransferOutPerGB),
		Source:    srcTransferPricing})
}
