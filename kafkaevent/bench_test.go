package kafkaevent_test

import (
	"bytes"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"runtime"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// largeEvent generates the benchmark input: an MSK event of about 6 MB (Lambda's payload limit
// is 6 MB), 10,000 records over 4 partitions, each value a JSON order of about 300 bytes, one
// header per record. It is generated, not committed.
var largeEvent = sync.OnceValue(func() []byte { return generateEvent("") })

// largeSchemaEvent is largeEvent as a mapping with a schema registry writes it (SOURCE mode):
// each record also carries its value's schema metadata.
var largeSchemaEvent = sync.OnceValue(func() []byte {
	return generateEvent(`,"valueSchemaMetadata":{"dataFormat":"JSON","schemaId":"1"}`)
})

// generateEvent writes the benchmark event, with extra after each record's members.
func generateEvent(extra string) []byte {
	var buf bytes.Buffer
	buf.WriteString(`{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:123456789012:cluster/orders/a1b2c3d4-5678-90ab-cdef-11111EXAMPLE-1",` +
		`"bootstrapServers":"b-1.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098,b-2.orders.abc123.c2.kafka.us-east-1.amazonaws.com:9098","records":{`)
	const partitions, perPartition = 4, 2500
	for p := 0; p < partitions; p++ {
		if p > 0 {
			buf.WriteByte(',')
		}
		fmt.Fprintf(&buf, `"orders-%d":[`, p)
		for i := 0; i < perPartition; i++ {
			if i > 0 {
				buf.WriteByte(',')
			}
			n := p*perPartition + i
			value := fmt.Sprintf(`{"orderId":"ord-%08d","customerId":"cust-%05d","status":"CREATED",`+
				`"items":[{"sku":"SKU-%04d","quantity":%d,"unitPrice":%d.%02d}],`+
				`"shippingAddress":{"street":"%d Example Street","city":"Lisbon","postalCode":"1000-%03d","country":"PT"},`+
				`"createdAt":"2026-11-29T10:%02d:%02d.%03dZ"}`,
				n, n%9973, n%1000, n%5+1, n%200, n%100, n%300, n%1000, n/60%60, n%60, n%1000)
			fmt.Fprintf(&buf, `{"topic":"orders","partition":%d,"offset":%d,"timestamp":%d,"timestampType":"CREATE_TIME",`+
				`"key":"%s","value":"%s","headers":[{"content-type":[97,112,112,108,105,99,97,116,105,111,110,47,106,115,111,110]}]%s}`,
				p, 1000000+i, 1764410000000+int64(n), base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "cust-%05d", n%9973)),
				base64.StdEncoding.EncodeToString([]byte(value)), extra)
		}
		buf.WriteByte(']')
	}
	buf.WriteString("}}")
	return buf.Bytes()
}

// BenchmarkParseSchema is BenchmarkParse's first two rows on largeSchemaEvent, the form of a
// mapping with a schema registry (each record with its valueSchemaMetadata).
func BenchmarkParseSchema(b *testing.B) { benchToolkitAndAWS(b, largeSchemaEvent()) }

// benchToolkitAndAWS runs impl=toolkit and impl=aws-lambda-go on data.
func benchToolkitAndAWS(b *testing.B, data []byte) {
	b.Run("impl=toolkit", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			toolkitValues(b, data)
		}
	})
	b.Run("impl=aws-lambda-go", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			awsValues(b, data)
		}
	})
}

