package filter_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// The tests in this file check that an answer the filter does not know is an error, never a
// false, a default or a different answer (issue 8, item 1).

// deep65 is the value of issue 8: 181 bytes, the SKU asked for under 65 nested arrays, one
// more than a leaf keeps the positions of. Whether the pattern's two fields lie in the same
// array element is then not known.
var deep65 = `{"status":"CREATED","items":` + strings.Repeat("[", 65) + `{"sku":"A-42","qty":5}` + strings.Repeat("]", 65) + `}`

func kafkaValue(v string) *kafkaevent.Record {
	ev := kafkaeventtest.NewBuilder().Add("orders", 0, []byte(v)).Event()
	return &ev.Partitions[0].Records[0]
}

func TestTooComplexIsAnError(t *testing.T) {
	if len(deep65) != 181 {
		t.Fatalf("test bug: the value is %d bytes, want the issue's 181", len(deep65))
	}
	for _, field := range []string{"value", "body"} {
		c, err := filter.NewCriteria([]string{`{"` + field + `":{"status":["CREATED"],"items":{"sku":["A-42"]}}}`})
		if err != nil {
			t.Fatal(err)
		}
		var ok bool
		var v filter.Verdict
		if field == "value" {
			ok, err = c.MatchKafka(kafkaValue(deep65))
			v = c.ExplainKafka(kafkaValue(deep65))
		} else {
			ok, err = c.MatchSQS(&events.SQSMessage{Body: deep65})
			v = c.ExplainSQS(&events.SQSMessage{Body: deep65})
		}
		if !errors.Is(err, filter.ErrTooComplex) || ok {
			t.Errorf("%s: Match = %v, %v; want false, ErrTooComplex", field, ok, err)
		}
		if !errors.Is(v.Err, filter.ErrTooComplex) || v.Match {
			t.Errorf("%s: Explain = %+v; want Err ErrTooComplex", field, v)
		}
	}
}

// nestedValue is a valid JSON object whose containers nest n deep: {"a":[[...["x"]...]]}.
func nestedValue(n int) string {
	return `{"a":` + strings.Repeat("[", n-1) + `"x"` + strings.Repeat("]", n-1) + `}`
}

