package main

import (
	"encoding/json"
	"errors"
	"fmt"

	gojson "github.com/goccy/go-json"
	"github.com/hamba/avro/v2"
	"google.golang.org/protobuf/proto"

	"github.com/kafkalambda/toolkit/bench/kafkapeer/orderpb"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// goSides returns the Go sides of b: the toolkit, then the baselines.
func goSides(b *bench) []*side {
	sides := []*side{toolkitSide(b)}
	add := func(name, about string, raw bool, decode func(r *kafkaevent.Record) (int64, error)) {
		sides = append(sides, &side{name: name, about: about, raw: raw, round: func(n int) (result, error) {
			return timed(n, func() (int64, error) {
				ev, err := kafkaevent.Parse(b.payload)
				if err != nil {
					return 0, err
				}
				var sum int64
				for r := range ev.All() {
					s, err := decode(r)
					if err != nil {
						return 0, fmt.Errorf("%s %s: record %s/%d: %w", b.f.name, name, r.PartitionID(), r.Offset, err)
					}
					sum += s
				}
				return sum, nil
			})
		}})
	}

	switch b.f.name {
	case "json":
		add("plain", "kafkaevent.Parse, encoding/json into an Order", false, func(r *kafkaevent.Record) (int64, error) {
			var o Order
			if err := json.Unmarshal(r.Value, &o); err != nil {
				return 0, err
			}
			return o.quantities(), nil
		})
		add("goccy", "kafkaevent.Parse, goccy/go-json (the decoder of codec.JSON) into an Order", false, func(r *kafkaevent.Record) (int64, error) {
			var o Order
			if err := gojson.Unmarshal(r.Value, &o); err != nil {
				return 0, err
			}
			return o.quantities(), nil
		})
		add("map", "kafkaevent.Parse, encoding/json into a map[string]any", false, func(r *kafkaevent.Record) (int64, error) {
			var m map[string]any
			if err := json.Unmarshal(r.Value, &m); err != nil {
				return 0, err
			}
			items, _ := m["items"].([]any)
			var sum int64
			for _, it := range items {
				q, _ := it.(map[string]any)["quantity"].(float64)
				sum += int64(q)
			}
			return sum, nil
		})
	case "avro":
		schema := avro.MustParse(avroSchema)
		add("plain", "kafkaevent.Parse, hamba/avro's Unmarshal into an Order", false, func(r *kafkaevent.Record) (int64, error) {
			var o Order
			if err := avro.Unmarshal(schema, r.Value, &o); err != nil {
				return 0, err
			}
			return o.quantities(), nil
		})
	case "protobuf":
		add("plain", "kafkaevent.Parse, proto.Unmarshal after the message-index byte", false, func(r *kafkaevent.Record) (int64, error) {
			if len(r.Value) == 0 || r.Value[0] != 0 {
				return 0, errors.New("the value does not start with the message indexes [0]")
			}
			var o orderpb.Order
			if err := proto.Unmarshal(r.Value[1:], &o); err != nil {
				return 0, err
			}
			return protoQuantities(&o), nil
		})
	}
	add("raw", "kafkaevent.Parse, every value's bytes read, none decoded", true, func(r *kafkaevent.Record) (int64, error) {
		var sum int64
		for _, c := range r.Value {
			sum += int64(c)
		}
		return sum, nil
	})
	return sides
}