// BenchmarkParse compares, on the same generated ~6 MB event, three ways to get every
// record's value bytes:
//
//   - impl=toolkit: kafkaevent.Parse, then read each Value;
//   - impl=aws-lambda-go: encoding/json into events.KafkaEvent, then
//     base64.StdEncoding.DecodeString of each value, the obvious alternative;
//   - impl=toolkit-via-encoding-json: json.Unmarshal into a kafkaevent.Event, which is what a
//     handler with an Event parameter costs: encoding/json validates the payload, then calls
//     Event.UnmarshalJSON;
//   - impl=floor: one pass over the raw bytes, eight at a time, doing nothing but summing
//     them: the speed no decoder can beat.
//
// Run: go test -run '^$' -bench Parse -benchmem -count 10 ./kafkaevent/ | tee bench.txt; go tool benchstat bench.txt
func BenchmarkParse(b *testing.B) {
	data := largeEvent()
	benchToolkitAndAWS(b, data)
	b.Run("impl=toolkit-via-encoding-json", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var ev kafkaevent.Event
			if err := json.Unmarshal(data, &ev); err != nil {
				b.Fatal(err)
			}
			n := 0
			for r := range ev.All() {
				n += len(r.Value)
			}
			if n == 0 {
				b.Fatal("no value bytes")
			}
		}
	})
	b.Run("impl=floor", func(b *testing.B) {
		b.SetBytes(int64(len(data)))
		b.ReportAllocs()
		for b.Loop() {
			var sum uint64
			i := 0
			for ; i+32 <= len(data); i += 32 {
				sum += binary.LittleEndian.Uint64(data[i:]) ^ binary.LittleEndian.Uint64(data[i+8:]) ^
					binary.LittleEndian.Uint64(data[i+16:]) ^ binary.LittleEndian.Uint64(data[i+24:])
			}
			for ; i < len(data); i++ {
				sum += uint64(data[i])
			}
			if sum == 1 {
				b.Log(sum)
			}
		}
	})
}

// toolkitValues is impl=toolkit of BenchmarkParse: Parse, then every value's bytes.
func toolkitValues(b *testing.B, data []byte) {
	ev, err := kafkaevent.Parse(data)
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for r := range ev.All() {
		n += len(r.Value)
	}
	if n == 0 {
		b.Fatal("no value bytes")
	}
}

// awsValues is impl=aws-lambda-go of BenchmarkParse: encoding/json into events.KafkaEvent, then
// base64.StdEncoding.DecodeString of every value.
func awsValues(b *testing.B, data []byte) {
	var ev events.KafkaEvent
	if err := json.Unmarshal(data, &ev); err != nil {
		b.Fatal(err)
	}
	n := 0
	for _, rs := range ev.Records {
		for i := range rs {
			v, err := base64.StdEncoding.DecodeString(rs[i].Value)
			if err != nil {
				b.Fatal(err)
			}
			n += len(v)
		}
	}
	if n == 0 {
		b.Fatal("no value bytes")
	}
}

// BenchmarkParseRatio runs impl=toolkit and impl=aws-lambda-go of BenchmarkParse in turn in one
// process, five of the first to one of the second per round, each after a collection (so that
// neither pays for the other's garbage), and reports the median time of each (toolkit-ns,
// aws-lambda-go-ns) and their ratio (x-faster). On a shared machine, load comes and goes within
// seconds: alternating every few milliseconds puts it on both alike, where two benchmarks run
// one after the other each see their own load. Its sec/op is a round's and means nothing.
//
// Run: go test -run '^$' -bench ParseRatio -benchtime 40x -count 8 ./kafkaevent/
func BenchmarkParseRatio(b *testing.B) {
	data := largeEvent()
	var tk, aw []time.Duration
	for b.Loop() {
		for range 5 {
			runtime.GC()
			start := time.Now()
			toolkitValues(b, data)
			tk = append(tk, time.Since(start))
		}
		runtime.GC()
		start := time.Now()
		awsValues(b, data)
		aw = append(aw, time.Since(start))
	}
	t, a := median(tk), median(aw)
	b.ReportMetric(float64(t.Nanoseconds()), "toolkit-ns")
	b.ReportMetric(float64(a.Nanoseconds()), "aws-lambda-go-ns")
	b.ReportMetric(float64(a)/float64(t), "x-faster")
}

func median(ds []time.Duration) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)/2]
}