// A value that is valid JSON but nests deeper than the scanner goes is not plain text: the
// answer is not known, so it is ErrTooComplex, never the answer for a plain string.
func TestDeepValueIsNotPlainText(t *testing.T) {
	// A plain-text pattern: it matches a value that is not a JSON object.
	c, err := filter.NewCriteria([]string{`{"value":[{"prefix":"{"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	sqs, err := filter.NewCriteria([]string{`{"body":[{"prefix":"{"}]}`})
	if err != nil {
		t.Fatal(err)
	}
	p, err := filter.Compile(`{"a":["x"]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1001, 10001, 100000} {
		doc := nestedValue(n)
		if ok, err := c.MatchKafka(kafkaValue(doc)); !errors.Is(err, filter.ErrTooComplex) || ok {
			t.Errorf("depth %d: MatchKafka = %v, %v; want false, ErrTooComplex", n, ok, err)
		}
		if v := c.ExplainKafka(kafkaValue(doc)); !errors.Is(v.Err, filter.ErrTooComplex) || v.Match {
			t.Errorf("depth %d: ExplainKafka = %+v; want Err ErrTooComplex", n, v)
		}
		if ok, err := sqs.MatchSQS(&events.SQSMessage{Body: doc}); !errors.Is(err, filter.ErrTooComplex) || ok {
			t.Errorf("depth %d: MatchSQS = %v, %v; want false, ErrTooComplex", n, ok, err)
		}
		// Pattern.Match says the same, and does not call valid JSON invalid.
		if ok, err := p.Match([]byte(doc)); !errors.Is(err, filter.ErrTooComplex) || errors.Is(err, filter.ErrDocument) || ok {
			t.Errorf("depth %d: Pattern.Match = %v, %v; want false, ErrTooComplex", n, ok, err)
		}
	}
	// At the limit, 1000 containers, the value is read as JSON: a JSON object, so the
	// plain-text pattern does not match it, and a pattern on its fields does.
	doc := nestedValue(1000)
	if ok, err := c.MatchKafka(kafkaValue(doc)); ok || err != nil {
		t.Errorf("depth 1000: MatchKafka = %v, %v; want false, nil", ok, err)
	}
	if ok, err := p.Match([]byte(doc)); !ok || err != nil {
		t.Errorf("depth 1000: Pattern.Match = %v, %v; want true, nil", ok, err)
	}
	// A value that is not valid JSON is plain text, as Lambda has it...
	for _, bad := range []string{`{"a":`, `{"a":1,}`, nestedValue(1000)[:1500]} {
		if ok, err := c.MatchKafka(kafkaValue(bad)); !ok || err != nil {
			t.Errorf("invalid JSON %.40q: MatchKafka = %v, %v; want true (plain text), nil", bad, ok, err)
		}
	}
	// ...but one that goes deeper than the limit before it turns out invalid is not known to
	// be invalid: the scanner stops at the limit, and fails closed.
	if ok, err := c.MatchKafka(kafkaValue(nestedValue(5000)[:4000])); !errors.Is(err, filter.ErrTooComplex) || ok {
		t.Errorf("deep invalid JSON: MatchKafka = %v, %v; want false, ErrTooComplex", ok, err)
	}
}

// Explaining a miss must not find a doubt that matching did not have: a filter whose third
// field is missing does not match, whatever the first two are.
func TestExplainAgreesWithMatch(t *testing.T) {
	c, err := filter.NewCriteria([]string{`{"value":{"items":{"sku":["A-42"],"qty":[5]},"status":["CREATED"]}}`})
	if err != nil {
		t.Fatal(err)
	}
	value := `{"items":` + strings.Repeat("[", 65) + `{"sku":"A-42","qty":5}` + strings.Repeat("]", 65) + `}`
	r := kafkaValue(value)
	ok, err := c.MatchKafka(r)
	if ok || err != nil {
		t.Fatalf("MatchKafka = %v, %v; want false, nil (status is missing)", ok, err)
	}
	v := c.ExplainKafka(r)
	if v.Match || v.Err != nil || len(v.Misses) != 1 || v.Misses[0].Path != "value.status" {
		t.Errorf("ExplainKafka = %+v; want a miss on value.status and no error", v)
	}
}

// A record whose fields could not be decoded has no value to match: MatchKafka says so
// rather than matching it as a tombstone.
func TestMatchKafkaRecordError(t *testing.T) {
	ev, err := kafkaevent.Parse([]byte(`{"eventSource":"aws:kafka","records":{"orders-0":[
		{"topic":"orders","partition":0,"offset":1,"timestamp":1,"timestampType":"CREATE_TIME","value":"%%%","headers":[]}]}}`))
	if err != nil {
		t.Fatal(err)
	}
	r := &ev.Partitions[0].Records[0]
	if r.Err == nil {
		t.Fatal("test bug: the record decoded")
	}
	c, err := filter.NewCriteria([]string{`{"value":[{"exists":false}]}`})
	if err != nil {
		t.Fatal(err)
	}
	if ok, err := c.MatchKafka(r); ok || !errors.Is(err, r.Err) {
		t.Errorf("MatchKafka = %v, %v; want false and an error wrapping %v", ok, err, r.Err)
	}
	if v := c.ExplainKafka(r); v.Match || !errors.Is(v.Err, r.Err) {
		t.Errorf("ExplainKafka = %+v; want Err wrapping %v", v, r.Err)
	}
}

// FilterCriteria that say more or less than the filters are refused, not read in part.
func TestParseCriteriaRefuses(t *testing.T) {
	one := `{"Pattern":"{\"a\":[\"1\"]}"}`
	for _, data := range []string{
		`{"Filters":[` + one + `]} {"Filters":[]}`, // a second document
		`{"Filters":[` + one + `]} x`,
		`{"filters":[` + one + `]}`, // CloudFormation names are case-sensitive
		`{"Filters":[` + one + `],"Filter":[]}`,
		`{"Filters":[{"Pattern":"{\"a\":[\"1\"]}","Patterns":"{}"}]}`,
		`{"Filters":[]}`, // no filters: Lambda would pass every record
		`{"Filters":null}`,
		`{}`,
		`null`,
	} {
		c, err := filter.ParseCriteria([]byte(data))
		var fe *filter.Error
		if !errors.As(err, &fe) {
			t.Errorf("ParseCriteria(%s) = %v, %v; want a *filter.Error", data, c, err)
			continue
		}
		t.Logf("%s: %v", data, err)
	}
	for _, patterns := range [][]string{nil, {}} {
		if c, err := filter.NewCriteria(patterns); err == nil {
			t.Errorf("NewCriteria(%q) = %v, nil; want an error", patterns, c)
		}
	}
}

// With WithLegacyNumbers, numeric operands have at most six decimal places, however their
// exponent is written.
func TestLegacyDecimalsHugeExponent(t *testing.T) {
	for _, n := range []string{"1e-7", "1e-99999999999999999999", "0.5e-99999999999999999999999"} {
		p := `{"a":[{"numeric":[">",` + n + `]}]}`
		if _, err := filter.Compile(p, filter.WithLegacyNumbers()); err == nil {
			t.Errorf("Compile(%s, WithLegacyNumbers()) succeeded; want an error about decimal places", p)
		}
	}
}

// A key given twice in FilterCriteria is refused: decoding into a map kept the last copy
// silently (found by FuzzParseCriteria), and which one Lambda keeps is not documented.
func TestParseCriteriaDuplicateKeys(t *testing.T) {
	for _, in := range []string{
		`{"Filters":[{"Pattern":"{\"a\":[\"1\"]}"}],"Filters":[{"Pattern":"{\"b\":[\"2\"]}"}]}`,
		`{"Filters":[{"Pattern":"{\"a\":[\"1\"]}","Pattern":"{\"b\":[\"2\"]}"}]}`,
	} {
		_, err := filter.ParseCriteria([]byte(in))
		var fe *filter.Error
		if !errors.As(err, &fe) || !strings.Contains(fe.Reason, "twice") {
			t.Errorf("ParseCriteria(%s) = %v, want an *Error saying a key is given twice", in, err)
		}
	}
}

// A document that is not JSON, whatever is wrong in it, is ErrDocument: for a record value, plain
// text rather than an error.
func TestSyntaxErrorsAreErrDocument(t *testing.T) {
	p, err := filter.Compile(`{"a":["x"]}`)
	if err != nil {
		t.Fatal(err)
	}
	for _, doc := range []string{`{"a":tru}`, `{"a":nul`, `{"a":"\q"}`, `{"a":1.}`, `{"a" 1}`, `{"a":1 "b":2}`, `[1 2]`, `{} x`, `{"a":"x`, "\xff"} {
		if ok, err := p.Match([]byte(doc)); ok || !errors.Is(err, filter.ErrDocument) {
			t.Errorf("Match(%q) = %v, %v; want false, ErrDocument", doc, ok, err)
		}
	}
}
