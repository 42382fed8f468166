package filter_test

import (
	"errors"
	"fmt"
	"log"
	"strings"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// Compile checks a pattern as Lambda does when the event source mapping is created, and
// says where an invalid one is wrong.
func ExampleCompile() {
	p, err := filter.Compile(`{"status": ["CREATED"], "amount": [{"numeric": [">", 100]}]}`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p)

	_, err = filter.Compile(`{"amount": [{"numeric": [">", 100, "<", 10]}]}`)
	fmt.Println(err)
	_, err = filter.Compile(`{"status": "CREATED"}`)
	fmt.Println(err)
	// Output:
	// {"status": ["CREATED"], "amount": [{"numeric": [">", 100]}]}
	// filter: amount: numeric: bottom must be less than top (100, 10)
	// filter: status: must be an object or an array, got string "CREATED"
}

// Match evaluates a JSON document as it is; types are strict and matching is
// case-sensitive.
func ExamplePattern_Match() {
	p, err := filter.Compile(`{"status": ["CREATED"], "amount": [{"numeric": [">", 100]}]}`)
	if err != nil {
		log.Fatal(err)
	}
	for _, doc := range []string{
		`{"status": "CREATED", "amount": 250}`,
		`{"status": "CREATED", "amount": "250"}`, // a string is not a number
		`{"status": "created", "amount": 250}`,   // equality is case-sensitive
		`{"status": "CREATED", "amount": 250`,    // not JSON
	} {
		ok, err := p.Match([]byte(doc))
		fmt.Println(ok, err)
	}
	// Output:
	// true <nil>
	// false <nil>
	// false <nil>
	// false filter: document is not valid JSON: unexpected end of JSON input after object key:value pair at offset 35
}

// ParseCriteria reads FilterCriteria as a SAM template or the Lambda API has them, and
// names the filter that is wrong.
func ExampleParseCriteria() {
	c, err := filter.ParseCriteria([]byte(`{"Filters": [
		{"Pattern": "{\"value\": {\"status\": [\"CREATED\"]}}"},
		{"Pattern": "{\"value\": {\"status\": [\"PAID\"], \"amount\": [{\"numeric\": [\">=\", 100]}]}}"}
	]}`))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Filters()), "filters")

	_, err = filter.ParseCriteria([]byte(`{"Filters": [
		{"Pattern": "{\"value\": {\"status\": [\"CREATED\"]}}"},
		{"Pattern": "{\"value\": {\"status\": [{\"wildcard\": \"C*\"}]}}"}
	]}`))
	fmt.Println(err)
	// Output:
	// 2 filters
	// filter: Filters[1]: value.status: wildcard is an EventBridge operator that Lambda's FilterCriteria do not support (WithEventBridge accepts it)
}

// NewCriteria takes the patterns themselves, and checks their number as Lambda does.
func ExampleNewCriteria() {
	c, err := filter.NewCriteria([]string{
		`{"value": {"status": ["CREATED"]}}`,
		`{"value": [{"prefix": "PING"}]}`,
	})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(c.Filters()), "filters")

	six := []string{`{"a":["1"]}`, `{"a":["2"]}`, `{"a":["3"]}`, `{"a":["4"]}`, `{"a":["5"]}`, `{"a":["6"]}`}
	_, err = filter.NewCriteria(six)
	fmt.Println(err)
	c, err = filter.NewCriteria(six, filter.WithRaisedFilterQuota())
	fmt.Println(len(c.Filters()), "filters,", err)
	// Output:
	// 2 filters
	// filter: Filters: 6 filters; an event source mapping takes at most 5 (10 with a raised quota: WithRaisedFilterQuota)
	// 6 filters, <nil>
}

// Criteria.Match evaluates a JSON document against every filter, as it is.
func ExampleCriteria_Match() {
	c, err := filter.NewCriteria([]string{`{"status": ["CREATED"]}`, `{"status": ["PAID"]}`})
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(c.Match([]byte(`{"status": "PAID"}`)))
	fmt.Println(c.Match([]byte(`{"status": "SHIPPED"}`)))
	// Output:
	// true <nil>
	// false <nil>
}

// Which says which filters a document matches, in one pass over it, as a router would.
func ExampleCriteria_Which() {
	routes := []string{"new orders", "big orders", "web orders"}
	c, err := filter.NewCriteria([]string{
		`{"status": ["CREATED"]}`,
		`{"amount": [{"numeric": [">=", 1000]}]}`,
		`{"channel": [{"equals-ignore-case": "web"}]}`,
	})
	if err != nil {
		log.Fatal(err)
	}
	var dst []int
	for _, doc := range []string{
		`{"status": "CREATED", "amount": 1500, "channel": "WEB"}`,
		`{"status": "PAID", "amount": 20, "channel": "POS"}`,
	} {
		dst, err = c.Which([]byte(doc), dst[:0])
		if err != nil {
			log.Fatal(err)
		}
		var names []string
		for _, i := range dst {
			names = append(names, routes[i])
		}
		fmt.Printf("%v %q\n", dst, names)
	}
	// Output:
	// [0 1 2] ["new orders" "big orders" "web orders"]
	// [] []
}

