package filter_test

// The benchmark input, apart from the benchmarks, with nothing but the standard library: the
// Quamina comparison (scripts/bench-quamina) builds this file into a scratch module beside
// Quamina, so that both sides run on exactly these patterns and documents.

import (
	"bytes"
	"fmt"
	"math/rand/v2"
	"sync"
)

// benchPatterns are five filters of the kind Kafka consumers write: an exact value, a prefix,
// a field inside an array of objects, anything-but with exists, and equals-ignore-case.
var benchPatterns = []string{
	`{"status":["CREATED"]}`,
	`{"orderId":[{"prefix":"ord-1"}]}`,
	`{"items":{"sku":["SKU-0042"]}}`,
	`{"status":[{"anything-but":["CANCELLED","REFUNDED"]}],"customer":{"tier":[{"exists":true}]}}`,
	`{"channel":[{"equals-ignore-case":"WEB"}]}`,
}

const benchDocCount = 1000

// benchDocs generates the benchmark input: 1000 orders of about 200 bytes of JSON each, from
// a fixed seed, such as
//
//	{"orderId":"ord-1520661","status":"PAID","customer":{"id":"cust-04711","tier":"gold"},
//	"items":[{"sku":"SKU-0042","qty":2,"price":19.99}],"channel":"Web","amount":39.98}
//
// Each pattern matches a realistic fraction of them (see TestBenchDocsFractions): status
// among six values, an orderId prefix one in nine, one to three items of fifty SKUs, a tier
// seven times in ten, the channel in mixed case.
var benchDocs = sync.OnceValue(func() [][]byte {
	rng := rand.New(rand.NewPCG(1, 2))
	pick := func(weights map[string]int, order []string) string {
		total := 0
		for _, k := range order {
			total += weights[k]
		}
		n := rng.IntN(total)
		for _, k := range order {
			if n < weights[k] {
				return k
			}
			n -= weights[k]
		}
		panic("unreachable")
	}
	statuses := []string{"CREATED", "PAID", "SHIPPED", "DELIVERED", "CANCELLED", "REFUNDED"}
	statusW := map[string]int{"CREATED": 30, "PAID": 25, "SHIPPED": 20, "DELIVERED": 10, "CANCELLED": 10, "REFUNDED": 5}
	channels := []string{"web", "WEB", "Web", "mobile", "Mobile", "POS", "partner"}
	channelW := map[string]int{"web": 15, "WEB": 10, "Web": 20, "mobile": 20, "Mobile": 10, "POS": 15, "partner": 10}
	tiers := []string{"gold", "silver", "bronze"}

	docs := make([][]byte, benchDocCount)
	for i := range docs {
		var b bytes.Buffer
		fmt.Fprintf(&b, `{"orderId":"ord-%07d","status":"%s","customer":{"id":"cust-%05d"`,
			1000000+rng.IntN(9000000), pick(statusW, statuses), rng.IntN(100000))
		if rng.IntN(10) < 7 {
			fmt.Fprintf(&b, `,"tier":"%s"`, tiers[rng.IntN(len(tiers))])
		}
		b.WriteString(`},"items":[`)
		total := 0
		for j := range 1 + rng.IntN(3) {
			if j > 0 {
				b.WriteByte(',')
			}
			qty, cents := 1+rng.IntN(4), 199+rng.IntN(9800)
			total += qty * cents
			fmt.Fprintf(&b, `{"sku":"SKU-%04d","qty":%d,"price":%d.%02d}`, rng.IntN(50), qty, cents/100, cents%100)
		}
		fmt.Fprintf(&b, `],"channel":"%s","amount":%d.%02d}`, pick(channelW, channels), total/100, total%100)
		docs[i] = b.Bytes()
	}
	return docs
})
