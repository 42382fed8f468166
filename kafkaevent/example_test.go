package kafkaevent_test

import (
	"encoding/json"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Parse decodes the payload a Kafka event source mapping sends. Partitions come out sorted by
// topic and number; a nil Value is a tombstone.
func ExampleParse() {
	payload := []byte(`{
  "eventSource": "aws:kafka",
  "eventSourceArn": "arn:aws:kafka:us-east-1:123456789012:cluster/demo-cluster/6f0c7d8e-1a2b-4c3d-9e8f-0a1b2c3d4e5f-2",
  "bootstrapServers": "b-1.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9098",
  "records": {
    "orders-1": [
      {"topic": "orders", "partition": 1, "offset": 7, "timestamp": 1768471200000, "timestampType": "CREATE_TIME",
       "key": "b3JkZXItNw==", "value": "eyJpZCI6N30=", "headers": []}
    ],
    "orders-0": [
      {"topic": "orders", "partition": 0, "offset": 15, "timestamp": 1768471200001, "timestampType": "CREATE_TIME",
       "key": "b3JkZXItMTU=", "value": "eyJpZCI6MTV9",
       "headers": [{"content-type": [97, 112, 112, 108, 105, 99, 97, 116, 105, 111, 110, 47, 106, 115, 111, 110]}]},
      {"topic": "orders", "partition": 0, "offset": 16, "timestamp": 1768471200002, "timestampType": "CREATE_TIME",
       "key": "b3JkZXItMTY=", "value": null, "headers": []}
    ]
  }
}`)
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		log.Fatal(err)
	}
	for r := range ev.All() {
		if r.IsTombstone() {
			fmt.Printf("%s %d %d %s (tombstone)\n", r.Topic, r.Partition, r.Offset, r.Key)
			continue
		}
		fmt.Printf("%s %d %d %s %s\n", r.Topic, r.Partition, r.Offset, r.Key, r.Value)
	}
	// Output:
	// orders 0 15 order-15 {"id":15}
	// orders 0 16 order-16 (tombstone)
	// orders 1 7 order-7 {"id":7}
}

// FromAWS converts an event a handler received as aws-lambda-go's events.KafkaEvent. That type
// cannot tell an empty value from a missing one, so both come out as tombstones.
func ExampleFromAWS() {
	payload := []byte(`{"eventSource":"SelfManagedKafka","bootstrapServers":"localhost:9092","records":{"t-0":[
  {"topic":"t","partition":0,"offset":1,"timestamp":1768471200000,"timestampType":"CREATE_TIME","value":"aGk=","headers":[{"h":[-61,-85]}]},
  {"topic":"t","partition":0,"offset":2,"timestamp":1768471200001,"timestampType":"CREATE_TIME","value":"","headers":[]}]}}`)
	var ke events.KafkaEvent // what a handler written for aws-lambda-go gets
	if err := json.Unmarshal(payload, &ke); err != nil {
		log.Fatal(err)
	}
	ev, err := kafkaevent.FromAWS(&ke)
	if err != nil {
		log.Fatal(err)
	}
	for r := range ev.All() {
		h, _ := r.Header("h")
		fmt.Printf("%s@%d value=%q tombstone=%v header=%q\n", r.PartitionID(), r.Offset, r.Value, r.IsTombstone(), h)
	}
	// Output:
	// t-0@1 value="hi" tombstone=false header="ë"
	// t-0@2 value="" tombstone=true header=""
}
