package filter_test

import (
	"fmt"
	"log"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

func ExampleCompile() {
	p, err := filter.Compile(`{"status": ["CREATED"], "amount": [{"numeric": [">", 100]}]}`)
	if err != nil {
		log.Fatal(err)
	}
	for _, doc := range []string{
		`{"status": "CREATED", "amount": 250}`,
		`{"status": "CREATED", "amount": "250"}`, // a string is not a number
		`{"status": "created", "amount": 250}`,   // equality is case-sensitive
	} {
		ok, _ := p.Match([]byte(doc))
		fmt.Println(ok)
	}
	_, err = filter.Compile(`{"amount": [{"numeric": [">", 100, "<", 10]}]}`)
	fmt.Println(err)
	// Output:
	// true
	// false
	// false
	// filter: amount: numeric: bottom must be less than top (100, 10)
}

// The FilterCriteria of a Kafka event source mapping apply to the record's value.
func ExampleCriteria_MatchKafka() {
	c, err := filter.ParseCriteria([]byte(`{"Filters": [
		{"Pattern": "{\"value\": {\"status\": [\"CREATED\"]}}"},
		{"Pattern": "{\"value\": [{\"prefix\": \"PING\"}]}"}
	]}`))
	if err != nil {
		log.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"id": 1, "status": "CREATED"}`)).
		Add("orders", 0, []byte(`{"id": 2, "status": "CANCELLED"}`)).
		Add("orders", 0, []byte(`PING from the producer`)).
		Event()
	for r := range ev.All() {
		v := c.ExplainKafka(r)
		if v.Match {
			fmt.Printf("offset %d: passes (filter %d)\n", r.Offset, v.Filter)
			continue
		}
		fmt.Printf("offset %d: dropped: %s\n", r.Offset, v.Misses[0])
	}
	// Output:
	// offset 0: passes (filter 0)
	// offset 1: dropped: filter 0: value.status: got "CANCELLED", want ["CREATED"]
	// offset 2: passes (filter 1)
}

// SQS event source mappings filter on the body, after a format check.
func ExampleCriteria_MatchSQS() {
	c, err := filter.NewCriteria([]string{`{"body": {"type": ["order"]}}`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.MatchSQS(&events.SQSMessage{Body: `{"type": "order", "id": 7}`}))
	fmt.Println(c.MatchSQS(&events.SQSMessage{Body: `order 7`})) // plain body, JSON pattern: dropped
	// Output:
	// true <nil>
	// false <nil>
}
