package localstack

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Faults klt local --faults injects, one record each.
const (
	faultPoison    = "poison"    // an invalid order: permanent, the handler refuses it
	faultTransient = "transient" // the orders API answers 503 to its first attempt
	faultTimeout   = "timeout"   // its first invocation does not answer: the function times out
)

// produced is one record the load put in the topic.
type produced struct {
	key      string // recordKey
	customer string // the record's key
	orderID  int64
	value    []byte
	fault    string // "" or one of the faults
	at       time.Time
}

// loadSpec is the load of one phase.
type loadSpec struct {
	topic   string
	records int
	keys    int
	rate    float64          // records per second; 0 = as fast as the producer goes
	firstID int64            // order IDs are firstID, firstID+1...
	faults  map[int64]string // order ID -> fault
}

// orderValue is the JSON of order id for customer; poison makes it invalid (a negative total).
func orderValue(id int64, customer string, poison bool) []byte {
	total := float64(id%9000)/100 + 1
	if poison {
		total = -1
	}
	currency := "EUR"
	if id%2 == 0 {
		currency = "USD"
	}
	b, _ := json.Marshal(map[string]any{"orderId": id, "customer": customer, "total": total, "currency": currency, "status": "placed"})
	return b
}

// produceLoad produces the records of spec through the producer package (acks from all
// in-sync replicas, idempotent, murmur2 partitioning by key, as a Java client would) and
// returns them with their partitions and offsets, in produce order.
func produceLoad(ctx context.Context, cl *kgo.Client, spec loadSpec) ([]produced, error) {
	const chunk = 500
	out := make([]produced, 0, spec.records)
	start := time.Now()
	for i := 0; i < spec.records; {
		n := min(chunk, spec.records-i)
		if spec.rate > 0 {
			// Hold the rate, in chunks of a tenth of a second: the chunk's first record goes
			// out at start + i/rate.
			n = min(n, max(1, int(math.Ceil(spec.rate/10))))
			if d := time.Until(start.Add(time.Duration(float64(i) / spec.rate * float64(time.Second)))); d > 0 {
				select {
				case <-time.After(d):
				case <-ctx.Done():
					return out, ctx.Err()
				}
			}
		}
		recs := make([]*kgo.Record, n)
		batch := make([]produced, n)
		for j := range recs {
			idx := i + j
			id := spec.firstID + int64(idx)
			customer := fmt.Sprintf("customer-%03d", idx%spec.keys)
			p := produced{customer: customer, orderID: id, fault: spec.faults[id]}
			p.value = orderValue(id, customer, p.fault == faultPoison)
			batch[j] = p
			recs[j] = &kgo.Record{Topic: spec.topic, Key: []byte(customer), Value: p.value}
		}
		rs := producer.Produce(ctx, cl, recs...)
		if err := rs.Err(); err != nil {
			return out, fmt.Errorf("producing the load: %w", err)
		}
		for j, r := range rs {
			batch[j].key = recordKey(r.Record.Topic, r.Record.Partition, r.Record.Offset)
			batch[j].at = r.Record.Timestamp
		}
		out = append(out, batch...)
		i += n
	}
	return out, nil
}

// orderViolations counts, per customer, the records applied (first time) before an order of
// that customer produced earlier: apps are the first applications, in the order they happened.
func orderViolations(first []application, orderOf map[string]int64) int {
	sorted := append([]application(nil), first...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].at.Before(sorted[j].at) })
	last := map[string]int64{}
	n := 0
	for _, a := range sorted {
		id := orderOf[a.key]
		if prev, ok := last[a.customer]; ok && id < prev {
			n++
			continue
		}
		last[a.customer] = id
	}
	return n
}
