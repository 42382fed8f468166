package kafkaevent_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-lambda-go/lambda"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// ordersHandler is a lambda.Handler: aws-lambda-go gives its Invoke the payload bytes as Lambda
// sent them, and Parse reads them in one pass. In a function, main calls
// lambda.Start(ordersHandler{}).
type ordersHandler struct{}

var _ lambda.Handler = ordersHandler{}

func (ordersHandler) Invoke(ctx context.Context, payload []byte) ([]byte, error) {
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		return nil, err // the envelope is malformed: the whole batch is retried
	}
	for r := range ev.All() {
		if r.Err != nil {
			fmt.Printf("%s@%d cannot be decoded: %v\n", r.PartitionID(), r.Offset, r.Err)
			continue
		}
		fmt.Printf("%s@%d %s\n", r.PartitionID(), r.Offset, r.Value)
	}
	return nil, nil
}

// The fast path: a lambda.Handler hands the payload bytes to Parse. (Package batch's
// KafkaHandler does the same, with partial-batch responses.)
func Example() {
	payload := []byte(`{"eventSource":"aws:kafka","eventSourceArn":"arn:aws:kafka:us-east-1:123456789012:cluster/demo/1","records":{
  "orders-0":[{"topic":"orders","partition":0,"offset":15,"timestamp":1768471200000,"timestampType":"CREATE_TIME","value":"eyJpZCI6MTV9","headers":[]},
              {"topic":"orders","partition":0,"offset":16,"timestamp":1768471200001,"timestampType":"CREATE_TIME","value":"not base64!","headers":[]}]}}`)
	if _, err := (ordersHandler{}).Invoke(context.Background(), payload); err != nil {
		log.Fatal(err)
	}
	// Output:
	// orders-0@15 {"id":15}
	// orders-0@16 cannot be decoded: kafkaevent: records["orders-0"][1].value: invalid base64: illegal base64 data at input byte 3
}

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
	fmt.Println(ev.Source, ev.BootstrapServers)
	for r := range ev.All() {
		if r.IsTombstone() {
			fmt.Printf("%s %d %d %s (tombstone)\n", r.Topic, r.Partition, r.Offset, r.Key)
			continue
		}
		fmt.Printf("%s %d %d %s %s %s\n", r.Topic, r.Partition, r.Offset, r.Timestamp.Format("15:04:05.000"), r.Key, r.Value)
	}
	// Output:
	// aws:kafka [b-1.demo-cluster.a1bcde.c2.kafka.us-east-1.amazonaws.com:9098]
	// orders 0 15 10:00:00.001 order-15 {"id":15}
	// orders 0 16 order-16 (tombstone)
	// orders 1 7 10:00:00.000 order-7 {"id":7}
}

// A malformed envelope fails Parse with an *Error that says where. What the message shows of
// the payload is quoted when it is not printable text on one line.
func ExampleParse_error() {
	_, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"orders-0":[{"offset":[` + "\n" + `1]}]}}`))
	var e *kafkaevent.Error
	if errors.As(err, &e) {
		fmt.Println(e.Path)
	}
	fmt.Println(err)
	_, err = kafkaevent.Parse([]byte("\xef\xbb\xbf{}"))
	fmt.Println(err)
	// Output:
	// records["orders-0"][0].offset
	// kafkaevent: records["orders-0"][0].offset: want integer, got "[\n1]"
	// kafkaevent: $: the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow; remove it
}

// Hand-written fixtures do not always key records the way Lambda does. Each record keeps its
// own topic and partition (PartitionID); its Partition keeps the key as written (ID), which a
// partial-batch response must name.
func ExamplePartition_ID() {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:SelfManagedKafka","records":{
  "mytopic-0":[{"topic":"mytopic","partition":12,"offset":3}],
  "mytopic-01":[{"topic":"mytopic","partition":1,"offset":8}]}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Source)
	for i := range ev.Partitions {
		p := &ev.Partitions[i]
		for _, r := range p.Records {
			fmt.Printf("key %q: record of %s at offset %d\n", p.ID(), r.PartitionID(), r.Offset)
		}
	}
	// Output:
	// SelfManagedKafka
	// key "mytopic-01": record of mytopic-1 at offset 8
	// key "mytopic-0": record of mytopic-12 at offset 3
}

// All yields every record, partition by partition; Len counts them.
func ExampleEvent_All() {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{
  "b-0":[{"topic":"b","partition":0,"offset":1}],
  "a-1":[{"topic":"a","partition":1,"offset":5},{"topic":"a","partition":1,"offset":6}]}}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Len(), "records")
	for r := range ev.All() {
		fmt.Println(r.PartitionID(), r.Offset)
	}
	// Output:
	// 3 records
	// a-1 5
	// a-1 6
	// b-0 1
}

// Header returns the first header of a name; HeaderValues all of them, in order. Lambda writes
// header values as Java's signed bytes: [-61,-85] is "ë" in UTF-8.
func ExampleRecord_Header() {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[{"topic":"t","partition":0,"offset":1,
  "headers":[{"trace":[97]},{"lang":[-61,-85]},{"trace":[98]},{"empty":null}]}]}}`))
	if err != nil {
		log.Fatal(err)
	}
	r := &ev.Partitions[0].Records[0]
	lang, ok := r.Header("lang")
	fmt.Printf("lang=%q %v\n", lang, ok)
	empty, ok := r.Header("empty")
	fmt.Printf("empty=%v %v\n", empty == nil, ok)
	_, ok = r.Header("missing")
	fmt.Println("missing", ok)
	fmt.Printf("trace=%q\n", r.HeaderValues("trace"))
	// Output:
	// lang="ë" true
	// empty=true true
	// missing false
	// trace=["a" "b"]
}

