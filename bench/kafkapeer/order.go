package main

import (
	_ "embed"
	"fmt"
	"time"

	"github.com/kafkalambda/toolkit/bench/kafkapeer/orderpb"
)

// Order is the record of every event: the JSON value, and the Go type that order.avsc (Avro)
// decodes into. orderpb.Order is the same record in Protobuf.
type Order struct {
	ID       string  `json:"id" avro:"id"`
	Customer string  `json:"customer" avro:"customer"`
	Email    string  `json:"email" avro:"email"`
	Total    float64 `json:"total" avro:"total"`
	Currency string  `json:"currency" avro:"currency"`
	Created  int64   `json:"created" avro:"created"` // milliseconds since the Unix epoch
	Status   string  `json:"status" avro:"status"`
	Items    []Item  `json:"items" avro:"items"`
}

// Item is a line of an Order.
type Item struct {
	SKU      string  `json:"sku" avro:"sku"`
	Quantity int32   `json:"quantity" avro:"quantity"`
	Price    float64 `json:"price" avro:"price"`
}

// The schemas, written beside the events for the Node side, so that both read the same text.
var (
	//go:embed order.avsc
	avroSchema string
	//go:embed orderpb/order.proto
	protoSchema string
)

var (
	currencies = []string{"EUR", "USD", "GBP", "JPY"}
	statuses   = []string{"PLACED", "PAID", "PACKED", "SHIPPED", "DELIVERED"}
	start      = time.Date(2026, time.January, 15, 10, 0, 0, 0, time.UTC).UnixMilli()
)

// order returns the i-th order of the benchmark: the same for every i on every run, one to
// four items, about 270 bytes as JSON.
func order(i int) Order {
	customer := fmt.Sprintf("customer-%05d", (i*7919)%50000)
	o := Order{
		ID:       fmt.Sprintf("order-%07d", i),
		Customer: customer,
		Email:    customer + "@example.com",
		Currency: currencies[i%len(currencies)],
		Created:  start + int64(i)*1000,
		Status:   statuses[i%len(statuses)],
	}
	for j := range 1 + i%4 {
		it := Item{
			SKU:      fmt.Sprintf("SKU-%06d", (i*31+j*17)%100000),
			Quantity: int32(1 + (i+j)%5),
			Price:    float64((i*13+j*7)%10000)/100 + 0.99,
		}
		o.Items = append(o.Items, it)
		o.Total += float64(it.Quantity) * it.Price
	}
	return o
}

// quantities is the checksum of one decoded value: its items' quantities added up.
func (o *Order) quantities() int64 {
	var n int64
	for i := range o.Items {
		n += int64(o.Items[i].Quantity)
	}
	return n
}

func protoQuantities(o *orderpb.Order) int64 {
	var n int64
	for _, it := range o.GetItems() {
		n += int64(it.GetQuantity())
	}
	return n
}

// toProto returns o as an orderpb.Order.
func toProto(o *Order) *orderpb.Order {
	p := &orderpb.Order{
		Id:       o.ID,
		Customer: o.Customer,
		Email:    o.Email,
		Total:    o.Total,
		Currency: o.Currency,
		Created:  o.Created,
		Status:   o.Status,
	}
	for _, it := range o.Items {
		p.Items = append(p.Items, &orderpb.Item{Sku: it.SKU, Quantity: it.Quantity, Price: it.Price})
	}
	return p
}
