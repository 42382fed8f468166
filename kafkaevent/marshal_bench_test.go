package kafkaevent_test

import (
	"encoding/json"
	"fmt"
	"sync"
	"testing"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// benchEvent is a builder-made event of 10,000 records over 4 partitions, each with a key, a
// JSON value of about 300 bytes and one header: about 6 MB on the wire, Lambda's limit.
var benchEvent = sync.OnceValue(func() *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder()
	for n := range 10000 {
		value := fmt.Appendf(nil, `{"orderId":"ord-%08d","customerId":"cust-%05d","status":"CREATED","currency":"EUR",`+
			`"items":[{"sku":"SKU-%04d","quantity":%d,"unitPrice":4.99}],"shippingAddress":{"street":"%d Example Street",`+
			`"city":"Lisbon","country":"PT"},"channel":"web","notes":"leave at the door, ring twice"}`, n, n%9973, n%1000, n%5+1, n%300)
		b.Add("orders", int32(n%4), value, kafkaeventtest.WithKey(fmt.Appendf(nil, "cust-%05d", n%9973)),
			kafkaeventtest.WithHeader("content-type", []byte("application/json")))
	}
	return b.Event()
})

// BenchmarkMarshal compares MarshalJSON with the obvious alternative, encoding/json on
// aws-lambda-go's events.KafkaEvent (conversion by ToAWS not timed).
// Run: go test -run '^$' -bench Marshal -benchmem ./kafkaevent/
func BenchmarkMarshal(b *testing.B) {
	e := benchEvent()
	size, _ := e.MarshalJSON()
	b.Run("impl=toolkit", func(b *testing.B) {
		b.SetBytes(int64(len(size)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := e.MarshalJSON(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=aws-lambda-go", func(b *testing.B) {
		ke := kafkaevent.ToAWS(e)
		b.SetBytes(int64(len(size)))
		b.ReportAllocs()
		for b.Loop() {
			if _, err := json.Marshal(ke); err != nil {
				b.Fatal(err)
			}
		}
	})
}