// HeaderValues returns every value of a repeated header, in order; nil when there is none.
func ExampleRecord_HeaderValues() {
	r := kafkaevent.Record{Headers: []kafkaevent.Header{
		{Key: "hop", Value: []byte("gateway")}, {Key: "id", Value: []byte("7")}, {Key: "hop", Value: []byte("router")},
	}}
	fmt.Printf("%q\n", r.HeaderValues("hop"))
	fmt.Println(r.HeaderValues("none") == nil)
	// Output:
	// ["gateway" "router"]
	// true
}

// A value that is null or absent is a tombstone; an empty string is an empty payload.
func ExampleRecord_IsTombstone() {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[
  {"topic":"t","partition":0,"offset":1,"value":null},
  {"topic":"t","partition":0,"offset":2},
  {"topic":"t","partition":0,"offset":3,"value":""},
  {"topic":"t","partition":0,"offset":4,"value":"eA=="}]}}`))
	if err != nil {
		log.Fatal(err)
	}
	for r := range ev.All() {
		fmt.Println(r.Offset, r.IsTombstone(), len(r.Value))
	}
	// Output:
	// 1 true 0
	// 2 true 0
	// 3 false 0
	// 4 false 1
}

// MarshalJSON writes the wire format back: Parse reads it to an equal event.
func ExampleEvent_MarshalJSON() {
	ev := &kafkaevent.Event{
		Source: kafkaevent.SourceSelfManaged,
		Partitions: []kafkaevent.Partition{{Topic: "orders", Number: 2, Records: []kafkaevent.Record{{
			Topic: "orders", Partition: 2, Offset: 40, TimestampType: kafkaevent.CreateTime,
			Key: []byte("k"), Value: []byte(`{"id":1}`),
			Headers: []kafkaevent.Header{{Key: "v", Value: []byte{1, 255}}},
		}}}},
	}
	data, err := json.Marshal(ev)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(data))
	back, err := kafkaevent.Parse(data)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(back.Partitions[0].Records[0].Headers[0].Value)
	// Output:
	// {"eventSource":"SelfManagedKafka","records":{"orders-2":[{"topic":"orders","partition":2,"offset":40,"timestamp":-1,"timestampType":"CREATE_TIME","key":"aw==","value":"eyJpZCI6MX0=","headers":[{"v":[1,-1]}]}]}}
	// [1 255]
}

// An Event can be decoded by encoding/json, as a handler parameter would be; it calls Parse. A
// lambda.Handler that calls Parse itself is faster (see the package example).
func ExampleEvent_UnmarshalJSON() {
	var ev kafkaevent.Event
	err := json.Unmarshal([]byte(`{"eventSource":"aws:kafka","records":{"t-3":[{"topic":"t","partition":3,"offset":9,"value":"aGk="}]}}`), &ev)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(ev.Partitions[0].ID(), string(ev.Partitions[0].Records[0].Value))
	// Output:
	// t-3 hi
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

// ToAWS converts an event for code written against aws-lambda-go: keys and values become
// base64 strings again, header bytes JSONNumberBytes.
func ExampleToAWS() {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"t-0":[
  {"topic":"t","partition":0,"offset":5,"timestamp":1768471200000,"timestampType":"CREATE_TIME","key":"aw==","value":"aGk=","headers":[{"h":[1,2]}]}]}}`))
	if err != nil {
		log.Fatal(err)
	}
	ke := kafkaevent.ToAWS(ev)
	kr := ke.Records["t-0"][0]
	fmt.Println(ke.EventSource, kr.Topic, kr.Partition, kr.Offset, kr.Key, kr.Value, []byte(kr.Headers[0]["h"]), kr.Timestamp.UTC().Format("2006-01-02T15:04:05Z"))
	// Output:
	// aws:kafka t 0 5 aw== aGk= [1 2] 2026-01-15T10:00:00Z
}
