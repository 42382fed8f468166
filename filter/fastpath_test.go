package filter_test

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// fastPatterns exercise what the fast path decides alone and where it must give up: fields
// under arrays of objects, exists false, $or, names of eight bytes or more, names that need
// escaping, non-ASCII, numbers in several forms.
var fastPatterns = [][]string{
	benchPatterns,
	{`{"items":{"sku":["SKU-0042"],"qty":[2]}}`, `{"items":{"sku":[{"prefix":"SKU-00"}]},"status":["PAID"]}`},
	{`{"a":[{"exists":false}],"b":["x"]}`, `{"a":{"b":[{"numeric":[">",1]}]},"c":[null,true,false]}`},
	{`{"$or":[{"a":["x"]},{"b":[{"prefix":"y"}]}]}`, `{"k\"q":["v"]}`, `{"\u00e9":["\u00fc"]}`},
	{`{"a-very-long-field-name":["x"],"exactly8":["y"]}`, `{"a":[300,{"numeric":["=",1e2]}]}`},
	{`{"a":[{"equals-ignore-case":"ÉCOLE"}]}`, `{"a":[{"anything-but":[1,2]}]}`, `{"a":[{"suffix":"z"}],"b":[{"exists":true}]}`},
	{`{"status":["PAID",{"prefix":"CRE"}]}`, `{"channel":["web","Web"]}`, `{"customer":{"tier":["gold"]},"status":["PAID"]}`, `{"customer":{"id":[{"prefix":"cust-0"}],"tier":[{"exists":false}]}}`},
}

// fastEdgeDocs are documents at the edges of the scan: whitespace, escapes, invalid UTF-8,
// number and literal forms, faults, nesting at the limits, arrays at maxTrail.
func fastEdgeDocs() []string {
	nest := func(open, close string, n int, inner string) string {
		return strings.Repeat(open, n) + inner + strings.Repeat(close, n)
	}
	docs := []string{
		``, ` `, `{}`, `[]`, `"x"`, `1`, `null`, `{"a":"x"}trailing`, `{"a":"x",}`, `{"a":"x"`, `{"a"}`,
		" \t\r\n{ \"a\" : \"x\" ,\n\"b\" :\t[ 1 , 2 ] } \n", `{"a":"x" , "b":"y"}`, `{"a" :"x"}`,
		`{"a":"\u0078"}`, `{"\u0061":"x"}`, `{"a\u0000":"x"}`, `{"a":"x` + "\n" + `"}`, `{"a":"\"x"}`,
		`{"a":"é"}`, `{"é":"ü"}`, `{"\u00e9":"\u00fc"}`, "{\"a\":\"\xff\"}", "{\"\xff\":\"x\"}", "{\"a\":\"x\"}\xff",
		`{"a":01}`, `{"a":-0}`, `{"a":1e2}`, `{"a":1E+2}`, `{"a":1.}`, `{"a":.5}`, `{"a":-}`, `{"a":1.5e}`,
		`{"a":300.0}`, `{"a":3e2}`, `{"a":2}`, `{"a":-1.25}`,
		`{"a":tru}`, `{"a":nul}`, `{"a":falsey}`, `{"a":true}`, `{"a":false}`, `{"a":null}`,
		`{"c":null,"a":{"b":2}}`, `{"c":true,"a":{"b":[0,5]}}`, `{"a":{"b":"2"},"c":false}`,
		`{"items":[{"sku":"SKU-0042","qty":1},{"sku":"B","qty":2}]}`,
		`{"items":[{"sku":"SKU-0042","qty":2},{"sku":"B","qty":1}]}`,
		`{"items":[{"sku":"SKU-0042","qty":2}],"status":"PAID"}`,
		`{"items":[[{"sku":"SKU-0042"}],{"sku":"SKU-0042","qty":[[2]]}]}`,
		`{"a":` + nest("[", "]", 64, `"x"`) + `,"b":"x"}`,
		`{"a":` + nest("[", "]", 65, `"x"`) + `,"b":"x"}`,
		`{"b":` + nest("[", "]", 65, `"x"`) + `,"a":[{"exists":1}]}`,
		`{"items":` + nest("[", "]", 66, `{"sku":"SKU-0042","qty":2}`) + `}`,
		`{"z":` + nest(`{"z":`, "}", 998, `1`) + `}`,
		`{"z":` + nest(`{"z":`, "}", 999, `1`) + `}`,
		`{"a":` + nest("[", "]", 999, `"x"`) + `}`,
		`{"a":` + nest("[", "]", 1000, `"x"`) + `}`,
		`{"exactly8":"y","a-very-long-field-name":"x"}`, `{"exactly8":"y","a-very-long-field-nam":"x"}`,
		`{"k\"q":"v"}`, `{"k\u0022q":"v"}`, `{"b":"y-and-more"}`, `{"a":"x","b":"y"}`,
		`{"a":"école"}`, `{"a":"ÉCOLE"}`, `{"a":"ecole"}`, `{"a":"ÉCOLEz","b":null}`,
		`{"a":1}`, `{"a":[1,2]}`, `{"a":[3,"x"]}`, `{"a":[]}`, `{"a":{}}`,
		`[{"status":"CREATED"}]`, `[{"a":"x"},{"b":"y"}]`, `{"status":"CREATED","status":"PAID"}`,
		`{"status":"CREATED"}`, `{"customer":{"id":"cust-01","tier":"gold"},"status":"PAID"}`,
		`{"customer":{"id":"cust-01"}}`, `{"customer":[{"id":"cust-01"},{"tier":"gold"}]}`,
		`{"orderId":"ord-1","x":"a-string-of-more-than-sixteen-bytes","y":"short"}`,
		`{"orderId":"ord-1\\"}`, `{"orderId":"ord-1\/2"}`, `{"channel":"W\u0045B"}`,
		`{"channel":"web"}`, `{"channel":"web" }`, `{"channel" : "WEB"}`, `{"s":"`, `{"s":"ab`, `{"s":1`,
	}
	return docs
}