// MatchKafka matches the record's value as Lambda does: a JSON object against patterns on
// its fields, anything else as plain text. An error means the answer is not known: fail the
// record, do not drop it.
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
		Add("orders", 0, []byte(`{"status": "CREATED", "items": `+strings.Repeat("[", 1000)+strings.Repeat("]", 1000)+`}`)).
		Event()
	for r := range ev.All() {
		pass, err := c.MatchKafka(r)
		switch {
		case errors.Is(err, filter.ErrTooComplex):
			fmt.Printf("offset %d: not known, report it failed\n", r.Offset)
		case err != nil:
			fmt.Printf("offset %d: %v\n", r.Offset, err)
		case pass:
			fmt.Printf("offset %d: passes\n", r.Offset)
		default:
			fmt.Printf("offset %d: dropped\n", r.Offset)
		}
	}
	// Output:
	// offset 0: passes
	// offset 1: dropped
	// offset 2: passes
	// offset 3: not known, report it failed
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

// ExplainKafka says which filter passed a record, or why each filter dropped it.
func ExampleCriteria_ExplainKafka() {
	c, err := filter.NewCriteria([]string{
		`{"value": {"status": ["CREATED"]}}`,
		`{"value": {"total": [{"numeric": [">=", 20]}]}}`,
	})
	if err != nil {
		log.Fatal(err)
	}
	ev := kafkaeventtest.NewBuilder().
		Add("orders", 0, []byte(`{"status": "PAID", "total": 45}`)).
		Add("orders", 0, []byte(`{"status": "PAID", "total": 12.5}`)).
		Add("orders", 0, []byte(`total: 12.5`)).
		Event()
	for r := range ev.All() {
		v := c.ExplainKafka(r)
		if v.Match {
			fmt.Printf("offset %d: passes (filter %d)\n", r.Offset, v.Filter)
			continue
		}
		fmt.Printf("offset %d: dropped\n", r.Offset)
		for _, m := range v.Misses {
			fmt.Println("  ", m)
		}
	}
	// Output:
	// offset 0: passes (filter 1)
	// offset 1: dropped
	//    filter 0: value.status: got "PAID", want ["CREATED"]
	//    filter 1: value.total: got 12.5, want [{"numeric":[">=",20]}]
	// offset 2: dropped
	//    filter 0: value: plain text, but the pattern names fields inside it as in a JSON object
	//    filter 1: value: plain text, but the pattern names fields inside it as in a JSON object
}

// ExplainSQS is the same for an SQS message's body.
func ExampleCriteria_ExplainSQS() {
	c, err := filter.NewCriteria([]string{`{"body": [{"anything-but": ["PING"]}]}`})
	if err != nil {
		log.Fatal(err)
	}
	for _, body := range []string{`PING`, `{"type": "order"}`, `order 7`} {
		v := c.ExplainSQS(&events.SQSMessage{Body: body})
		fmt.Printf("%q: match=%v %v\n", body, v.Match, v.Misses)
	}
	// Output:
	// "PING": match=false [filter 0: body: got "PING", want [{"anything-but":["PING"]}]]
	// "{\"type\": \"order\"}": match=false [filter 0: body: a JSON object, but the pattern lists values for it as for plain text]
	// "order 7": match=true []
}

// MarshalJSON writes the criteria back in the shape CloudFormation takes, each pattern as it
// was written.
func ExampleCriteria_MarshalJSON() {
	c, err := filter.NewCriteria([]string{`{"value": {"status": ["CREATED"]}}`})
	if err != nil {
		log.Fatal(err)
	}
	out, err := c.MarshalJSON()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(string(out))
	// Output:
	// {"Filters":[{"Pattern":"{\"value\": {\"status\": [\"CREATED\"]}}"}]}
}

// Filters returns the compiled patterns, in order: to match or print each one alone.
func ExampleCriteria_Filters() {
	c, err := filter.NewCriteria([]string{`{"status": ["CREATED"]}`, `{"status": [{"prefix": "PAID"}]}`})
	if err != nil {
		log.Fatal(err)
	}
	for i, p := range c.Filters() {
		ok, err := p.Match([]byte(`{"status": "PAID_IN_FULL"}`))
		fmt.Println(i, p, ok, err)
	}
	// Output:
	// 0 {"status": ["CREATED"]} false <nil>
	// 1 {"status": [{"prefix": "PAID"}]} true <nil>
}

// WithEventBridge accepts the operators EventBridge rules have and Lambda's FilterCriteria
// do not.
func ExampleWithEventBridge() {
	const pattern = `{"source": [{"wildcard": "orders-*"}]}`
	_, err := filter.Compile(pattern)
	fmt.Println(err)
	p, err := filter.Compile(pattern, filter.WithEventBridge())
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Match([]byte(`{"source": "orders-eu"}`)))
	// Output:
	// filter: source: wildcard is an EventBridge operator that Lambda's FilterCriteria do not support (WithEventBridge accepts it)
	// true <nil>
}

// WithLegacyNumbers compares numbers as the engine did before mid-2024: within -5e9..5e9,
// to six decimal places.
func ExampleWithLegacyNumbers() {
	const pattern = `{"n": [{"numeric": ["=", 1.0000001]}]}`
	p, err := filter.Compile(pattern)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(p.Match([]byte(`{"n": 1.0000001}`)))
	_, err = filter.Compile(pattern, filter.WithLegacyNumbers())
	fmt.Println(err)
	// Output:
	// true <nil>
	// filter: n: numeric: 1.0000001 has more than 6 decimal places, the limit of WithLegacyNumbers
}

// An *Error says which filter and which path are wrong.
func ExampleError() {
	_, err := filter.NewCriteria([]string{`{"a": ["1"]}`, `{"b": {"c": []}}`})
	var fe *filter.Error
	if errors.As(err, &fe) {
		fmt.Printf("filter %d, path %s: %s\n", fe.Filter, fe.Path, fe.Reason)
	}
	// Output:
	// filter 1, path b.c: empty array: list at least one value to match
}
