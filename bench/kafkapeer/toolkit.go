package main

import (
	"context"
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit/bench/kafkapeer/orderpb"
	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// toolkitSide returns the toolkit's side of b: kafkaevent.Parse, then a codec.Deserializer
// (made once, as a function makes it at package level) and Record.Value for every record.
func toolkitSide(b *bench) *side {
	switch b.f.name {
	case "json":
		d, err := codec.NewDeserializer(codec.String(), codec.JSON[Order]())
		return deserializerSide(b, "codec.JSON[Order]", d, err, func(o Order) int64 { return o.quantities() })
	case "avro":
		c, err := codec.Avro[Order](codec.AvroSchema(avroSchema))
		var d *codec.Deserializer[string, Order]
		if err == nil {
			d, err = codec.NewDeserializer(codec.String(), c)
		}
		return deserializerSide(b, "codec.Avro[Order] with the .avsc text", d, err, func(o Order) int64 { return o.quantities() })
	case "protobuf":
		d, err := codec.NewDeserializer(codec.String(), codec.Protobuf[*orderpb.Order]())
		return deserializerSide(b, "codec.Protobuf[*orderpb.Order]", d, err, protoQuantities)
	}
	panic("unknown format " + b.f.name)
}

// deserializerSide is the toolkit's side with d; err, the error of making d, is the error of
// every round.
func deserializerSide[V any](b *bench, codecName string, d *codec.Deserializer[string, V], err error, quantities func(V) int64) *side {
	return &side{
		name:  "toolkit",
		about: "kafkaevent.Parse, codec.Deserializer (" + codecName + "), Record.Value of every record",
		round: func(n int) (result, error) {
			if err != nil {
				return result{}, fmt.Errorf("%s toolkit: %w", b.f.name, err)
			}
			// The Lambda runtime gives each invocation a context with the function's deadline.
			ctx, cancel := context.WithTimeout(context.Background(), 14*time.Minute)
			defer cancel()
			return timed(n, func() (int64, error) {
				ev, err := kafkaevent.Parse(b.payload)
				if err != nil {
					return 0, err
				}
				var sum int64
				for r := range ev.All() {
					v, err := d.Record(r).Value(ctx)
					if err != nil {
						return 0, fmt.Errorf("%s toolkit: %w", b.f.name, err)
					}
					sum += quantities(v)
				}
				return sum, nil
			})
		},
	}
}
