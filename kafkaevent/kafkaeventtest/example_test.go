package kafkaeventtest_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"log"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// A Builder makes events for tests; MarshalJSON writes them in the wire format, ready for
// Parse, a handler under test, or `sam local invoke -e`.
func Example() {
	ev := kafkaeventtest.NewBuilder(
		kafkaeventtest.WithSource(kafkaevent.SourceSelfManaged),
		kafkaeventtest.WithBootstrapServers("localhost:9092"),
	).
		Add("orders", 0, []byte(`{"id":1}`), kafkaeventtest.Key([]byte("o-1")), kafkaeventtest.AddHeader("v", []byte("1"))).
		Add("orders", 0, nil, kafkaeventtest.Key([]byte("o-1"))). // a tombstone
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
