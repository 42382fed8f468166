package kafkaeventtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"
	"time"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// A Builder makes events for tests; MarshalJSON writes them in the wire format, ready for
// Parse, a handler under test, or `sam local invoke -e`.
func Example() {
	ev := kafkaeventtest.NewBuilder(
		kafkaeventtest.WithEventSource(kafkaevent.SourceSelfManaged),
		kafkaeventtest.WithBootstrapServers("localhost:9092"),
	).
		Add("orders", 0, []byte(`{"id":1}`), kafkaeventtest.WithKey([]byte("o-1")), kafkaeventtest.WithHeader("v", []byte("1"))).
		Add("orders", 0, nil, kafkaeventtest.WithKey([]byte("o-1"))). // a tombstone
		Event()

	data, err := json.Marshal(ev)
	if err != nil {
		log.Fatal(err)
	}
	var out bytes.Buffer
	if err := json.Indent(&out, data, "", "  "); err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.String())
	// Output:
	// {
	//   "eventSource": "SelfManagedKafka",
	//   "bootstrapServers": "localhost:9092",
	//   "records": {
	//     "orders-0": [
	//       {
	//         "topic": "orders",
	//         "partition": 0,
	//         "offset": 0,
	//         "timestamp": 1768471200000,
	//         "timestampType": "CREATE_TIME",
	//         "key": "by0x",
	//         "value": "eyJpZCI6MX0=",
	//         "headers": [
	//           {
	//             "v": [
	//               49
	//             ]
	//           }
	//         ]
	//       },
	//       {
	//         "topic": "orders",
	//         "partition": 0,
	//         "offset": 1,
	//         "timestamp": 1768471200001,
	//         "timestampType": "CREATE_TIME",
	//         "key": "by0x",
	//         "value": null,
	//         "headers": []
	//       }
	//     ]
	//   }
	// }
}

// NewBuilder takes the event's options: the source, its ARN, the bootstrap servers and the
// time of the first record. Each has a default that makes a plausible MSK event.
func ExampleNewBuilder() {
	ev := kafkaeventtest.NewBuilder(
		kafkaeventtest.WithEventSource(kafkaevent.SourceMSK),
		kafkaeventtest.WithEventSourceARN("arn:aws:kafka:eu-west-1:111122223333:cluster/payments/abc"),
		kafkaeventtest.WithBootstrapServers("b-1.payments:9098", "b-2.payments:9098"),
		kafkaeventtest.WithStartTime(time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)),
	).Add("payments", 3, []byte("p")).Event()
	fmt.Println(ev.Source, ev.SourceARN, ev.BootstrapServers)
	fmt.Println(ev.Partitions[0].Records[0].Timestamp)
	// Output:
	// aws:kafka arn:aws:kafka:eu-west-1:111122223333:cluster/payments/abc [b-1.payments:9098 b-2.payments:9098]
	// 2026-03-01 12:00:00 +0000 UTC
}

// Add appends a record; its options set every field Lambda sends. Offsets follow on within a
// partition, timestamps a millisecond apart, unless set.
func ExampleBuilder_Add() {
	b := kafkaeventtest.NewBuilder()
	b.Add("orders", 0, []byte(`{"id":1}`),
		kafkaeventtest.WithKey([]byte("o-1")),
		kafkaeventtest.WithOffset(100),
		kafkaeventtest.WithHeader("content-type", []byte("application/json")),
		kafkaeventtest.WithHeader("trace", nil), // a null header value
		kafkaeventtest.WithKeySchemaMetadata("AVRO", "1"),
		kafkaeventtest.WithValueSchemaMetadata("JSON", "6a3f8e2c-9b1d-4c7e-8f5a-2d4b6c8e0a1f"),
	)
	b.Add("orders", 0, nil, // a tombstone, at the next offset
		kafkaeventtest.WithTimestampType(kafkaevent.LogAppendTime),
		kafkaeventtest.WithTimestamp(time.Time{})) // no timestamp
	for r := range b.Event().All() {
		fmt.Println(r.PartitionID(), r.Offset, r.Timestamp.IsZero(), r.TimestampType, r.IsTombstone(), len(r.Headers), r.KeySchema != nil)
	}
	// Output:
	// orders-0 100 false CREATE_TIME false 2 true
	// orders-0 101 true LOG_APPEND_TIME true 0 false
}

// Event returns a copy of what was added so far, partitions sorted; the builder can go on.
func ExampleBuilder_Event() {
	b := kafkaeventtest.NewBuilder().Add("b", 0, []byte("1")).Add("a", 2, []byte("2"))
	first := b.Event()
	b.Add("a", 2, []byte("3"))
	second := b.Event()
	fmt.Println(first.Len(), second.Len())
	for i := range second.Partitions {
		fmt.Println(second.Partitions[i].ID(), len(second.Partitions[i].Records))
	}
	// Output:
	// 2 3
	// a-2 2
	// b-0 1
}
