package codec_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// A handler of typed records: JSON values behind Confluent framing (a JSON Schema producer),
// string keys; a tombstone is told apart, a value that does not decode fails alone.
func ExampleDeserializer_Func() {
	type Order struct {
		ID     string `json:"id"`
		Amount int64  `json:"amount_cents"`
	}
	orders, err := codec.NewDeserializer(codec.String(), codec.JSON[Order](), codec.WithValueWire(codec.WireConfluent))
	if err != nil {
		fmt.Println(err) // in a function: log.Fatal, at start-up
		return
	}
	h := orders.Func(func(ctx context.Context, r *codec.Record[string, Order]) error {
		o, err := r.Value(ctx)
		if errors.Is(err, codec.ErrNull) {
			fmt.Printf("offset %d: tombstone\n", r.Offset)
			return nil
		}
		if err != nil {
			return err // a *codec.DecodeError, permanent for package batch
		}
		key, _ := r.Key(ctx)
		fmt.Printf("offset %d: %s -> %s %d\n", r.Offset, key, o.ID, o.Amount)
		return nil
	})

	ctx := context.Background()
	ser, err := codec.NewSerializer(codec.String(), codec.JSON[Order](), codec.WithValueSchema(codec.WireConfluent, "7"))
	if err != nil {
		fmt.Println(err)
		return
	}
	kr, _ := ser.Record(ctx, "orders", "cust-1", Order{ID: "ord-1", Amount: 1299})
	ev := &kafkaevent.Event{Partitions: []kafkaevent.Partition{{Topic: "orders", Records: []kafkaevent.Record{
		{Topic: "orders", Offset: 0, Key: kr.Key, Value: kr.Value},
		{Topic: "orders", Offset: 1, Key: []byte("cust-1")},
	}}}}
	resp, _ := batch.ProcessKafka(ctx, ev, h)
	fmt.Println("failures:", len(resp.BatchItemFailures))
	// Output:
	// offset 0: cust-1 -> ord-1 1299
	// offset 1: tombstone
	// failures: 0
}

// Avro values with the writer's schema given, framed by the Glue serializer with zlib, and
// the error of a record that does not decode.
func ExampleAvro() {
	const schema = `{"type":"record","name":"Reading","fields":[{"name":"sensor","type":"string"},{"name":"celsius","type":"double"}]}`
	type Reading struct {
		Sensor  string  `avro:"sensor"`
		Celsius float64 `avro:"celsius"`
	}
	readings, err := codec.Avro[Reading](codec.AvroSchema(schema))
	if err != nil {
		fmt.Println(err) // in a function: log.Fatal, at start-up
		return
	}
	ctx := context.Background()

	ser, err := codec.NewSerializer(codec.Bytes(), readings,
		codec.WithValueSchema(codec.WireGlue, "b7b4a7f0-9c1e-4a59-a9a5-0123456789ab"), codec.WithCompression())
	if err != nil {
		fmt.Println(err)
		return
	}
	kr, _ := ser.Record(ctx, "readings", nil, Reading{"t-1", 21.5})

	d, err := codec.NewDeserializer(codec.Bytes(), readings, codec.WithValueWire(codec.WireGlue))
	if err != nil {
		fmt.Println(err)
		return
	}
	v, err := d.Record(&kafkaevent.Record{Topic: "readings", Value: kr.Value}).Value(ctx)
	fmt.Println(v, err)

	_, err = d.Record(&kafkaevent.Record{Topic: "readings", Offset: 9, Value: []byte{0, 0, 0, 0, 1}}).Value(ctx)
	fmt.Println(err)
	var de *codec.DecodeError
	fmt.Println("permanent:", errors.As(err, &de) && de.Permanent()) // as batch.IsPermanent asks

	// Output:
	// {t-1 21.5} <nil>
	// codec: value of readings-0@9 (AVRO, Glue framing): codec: Glue framing: offset 0: unknown header version byte 0x00 (Glue framing starts with 0x03)
	// permanent: true
}

// A record the event source mapping delivered in JSON mode: the schema metadata says the
// producer wrote Avro, the value is JSON text, and the JSON codec reads it.
func ExampleJSON() {
	type Reading struct {
		Sensor  string  `json:"sensor"`
		Celsius float64 `json:"celsius"`
	}
	d, err := codec.NewDeserializer(codec.String(), codec.JSON[Reading]())
	if err != nil {
		fmt.Println(err) // in a function: log.Fatal, at start-up
		return
	}
	r := d.Record(&kafkaevent.Record{
		Topic:       "readings",
		Value:       []byte(`{"sensor":"t-2","celsius":19.25}`),
		ValueSchema: &kafkaevent.SchemaMetadata{DataFormat: "AVRO", SchemaID: "17"},
	})
	v, err := r.Value(context.Background())
	fmt.Printf("%+v %v\n", v, err)
	// Output: {Sensor:t-2 Celsius:19.25} <nil>
}

// A JSON Schema whose definitions each try the next one twice (anyOf) is 1.3 KB of text and
// 2^22 branches for a validator: CheckSchema measures it before anything compiles it.
func ExampleCheckSchema() {
	text := `{"$ref":"#/definitions/D0","definitions":{`
	for i := range 22 {
		text += fmt.Sprintf(`"D%d":{"anyOf":[{"$ref":"#/definitions/D%d"},{"$ref":"#/definitions/D%d"}]},`, i, i+1, i+1)
	}
	text += `"D22":{"type":"string"}}}`
	err := codec.CheckSchema(&codec.Schema{ID: "4", Format: codec.FormatJSON, Text: text})
	var over *codec.SchemaLimitError
	if errors.As(err, &over) {
		fmt.Println(over.Limit, over.Measured > over.Max)
		fmt.Println(err)
	}
	// Output:
	// expanded size true
	// codec: JSON schema 4: expanded size 16777214 is over the limit of 65536
}
