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
		return deserializerSide(b, "codec.JSON[Order]", codec.NewDeserializer(codec.String(), codec.JSON[Order]()),
			func(o Order) int64 { return o.quantities() })
	case "avro":
		return deserializerSide(b, "codec.Avro[Order] with the .avsc text", codec.NewDeserializer(codec.String(), codec.Avro[Order](codec.AvroSchema(avroSchema))),
			func(o Order) int64 { return o.quantities() })
	case "protobuf":
		return deserializerSide(b, "codec.Protobuf[*orderpb.Order]", codec.NewDeserializer(codec.String(), codec.Protobuf[*orderpb.Order]()),
			protoQuantities)
	}
	panic("unknown format " + b.f.name)
}

func deserializerSide[V any](b *bench, codecName string, d *codec.Deserializer[string, V], quantities func(V) int64) *side {
	return &side{
		name:  "toolkit",
		about: "kafkaevent.Parse, codec.Deserializer (" + codecName + "), Record.Value of every record",
		round: func(n int) (result, error) {
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