// fastDocs are fastEdgeDocs, the first benchmark documents, and faults made from some of
// them: every prefix, and every byte replaced by bytes that end or break tokens.
func fastDocs() []string {
	docs := fastEdgeDocs()
	seeds := []string{`{"a":"x","b":[1,{"c":true}],"exactly8":"y"}`, `{"items":[{"sku":"SKU-0042","qty":2}],"channel":"web"}`}
	for _, d := range benchDocs()[:40] {
		docs = append(docs, string(d))
	}
	seeds = append(seeds, string(benchDocs()[0]), string(benchDocs()[1]))
	for _, s := range seeds {
		for i := range len(s) {
			docs = append(docs, s[:i])
			for _, b := range []string{" ", `"`, `\`, "}", "]", ",", ":", "x", "0", "\x80", "\x01", "{", "["} {
				docs = append(docs, s[:i]+b+s[i+1:])
			}
		}
	}
	return docs
}

func errText(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// TestFastPathAgrees checks that the fast path answers exactly as the general path does:
// the same matches and the same errors from Match, Which, MatchKafka and MatchSQS, on every
// document of fastDocs and every set of fastPatterns (under "value" and "body" for the
// shaped ones).
func TestFastPathAgrees(t *testing.T) {
	docs := fastDocs()
	for _, pats := range fastPatterns {
		c, err := filter.NewCriteria(pats)
		if err != nil {
			t.Fatalf("%q: %v", pats, err)
		}
		var under []string
		for _, p := range pats {
			under = append(under, `{"value":`+p+`}`)
		}
		// Lambda's format check needs patterns on the value itself too.
		under = append(under, `{"value":[{"prefix":"{\"a\""}]}`)
		kc, err := filter.NewCriteria(under, filter.WithRaisedFilterQuota())
		if err != nil {
			t.Fatalf("%q: %v", under, err)
		}
		for i := range under {
			under[i] = strings.Replace(under[i], `{"value":`, `{"body":`, 1)
		}
		sc, err := filter.NewCriteria(under, filter.WithRaisedFilterQuota())
		if err != nil {
			t.Fatalf("%q: %v", under, err)
		}
		ps := c.Filters()
		bad := 0
		for _, doc := range docs {
			if msg := fastDisagreement(c, kc, sc, ps, []byte(doc)); msg != "" {
				t.Errorf("patterns %q, document %q:\n%s", pats, abbrev([]byte(doc)), msg)
				if bad++; bad == 10 {
					t.FailNow()
				}
			}
		}
	}
}

// fastDisagreement returns what differs between the fast and the general path on doc, or "".
func fastDisagreement(c, kc, sc *filter.Criteria, ps []*filter.Pattern, doc []byte) string {
	var b strings.Builder
	got, gErr := c.Which(doc, []int{-1})
	want, wErr := c.GeneralWhich(doc, []int{-1})
	if !slices.Equal(got, want) || errText(gErr) != errText(wErr) {
		fmt.Fprintf(&b, "Which = %v, %v; general %v, %v\n", got, gErr, want, wErr)
	}
	m, mErr := c.Match(doc)
	gm, gmErr := c.GeneralMatch(doc)
	if m != gm || errText(mErr) != errText(gmErr) {
		fmt.Fprintf(&b, "Criteria.Match = %v, %v; general %v, %v\n", m, mErr, gm, gmErr)
	}
	for i, p := range ps {
		m, mErr := p.Match(doc)
		gm, gmErr := p.GeneralMatch(doc)
		if m != gm || errText(mErr) != errText(gmErr) {
			fmt.Fprintf(&b, "Pattern[%d].Match = %v, %v; general %v, %v\n", i, m, mErr, gm, gmErr)
		}
	}
	r := &kafkaevent.Record{Topic: "t", Value: doc}
	k, kErr := kc.MatchKafka(r)
	gk, gkErr := kc.GeneralMatchKafka(r)
	if k != gk || errText(kErr) != errText(gkErr) {
		fmt.Fprintf(&b, "MatchKafka = %v, %v; general %v, %v\n", k, kErr, gk, gkErr)
	}
	msg := &events.SQSMessage{Body: string(doc)}
	s, sErr := sc.MatchSQS(msg)
	gs, gsErr := sc.GeneralMatchSQS(msg)
	if s != gs || errText(sErr) != errText(gsErr) {
		fmt.Fprintf(&b, "MatchSQS = %v, %v; general %v, %v\n", s, sErr, gs, gsErr)
	}
	return b.String()
}

// TestFastPathServes checks that the fast path answers alone for the documents it is for,
// the benchmark's orders, rather than handing them to the general path: otherwise it would
// agree, and be no faster.
func TestFastPathServes(t *testing.T) {
	c, err := filter.NewCriteria(benchPatterns)
	if err != nil {
		t.Fatal(err)
	}
	kc, err := filter.NewCriteria(kafkaPatterns)
	if err != nil {
		t.Fatal(err)
	}
	for i, d := range benchDocs() {
		if _, ok, err := c.FastWhich(d, nil); !ok || err != nil {
			t.Fatalf("doc %d: the fast path gave up (%v)\n%s", i, err, d)
		}
		if _, ok, err := kc.FastMatchKafka(&kafkaevent.Record{Topic: "t", Value: d}); !ok || err != nil {
			t.Fatalf("doc %d: MatchKafka's fast path gave up (%v)\n%s", i, err, d)
		}
	}
}
