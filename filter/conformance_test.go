package filter_test

// Conformance table for Lambda event source mapping FilterCriteria.
//
// Every case names the rule it checks (reason) and where the rule comes from (source): a
// section of the research notes /work/shared/reference/filter-semantics.md ("§2.6") or an AWS
// documentation page. Cases that the notes mark as uncertain ("low") are either left out or
// follow the notes' stated recommendation; their reason says so.

import (
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/limits"
)

// Documentation pages cited by the cases.
const (
	docLambda    = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html#filtering-syntax"
	docLambdaESM = "https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html"
	docKafka     = "https://docs.aws.amazon.com/lambda/latest/dg/kafka-filtering.html"
	docSQS       = "https://docs.aws.amazon.com/lambda/latest/dg/with-sqs-filtering.html"
	docEBArrays  = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-event-patterns-arrays.html"
	docEBOps     = "https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html"
	docAPIFilter = "https://docs.aws.amazon.com/lambda/latest/api/API_Filter.html"
)

// Minimum sizes of the table; TestConformanceCount fails below them.
const (
	minTotalCases   = 250
	minInvalidCases = 40
)

// ---------------------------------------------------------------------------------------------
// Case types

// matchCase compiles pattern and matches it against the JSON document doc.
type matchCase struct {
	name, pattern, doc  string
	eventBridge, legacy bool
	want                bool
	reason, source      string
}

func (c matchCase) opts() []filter.Option { return options(c.eventBridge, c.legacy) }

// eb returns c compiled WithEventBridge.
func (c matchCase) eb() matchCase { c.eventBridge = true; return c }

// leg returns c compiled WithLegacyNumbers.
func (c matchCase) leg() matchCase { c.legacy = true; return c }

func yes(name, pattern, doc, reason, source string) matchCase {
	return matchCase{name: name, pattern: pattern, doc: doc, want: true, reason: reason, source: source}
}

func no(name, pattern, doc, reason, source string) matchCase {
	return matchCase{name: name, pattern: pattern, doc: doc, want: false, reason: reason, source: source}
}

// invalidCase is a pattern Compile must reject with a *filter.Error.
type invalidCase struct {
	name, pattern       string
	eventBridge, legacy bool
	reason, source      string
	wantInErr           string // optional substring of the error text
	path                string // asserted when checkPath
	checkPath           bool
}

func (c invalidCase) opts() []filter.Option { return options(c.eventBridge, c.legacy) }
func (c invalidCase) eb() invalidCase       { c.eventBridge = true; return c }
func (c invalidCase) leg() invalidCase      { c.legacy = true; return c }

// at says the spec places the problem at pattern path p ("" = the pattern as a whole).
func (c invalidCase) at(p string) invalidCase { c.path = p; c.checkPath = true; return c }

func bad(name, pattern, reason, source string) invalidCase {
	return invalidCase{name: name, pattern: pattern, reason: reason, source: source}
}

// kafkaCase builds one Kafka record and runs Criteria.MatchKafka.
type kafkaCase struct {
	name     string
	patterns []string
	topic    string // "orders" when empty
	key      []byte // no key when nil
	value    []byte
	want     bool
	reason   string
	source   string
}

// sqsCase runs Criteria.MatchSQS on one message.
type sqsCase struct {
	name              string
	patterns          []string
	body              string
	attributes        map[string]string
	messageAttributes map[string]events.SQSMessageAttribute
	messageID         string
	want              bool
	reason, source    string
}

// criteriaMatchCase compiles several filters with NewCriteria and runs Criteria.Match.
type criteriaMatchCase struct {
	name     string
	patterns []string
	doc      string
	want     bool
	reason   string
	source   string
}

// criteriaParseCase runs ParseCriteria (or NewCriteria when patterns is set).
type criteriaParseCase struct {
	name        string
	data        string   // ParseCriteria input
	patterns    []string // NewCriteria input, used when data is ""
	raised      bool     // WithRaisedFilterQuota
	wantErr     bool
	wantFilters int    // number of filters when valid
	filterIndex int    // asserted Error.Filter when >= 0 and wantErr
	path        string // asserted Error.Path when checkPath
	checkPath   bool
	reason      string
	source      string
}

func options(eventBridge, legacy bool) []filter.Option {
	var o []filter.Option
	if eventBridge {
		o = append(o, filter.WithEventBridge())
	}
	if legacy {
		o = append(o, filter.WithLegacyNumbers())
	}
	return o
}

func optNames(eventBridge, legacy bool) string {
	var s []string
	if eventBridge {
		s = append(s, "WithEventBridge")
	}
	if legacy {
		s = append(s, "WithLegacyNumbers")
	}
	if len(s) == 0 {
		return "none"
	}
	return strings.Join(s, ",")
}

// ---------------------------------------------------------------------------------------------
// Generated patterns

// orCombinations builds a pattern whose $or clauses expand to the product of counts: one $or
// per nested field l0, l1, ..., each with counts[i] branches.
func orCombinations(counts ...int) string {
	var b strings.Builder
	b.WriteString("{")
	for i, n := range counts {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"l%d":{"$or":[`, i)
		for j := 0; j < n; j++ {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, `{"x%d":["%d"]}`, j, j)
		}
		b.WriteString("]}")
	}
	b.WriteString("}")
	return b.String()
}

// orCombinationsDoc matches orCombinations(counts...) through the last branch of every $or.
func orCombinationsDoc(counts ...int) string {
	var b strings.Builder
	b.WriteString("{")
	for i, n := range counts {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, `"l%d":{"x%d":"%d"}`, i, n-1, n-1)
	}
	b.WriteString("}")
	return b.String()
}

// nestedOr builds depth levels of nested objects, each level with a two-branch $or, so the
// pattern expands to 2^depth combinations.
func nestedOr(depth int) string {
	var b strings.Builder
	for i := 0; i < depth; i++ {
		if i == 0 {
			b.WriteString("{")
		} else {
			fmt.Fprintf(&b, `,"n%d":{`, i)
		}
		fmt.Fprintf(&b, `"$or":[{"a%d":["x"]},{"b%d":["y"]}]`, i, i)
	}
	b.WriteString(strings.Repeat("}", depth))
	return b.String()
}

// patternOfLength returns {"a":["xxx…"]} exactly n characters long (n >= 10).
func patternOfLength(n int) string {
	const overhead = len(`{"a":[""]}`)
	return `{"a":["` + strings.Repeat("x", n-overhead) + `"]}`
}

func docOfPatternLength(n int) string {
	const overhead = len(`{"a":[""]}`)
	return `{"a":"` + strings.Repeat("x", n-overhead) + `"}`
}

// ---------------------------------------------------------------------------------------------
// Match cases

// nullTableCases is the whole §2.6 table: every row (event value) against every column.
func nullTableCases() []matchCase {
	type col struct {
		name, leaf string
	}
	cols := []col{
		{"null", `[null]`},
		{"empty-string", `[""]`},
		{"exists-true", `[{"exists":true}]`},
		{"exists-false", `[{"exists":false}]`},
		{"anything-but-x", `[{"anything-but":"x"}]`},
		{"numeric", `[{"numeric":[">=",0]}]`},
	}
	type row struct {
		name, doc string
		want      [6]bool
		note      string
	}
	rows := []row{
		{"missing", `{"other":1}`, [6]bool{false, false, false, true, false, false},
			"missing field: only exists:false holds; anything-but on a missing field is AWS-validated not to match"},
		{"null", `{"v":null}`, [6]bool{true, false, true, false, true, false},
			"JSON null is a value: [null] and exists:true (engine) hold, anything-but \"x\" matches (AWS-validated)"},
		{"empty-string", `{"v":""}`, [6]bool{false, true, true, false, true, false},
			"\"\" is a string value distinct from null"},
		{"empty-array", `{"v":[]}`, [6]bool{false, false, false, true, false, false},
			"an empty array has no leaf values (AWS-validated for [null] and exists:true)"},
		{"empty-object", `{"v":{}}`, [6]bool{false, false, false, true, false, false},
			"an object is an intermediate node, not a leaf (Lambda doc; event-ruler README for exists:false)"},
		{"object", `{"v":{"k":"x"}}`, [6]bool{false, false, false, true, false, false},
			"a non-empty object is still an intermediate node at v, not a leaf"},
	}
	var cs []matchCase
	for _, r := range rows {
		for i, c := range cols {
			cs = append(cs, matchCase{
				name:    "null-table/" + r.name + "/" + c.name,
				pattern: `{"v":` + c.leaf + `}`,
				doc:     r.doc,
				want:    r.want[i],
				reason:  "§2.6 table, row " + r.name + ", column " + c.name + ": " + r.note,
				source:  "§2.6",
			})
		}
	}
	return cs
}

func matchCases() []matchCase {
	var cs []matchCase
	for _, group := range [][]matchCase{equalsCases(), fieldCases(), orCases(), stringOpCases(), anythingButCases(), numericCases(), arrayCases()} {
		cs = append(cs, group...)
	}
	return append(cs, nullTableCases()...)
}

// equalsCases are the match cases of equality of strings, numbers and booleans, and lists of values.
func equalsCases() []matchCase {
	return []matchCase{
		// --- Equals (string) -----------------------------------------------------------------
		yes("equals/string", `{"Name":["Alice"]}`, `{"Name":"Alice"}`,
			"exact string equality", docLambda),
		no("equals/string-other", `{"Name":["Alice"]}`, `{"Name":"Bob"}`,
			"a different string does not match", docLambda),
		no("equals/string-case", `{"Name":["Alice"]}`, `{"Name":"alice"}`,
			"exact match has no case folding", "§2.9"),
		no("equals/string-trailing-space", `{"Name":["Alice"]}`, `{"Name":"Alice "}`,
			"exact match has no trimming", "§2.9"),
		no("equals/string-prefix-of-value", `{"Name":["Alic"]}`, `{"Name":"Alice"}`,
			"equality is whole-string, not prefix", "§1"),
		no("equals/string-nfc-vs-nfd", `{"w":["\u00e9"]}`, `{"w":"e\u0301"}`,
			"no Unicode normalization: NFC é differs from NFD e+U+0301", "§2.9"),
		yes("equals/string-unicode", `{"w":["école"]}`, `{"w":"école"}`,
			"code-point equality of identical non-ASCII strings", "§1"),
		yes("equals/string-json-escapes", `{"s":["a\"b\\c"]}`, `{"s":"a\u0022b\u005cc"}`,
			"JSON escapes are decoded on both sides before comparing", "§1"),
		no("equals/field-name-case", `{"Name":["Alice"]}`, `{"name":"Alice"}`,
			"field names are case-sensitive (AWS-validated key_case_sensitive_NEG)", "§2.1"),
		yes("equals/unnamed-fields-ignored", `{"Name":["Alice"]}`, `{"Name":"Alice","Age":30,"x":{"y":[1]}}`,
			"fields not named in the pattern are ignored", "§2.1"),
		no("equals/field-missing", `{"Name":["Alice"]}`, `{"Other":"Alice"}`,
			"a named field that is missing cannot match", "§2.1"),
		yes("equals/ip-looking-string", `{"ip":["10.0.0.1"]}`, `{"ip":"10.0.0.1"}`,
			"an IP-looking exact string still matches the same address", "§2.9"),
		no("equals/ip-looking-string-other", `{"ip":["10.0.0.1"]}`, `{"ip":"10.0.0.2"}`,
			"an IP-looking exact string is a one-address range; the next address is outside", "§2.9"),
		yes("equals/operator-name-as-field-outside-or", `{"prefix":["abc"]}`, `{"prefix":"abc"}`,
			"operator names are only reserved as keys inside $or; elsewhere they are plain field names", "§2.8"),
		no("equals/embedded-json-not-parsed", `{"a":{"b":["x"]}}`, `{"a":"{\"b\":\"x\"}"}`,
			"JSON inside a string field is not parsed (AWS-validated nested_json_NEG)", "§2.3"),
		yes("equals/empty-string", `{"LastName":[""]}`, `{"LastName":""}`,
			"empty-string matching (Lambda doc 'Empty' row)", docLambda),
		yes("equals/null", `{"UserID":[null]}`, `{"UserID":null}`,
			"null matching (Lambda doc 'Null' row)", docLambda),
		no("equals/null-vs-string-null", `{"v":[null]}`, `{"v":"null"}`,
			"null does not match the string \"null\" (AWS-validated)", "§2.3"),
		no("equals/string-null-vs-null", `{"v":["null"]}`, `{"v":null}`,
			"the string \"null\" does not match JSON null", "§2.3"),
		no("equals/empty-string-vs-space", `{"v":[""]}`, `{"v":" "}`,
			"\"\" is not whitespace-trimmed", "§2.9"),

		// --- Equals (number) -----------------------------------------------------------------
		yes("number/int", `{"n":[100]}`, `{"n":100}`, "number literal equality", "§1"),
		no("number/int-other", `{"n":[100]}`, `{"n":101}`, "a different number does not match", "§1"),
		yes("number/300-vs-300.0", `{"n":[300]}`, `{"n":300.0}`,
			"a bare number literal also compiles to numeric-equals (AWS-validated number_comparison_float); the docs' contrary sentence is overridden by the engine", "§2.4"),
		yes("number/300-vs-3.0e2", `{"n":[300]}`, `{"n":3.0e2}`,
			"a bare number literal matches numerically equal exponent forms", "§2.4"),
		yes("number/300-vs-3e2", `{"n":[300]}`, `{"n":3e2}`,
			"a bare number literal matches numerically equal exponent forms", "§2.4"),
		yes("number/300.0-vs-300", `{"n":[300.0]}`, `{"n":300}`,
			"numeric equality works with the decimal form in the pattern", "§2.4"),
		yes("number/3.0e2-vs-300", `{"n":[3.0e2]}`, `{"n":300}`,
			"numeric equality works with the exponent form in the pattern", "§2.4"),
		no("number/5-vs-string-5", `{"n":[5]}`, `{"n":"5"}`, "[5] does not match the string \"5\"", "§2.3"),
		no("number/string-5-vs-5", `{"n":["5"]}`, `{"n":5}`, "[\"5\"] does not match the number 5", "§2.3"),
		yes("number/mixed-list-string", `{"n":["5",5]}`, `{"n":"5"}`, "a value list may mix types", "§2.3"),
		yes("number/mixed-list-number", `{"n":["5",5]}`, `{"n":5}`, "a value list may mix types", "§2.3"),
		yes("number/0-vs-neg-0", `{"n":[0]}`, `{"n":-0}`, "-0 equals 0 (numeric-equals of a bare literal)", "§2.5"),
		yes("number/neg-0-vs-0", `{"n":[-0]}`, `{"n":0}`, "-0 equals 0 (numeric-equals of a bare literal)", "§2.5"),
		yes("number/decimal", `{"n":[1.5]}`, `{"n":1.5}`, "decimal literal equality", "§2.4"),
		yes("number/decimal-trailing-zero", `{"n":[1.5]}`, `{"n":1.50}`, "1.50 equals 1.5 numerically", "§2.4"),
		no("number/decimal-other", `{"n":[1.5]}`, `{"n":1.50001}`, "a different decimal does not match", "§2.4"),
		yes("number/negative", `{"n":[-7]}`, `{"n":-7}`, "negative literal equality", "§2.4"),
		yes("number/large-default", `{"n":[12345678901]}`, `{"n":12345678901.0}`,
			"above 5e9 the default float64 engine still compares numerically", "§2.5"),
		yes("number/huge-textual", `{"n":[12345678901234567890123]}`, `{"n":12345678901234567890123}`,
			"a number not exactly representable as binary64 keeps its textual matcher", "§2.4"),
		no("number/huge-not-numeric", `{"n":[12345678901234567890123]}`, `{"n":12345678901234567890124}`,
			"a number not exactly representable as binary64 gets only the textual matcher, so a different text does not match even though both round to the same float64", "§2.4"),
		no("number/vs-bool", `{"n":[1]}`, `{"n":true}`, "numbers and booleans are distinct", "§2.3"),
		no("number/vs-null", `{"n":[0]}`, `{"n":null}`, "numbers and null are distinct", "§2.3"),

		// --- Equals (bool) -------------------------------------------------------------------
		yes("bool/true", `{"f":[true]}`, `{"f":true}`, "boolean literal equality", "§1"),
		no("bool/true-vs-string", `{"f":[true]}`, `{"f":"true"}`, "[true] does not match the string \"true\"", "§2.3"),
		no("bool/string-vs-true", `{"f":["true"]}`, `{"f":true}`, "[\"true\"] does not match the boolean", "§2.3"),
		yes("bool/false", `{"f":[false]}`, `{"f":false}`, "boolean literal equality", "§1"),
		no("bool/false-vs-true", `{"f":[false]}`, `{"f":true}`, "false is not true", "§1"),
		no("bool/false-vs-0", `{"f":[false]}`, `{"f":0}`, "false is not the number 0", "§2.3"),
		no("bool/false-vs-null", `{"f":[false]}`, `{"f":null}`, "false is not null", "§2.3"),
		no("bool/false-vs-missing", `{"f":[false]}`, `{}`, "a missing field is not false", "§2.6"),
		yes("bool/either", `{"f":[true,false]}`, `{"f":false}`, "a value list of both booleans", "§2.1"),

		// --- Or (values) ---------------------------------------------------------------------
		yes("or-values/first", `{"PaymentType":["Credit","Debit"]}`, `{"PaymentType":"Credit"}`,
			"a leaf matches if any array element matches", docLambda),
		yes("or-values/second", `{"PaymentType":["Credit","Debit"]}`, `{"PaymentType":"Debit"}`,
			"a leaf matches if any array element matches", docLambda),
		no("or-values/none", `{"PaymentType":["Credit","Debit"]}`, `{"PaymentType":"Cash"}`,
			"no element matches", docLambda),
		yes("or-values/mixed-matchers-prefix", `{"a":["x",{"prefix":"ab"},{"numeric":[">",10]}]}`, `{"a":"abc"}`,
			"value lists may mix exact values and operators (OR)", "§2.1"),
		yes("or-values/mixed-matchers-numeric", `{"a":["x",{"prefix":"ab"},{"numeric":[">",10]}]}`, `{"a":11}`,
			"value lists may mix exact values and operators (OR)", "§2.1"),
		no("or-values/mixed-matchers-none", `{"a":["x",{"prefix":"ab"},{"numeric":[">",10]}]}`, `{"a":5}`,
			"no matcher in the list accepts 5", "§2.1"),
	}
}

// fieldCases are the match cases of several fields, nested fields and keys given twice.
func fieldCases() []matchCase {
	return []matchCase{
		// --- And (fields) --------------------------------------------------------------------
		yes("and/both", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York","Day":"Monday"}`,
			"all named fields must match", docLambda),
		no("and/one-wrong", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York","Day":"Tuesday"}`,
			"one field failing fails the AND", docLambda),
		no("and/one-missing", `{"Location":["New York"],"Day":["Monday"]}`, `{"Location":"New York"}`,
			"one field missing fails the AND", docLambda),
		yes("and/three-with-exists-false", `{"a":["1"],"b":{"c":["2"]},"d":[{"exists":false}]}`, `{"a":"1","b":{"c":"2"}}`,
			"AND across levels including an absence test", "§2.1"),
		no("and/three-exists-false-fails", `{"a":["1"],"b":{"c":["2"]},"d":[{"exists":false}]}`, `{"a":"1","b":{"c":"2"},"d":"x"}`,
			"the absence test fails, so the AND fails", "§2.1"),

		// --- Nesting -------------------------------------------------------------------------
		yes("nesting/deep", `{"a":{"b":{"c":["x"]}}}`, `{"a":{"b":{"c":"x"}}}`, "nested paths match level by level", "§2.1"),
		no("nesting/wrong-level", `{"a":{"b":{"c":["x"]}}}`, `{"a":{"c":"x"}}`, "paths must have the same nesting", "§2.1"),
		no("nesting/pattern-object-vs-event-leaf", `{"a":{"b":["x"]}}`, `{"a":"x"}`,
			"a pattern object against an event leaf does not match", "§2.1"),
		no("nesting/pattern-leaf-vs-event-object", `{"a":["x"]}`, `{"a":{"b":"x"}}`,
			"a pattern leaf against an event object does not match", "§2.1"),
		yes("nesting/siblings", `{"a":{"b":["1"],"c":["2"]}}`, `{"a":{"b":"1","c":"2","d":"3"}}`,
			"sibling leaves under one object are ANDed; extra fields ignored", "§2.1"),
		no("nesting/same-name-other-level", `{"a":{"b":["x"]}}`, `{"b":"x","a":{}}`,
			"a leaf at the top level is not a.b", "§2.1"),

		// --- Duplicate keys ------------------------------------------------------------------
		yes("duplicate-key/last-wins", `{"a":["x"],"a":["y"]}`, `{"a":"y"}`,
			"duplicate keys in a pattern: the last one wins", "§2.1"),
		no("duplicate-key/first-dropped", `{"a":["x"],"a":["y"]}`, `{"a":"x"}`,
			"duplicate keys in a pattern: the earlier value is discarded", "§2.1"),
	}
}

// orCases are the match cases of $or.
func orCases() []matchCase {
	return []matchCase{
		// --- $or -----------------------------------------------------------------------------
		yes("or/doc-example-location", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"New York","Day":"Friday"}`,
			"$or matches if any branch matches", docLambda),
		yes("or/doc-example-day", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"Boston","Day":"Monday"}`,
			"$or matches if any branch matches", docLambda),
		yes("or/both-branches", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"New York","Day":"Monday"}`,
			"$or with both branches true", docLambda),
		no("or/no-branch", `{"$or":[{"Location":["New York"]},{"Day":["Monday"]}]}`, `{"Location":"Boston","Day":"Friday"}`,
			"$or with no branch true", docLambda),
		yes("or/alongside-field", `{"source":["shop"],"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"source":"shop","b":"2"}`,
			"$or is ANDed with ordinary fields at the same level", "§2.8"),
		no("or/alongside-field-field-fails", `{"source":["shop"],"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"source":"web","b":"2"}`,
			"the ordinary field fails, so the AND fails", "§2.8"),
		no("or/alongside-field-no-branch", `{"source":["shop"],"$or":[{"a":["1"]},{"b":["2"]}]}`, `{"source":"shop","c":"3"}`,
			"no $or branch matches", "§2.8"),
		no("or/multi-field-branch-partial", `{"$or":[{"a":["1"],"b":["2"]},{"c":["3"]}]}`, `{"a":"1"}`,
			"fields inside one branch are ANDed", "§2.8"),
		yes("or/multi-field-branch-full", `{"$or":[{"a":["1"],"b":["2"]},{"c":["3"]}]}`, `{"a":"1","b":"2"}`,
			"fields inside one branch are ANDed", "§2.8"),
		yes("or/three-branches-third", `{"$or":[{"a":["1"]},{"b":["2"]},{"c":["3"]}]}`, `{"c":"3"}`,
			"$or with three branches", "§2.8"),
		yes("or/nested-inner-branch", `{"$or":[{"a":["1"]},{"$or":[{"b":["2"]},{"c":["3"]}]}]}`, `{"c":"3"}`,
			"$or can nest inside $or branches", "§2.8"),
		yes("or/nested-outer-branch", `{"$or":[{"a":["1"]},{"$or":[{"b":["2"]},{"c":["3"]}]}]}`, `{"a":"1"}`,
			"$or can nest inside $or branches", "§2.8"),
		no("or/nested-none", `{"$or":[{"a":["1"]},{"$or":[{"b":["2"]},{"c":["3"]}]}]}`, `{"d":"4"}`,
			"no branch at any level matches", "§2.8"),
		yes("or/inside-object", `{"detail":{"$or":[{"x":[1]},{"y":[2]}]}}`, `{"detail":{"y":2}}`,
			"$or at a nested level applies to that object's fields", "§2.8"),
		no("or/inside-object-wrong-level", `{"detail":{"$or":[{"x":[1]},{"y":[2]}]}}`, `{"y":2}`,
			"$or under detail names detail.y, not y", "§2.8"),
		yes("or/parallel-levels", `{"$or":[{"a":["1"]},{"b":["2"]}],"d":{"$or":[{"x":["1"]},{"y":["2"]}]}}`, `{"a":"1","d":{"y":"2"}}`,
			"$or clauses at different levels are ANDed", "§2.8"),
		no("or/parallel-levels-one-fails", `{"$or":[{"a":["1"]},{"b":["2"]}],"d":{"$or":[{"x":["1"]},{"y":["2"]}]}}`, `{"a":"1","d":{"z":"2"}}`,
			"the inner $or has no matching branch", "§2.8"),
		yes("or/numeric-branches", `{"detail":{"$or":[{"c-count":[{"numeric":[">",0,"<=",5]}]},{"d-count":[{"numeric":["<",10]}]},{"x-limit":[{"numeric":["=",3.018e2]}]}]}}`, `{"detail":{"x-limit":301.8}}`,
			"$or of numeric branches (event-ruler JsonRuleCompiler example)", "§2.8"),
		no("or/numeric-branches-none", `{"detail":{"$or":[{"c-count":[{"numeric":[">",0,"<=",5]}]},{"d-count":[{"numeric":["<",10]}]},{"x-limit":[{"numeric":["=",3.018e2]}]}]}}`, `{"detail":{"c-count":6,"d-count":10}}`,
			"c-count 6 > 5 and d-count 10 is not < 10", "§2.8"),
		yes("or/branch-exists-false", `{"$or":[{"a":[{"exists":false}]},{"a":["x"]}]}`, `{"b":1}`,
			"a branch with exists:false matches a missing field", "§2.8"),
		yes("or/branch-nested-object", `{"$or":[{"a":{"b":["1"]}},{"c":["2"]}]}`, `{"a":{"b":"1"}}`,
			"a branch may hold nested objects", "§2.8"),
		yes("or/1000-combinations-allowed", orCombinations(10, 10, 10), orCombinationsDoc(10, 10, 10),
			"exactly 1000 $or combinations is within the limit", "§2.8"),
	}
}

// stringOpCases are the match cases of prefix, suffix and equals-ignore-case.
func stringOpCases() []matchCase {
	return []matchCase{
		// --- prefix --------------------------------------------------------------------------
		yes("prefix/match", `{"r":[{"prefix":"us-"}]}`, `{"r":"us-east-1"}`, "begins with", docLambda),
		no("prefix/no-match", `{"r":[{"prefix":"us-"}]}`, `{"r":"eu-west-1"}`, "does not begin with", docLambda),
		no("prefix/case-sensitive", `{"r":[{"prefix":"us-"}]}`, `{"r":"US-east-1"}`, "prefix is case-sensitive", "§2.9"),
		yes("prefix/equal-to-value", `{"r":[{"prefix":"us-"}]}`, `{"r":"us-"}`, "a string begins with itself", "§1"),
		no("prefix/longer-than-value", `{"r":[{"prefix":"us-east"}]}`, `{"r":"us-"}`, "value shorter than the prefix", "§1"),
		no("prefix/on-number", `{"n":[{"prefix":"1"}]}`, `{"n":123}`, "prefix matches strings only", "§2.3"),
		yes("prefix/empty-on-string", `{"r":[{"prefix":""}]}`, `{"r":"anything"}`, "prefix \"\" matches every string (AWS-validated)", "§2.9"),
		yes("prefix/empty-on-empty-string", `{"r":[{"prefix":""}]}`, `{"r":""}`, "prefix \"\" matches the empty string", "§2.9"),
		no("prefix/empty-on-number", `{"r":[{"prefix":""}]}`, `{"r":5}`, "even prefix \"\" fails on a number", "§2.3"),
		no("prefix/empty-on-bool", `{"r":[{"prefix":""}]}`, `{"r":true}`, "even prefix \"\" fails on a boolean", "§2.3"),
		no("prefix/empty-on-null", `{"r":[{"prefix":""}]}`, `{"r":null}`, "even prefix \"\" fails on null", "§2.3"),
		no("prefix/empty-on-missing", `{"r":[{"prefix":""}]}`, `{"x":"y"}`, "a missing field has no value to test", "§2.6"),
		yes("prefix/array-element", `{"r":[{"prefix":"us-"}]}`, `{"r":["eu-1","us-1"]}`, "any array element may match", "§2.2"),
		yes("prefix/unicode", `{"r":[{"prefix":"éc"}]}`, `{"r":"école"}`, "prefix over non-ASCII code points", "§1"),

		// --- suffix --------------------------------------------------------------------------
		yes("suffix/match", `{"f":[{"suffix":".png"}]}`, `{"f":"a.png"}`, "ends with", docLambda),
		no("suffix/no-match", `{"f":[{"suffix":".png"}]}`, `{"f":"a.jpg"}`, "does not end with", docLambda),
		no("suffix/case-sensitive", `{"f":[{"suffix":".png"}]}`, `{"f":"A.PNG"}`, "suffix is case-sensitive", "§2.9"),
		no("suffix/on-number", `{"n":[{"suffix":"3"}]}`, `{"n":123}`, "suffix matches strings only", "§2.3"),
		no("suffix/on-bool", `{"n":[{"suffix":"e"}]}`, `{"n":true}`, "suffix matches strings only", "§2.3"),
		yes("suffix/empty-on-string", `{"f":[{"suffix":""}]}`, `{"f":"x"}`, "suffix \"\" matches every string (AWS-validated)", "§2.9"),
		no("suffix/empty-on-number", `{"f":[{"suffix":""}]}`, `{"f":1}`, "suffix \"\" fails on a number", "§2.3"),

		// --- prefix / suffix with equals-ignore-case -----------------------------------------
		yes("prefix-ignore-case/match", `{"s":[{"prefix":{"equals-ignore-case":"eventb"}}]}`, `{"s":"EventBridge"}`,
			"prefix ignoring case", docEBOps),
		no("prefix-ignore-case/no-match", `{"s":[{"prefix":{"equals-ignore-case":"eventb"}}]}`, `{"s":"Event"}`,
			"value shorter than the prefix", docEBOps),
		no("prefix-ignore-case/on-number", `{"s":[{"prefix":{"equals-ignore-case":"1"}}]}`, `{"s":123}`,
			"strings only", "§2.3"),
		yes("suffix-ignore-case/match", `{"f":[{"suffix":{"equals-ignore-case":".PNG"}}]}`, `{"f":"photo.png"}`,
			"suffix ignoring case", docEBOps),
		yes("suffix-ignore-case/mixed-case", `{"f":[{"suffix":{"equals-ignore-case":".PNG"}}]}`, `{"f":"PHOTO.Png"}`,
			"suffix ignoring case", docEBOps),
		no("suffix-ignore-case/no-match", `{"f":[{"suffix":{"equals-ignore-case":".PNG"}}]}`, `{"f":"photo.jpg"}`,
			"different suffix", docEBOps),

		// --- equals-ignore-case --------------------------------------------------------------
		yes("equals-ignore-case/upper", `{"n":[{"equals-ignore-case":"alice"}]}`, `{"n":"ALICE"}`, "equality ignoring case", docLambda),
		yes("equals-ignore-case/mixed", `{"n":[{"equals-ignore-case":"alice"}]}`, `{"n":"aLiCe"}`, "equality ignoring case", docLambda),
		no("equals-ignore-case/different", `{"n":[{"equals-ignore-case":"alice"}]}`, `{"n":"alicia"}`, "different letters", docLambda),
		no("equals-ignore-case/prefix-only", `{"n":[{"equals-ignore-case":"alice"}]}`, `{"n":"alic"}`, "whole-string comparison", docLambda),
		yes("equals-ignore-case/unicode", `{"n":[{"equals-ignore-case":"ÉCOLE"}]}`, `{"n":"école"}`,
			"event-ruler folds Unicode case (spec marks this low; included as the brief requires, following the engine)", "§2.9"),
		no("equals-ignore-case/on-number", `{"n":[{"equals-ignore-case":"5"}]}`, `{"n":5}`, "strings only", "§2.3"),
		no("equals-ignore-case/on-bool", `{"n":[{"equals-ignore-case":"true"}]}`, `{"n":true}`, "strings only", "§2.3"),
		no("equals-ignore-case/on-null", `{"n":[{"equals-ignore-case":"null"}]}`, `{"n":null}`, "strings only", "§2.3"),
	}
}

// anythingButCases are the match cases of anything-but and exists.
func anythingButCases() []matchCase {
	return []matchCase{
		// --- anything-but --------------------------------------------------------------------
		yes("anything-but/string-other", `{"s":[{"anything-but":"x"}]}`, `{"s":"y"}`, "a value not excluded", docLambda),
		no("anything-but/string-same", `{"s":[{"anything-but":"x"}]}`, `{"s":"x"}`, "the excluded value", docLambda),
		yes("anything-but/string-case", `{"s":[{"anything-but":"x"}]}`, `{"s":"X"}`, "anything-but is case-sensitive", "§3"),
		yes("anything-but/string-vs-number", `{"s":[{"anything-but":"100"}]}`, `{"s":100}`,
			"type-sensitive: anything-but \"100\" matches the number 100", "§3"),
		yes("anything-but/string-vs-bool", `{"s":[{"anything-but":"x"}]}`, `{"s":true}`,
			"a boolean leaf is a value not in the excluded set", "§3"),
		yes("anything-but/number-other", `{"n":[{"anything-but":100}]}`, `{"n":101}`, "single number form", "§1"),
		no("anything-but/number-same", `{"n":[{"anything-but":100}]}`, `{"n":100}`, "single number form excludes 100", "§1"),
		no("anything-but/number-100.0", `{"n":[{"anything-but":100}]}`, `{"n":100.0}`,
			"anything-but compares numbers numerically: 100 excludes 100.0", "§2.4"),
		yes("anything-but/string-list-other", `{"s":[{"anything-but":["a","b"]}]}`, `{"s":"c"}`, "string list form", docLambda),
		no("anything-but/string-list-in", `{"s":[{"anything-but":["a","b"]}]}`, `{"s":"b"}`, "string list form excludes b", docLambda),
		yes("anything-but/number-list-other", `{"n":[{"anything-but":[1,2]}]}`, `{"n":3}`, "number list form", "§1"),
		no("anything-but/number-list-in", `{"n":[{"anything-but":[1,2]}]}`, `{"n":2}`, "number list form excludes 2", "§1"),
		no("anything-but/number-list-2.0", `{"n":[{"anything-but":[1,2]}]}`, `{"n":2.0}`, "numeric comparison: 2.0 is excluded", "§2.4"),
		yes("anything-but/number-list-vs-string", `{"n":[{"anything-but":[100]}]}`, `{"n":"100"}`,
			"type-sensitive: anything-but [100] matches the string \"100\"", "§3"),
		yes("anything-but/array-one-not-excluded", `{"s":[{"anything-but":"x"}]}`, `{"s":["x","y"]}`,
			"matches if at least one leaf value is not excluded", "§3"),
		no("anything-but/array-all-excluded", `{"s":[{"anything-but":["x","y"]}]}`, `{"s":["x","y"]}`,
			"every leaf value is excluded", "§3"),
		no("anything-but/array-single-excluded", `{"s":[{"anything-but":"x"}]}`, `{"s":["x"]}`,
			"the only leaf value is excluded", "§3"),
		yes("anything-but/with-exists-false-missing", `{"s":[{"anything-but":["roses"]},{"exists":false}]}`, `{}`,
			"exists may share a value list with other matchers (AWS-validated)", "§2.7"),
		no("anything-but/with-exists-false-excluded", `{"s":[{"anything-but":["roses"]},{"exists":false}]}`, `{"s":"roses"}`,
			"present and excluded: neither alternative matches", "§2.7"),
		yes("anything-but/with-exists-false-other", `{"s":[{"anything-but":["roses"]},{"exists":false}]}`, `{"s":"tulips"}`,
			"present and not excluded", "§2.7"),

		// --- exists --------------------------------------------------------------------------
		yes("exists/true-string", `{"v":[{"exists":true}]}`, `{"v":"x"}`, "a string leaf exists", docLambda),
		yes("exists/true-zero", `{"v":[{"exists":true}]}`, `{"v":0}`, "the number 0 is a leaf", "§2.7"),
		yes("exists/true-false", `{"v":[{"exists":true}]}`, `{"v":false}`, "false is a leaf", "§2.7"),
		yes("exists/true-array", `{"v":[{"exists":true}]}`, `{"v":[1]}`, "a non-empty array has leaves", "§2.2"),
		yes("exists/true-array-null", `{"v":[{"exists":true}]}`, `{"v":[null]}`, "an array holding null has a leaf", "§2.2"),
		no("exists/true-intermediate-object", `{"person":{"address":[{"exists":true}]}}`, `{"person":{"address":{"street":"Main"}}}`,
			"exists:true on an object path is false (Lambda doc person.address example)", "§2.7"),
		yes("exists/true-nested-leaf", `{"person":{"address":{"street":[{"exists":true}]}}}`, `{"person":{"address":{"street":"Main"}}}`,
			"exists:true on the leaf under the object", "§2.7"),
		no("exists/dynamodb-object-form", `{"presentKey":[{"exists":true}]}`, `{"presentKey":{"S":"v"}}`,
			"DynamoDB attribute object is not a leaf (LocalStack, real Lambda)", "§2.7"),
		yes("exists/dynamodb-leaf-form", `{"presentKey":{"S":[{"exists":true}]}}`, `{"presentKey":{"S":"v"}}`,
			"the typed leaf under the attribute exists (LocalStack, real Lambda)", "§2.7"),
		yes("exists/false-missing-parent", `{"a":{"b":[{"exists":false}]}}`, `{"c":1}`,
			"exists:false holds when the parent is missing (AWS-validated)", "§2.7"),
		no("exists/false-present", `{"a":{"b":[{"exists":false}]}}`, `{"a":{"b":1}}`,
			"the leaf is present", "§2.7"),
		no("exists/false-array-of-objects-any-has", `{"a":{"b":[{"exists":false}]}}`, `{"a":[{"b":1},{"c":2}]}`,
			"with arrays of objects exists:false fails if any element has the leaf", "§2.7"),
		yes("exists/false-array-of-objects-none-has", `{"a":{"b":[{"exists":false}]}}`, `{"a":[{"c":1},{"c":2}]}`,
			"no element has the leaf", "§2.7"),
		yes("exists/false-under-empty-array", `{"a":{"b":[{"exists":false}]}}`, `{"a":[]}`,
			"an empty array has no leaves", "§2.7"),
		yes("exists/true-array-of-objects-one-has", `{"a":{"b":[{"exists":true}]}}`, `{"a":[{"c":1},{"b":2}]}`,
			"one element has the leaf", "§2.2"),
	}
}

// numericCases are the match cases of numeric.
func numericCases() []matchCase {
	return []matchCase{
		// --- numeric -------------------------------------------------------------------------
		yes("numeric/eq", `{"n":[{"numeric":["=",100]}]}`, `{"n":100}`, "numeric equals", docLambda),
		yes("numeric/eq-100.0", `{"n":[{"numeric":["=",100]}]}`, `{"n":100.0}`, "numeric equality: 100.0 = 100", "§2.4"),
		yes("numeric/eq-exponent-event", `{"n":[{"numeric":["=",300]}]}`, `{"n":3.0e2}`, "numeric equality: 3.0e2 = 300", "§2.4"),
		yes("numeric/eq-exponent-pattern", `{"n":[{"numeric":["=",3.018e2]}]}`, `{"n":301.8}`, "numeric equality: 3.018e2 = 301.8", "§2.4"),
		no("numeric/eq-other", `{"n":[{"numeric":["=",100]}]}`, `{"n":101}`, "not equal", docLambda),
		yes("numeric/eq-neg-zero-event", `{"n":[{"numeric":["=",0]}]}`, `{"n":-0}`, "-0 equals 0", "§2.5"),
		yes("numeric/eq-neg-zero-pattern", `{"n":[{"numeric":["=",-0]}]}`, `{"n":0}`, "-0 equals 0", "§2.5"),
		yes("numeric/ge-neg-zero", `{"n":[{"numeric":[">=",0]}]}`, `{"n":-0.0}`, "-0 equals 0, so -0 >= 0", "§2.5"),
		no("numeric/gt-neg-zero", `{"n":[{"numeric":[">",0]}]}`, `{"n":-0}`, "-0 equals 0, so -0 > 0 is false", "§2.5"),
		no("numeric/lt-neg-zero", `{"n":[{"numeric":["<",0]}]}`, `{"n":-0}`, "-0 equals 0, so -0 < 0 is false", "§2.5"),
		no("numeric/gt-boundary", `{"n":[{"numeric":[">",10]}]}`, `{"n":10}`, "> excludes the bound", docLambda),
		yes("numeric/gt-decimal", `{"n":[{"numeric":[">",10]}]}`, `{"n":10.5}`, "greater than", docLambda),
		yes("numeric/ge-boundary", `{"n":[{"numeric":[">=",10]}]}`, `{"n":10}`, ">= includes the bound", docLambda),
		no("numeric/ge-below", `{"n":[{"numeric":[">=",10]}]}`, `{"n":9.99}`, "below the bound", docLambda),
		no("numeric/lt-boundary", `{"n":[{"numeric":["<",10]}]}`, `{"n":10}`, "< excludes the bound", docLambda),
		yes("numeric/lt-below", `{"n":[{"numeric":["<",10]}]}`, `{"n":9}`, "less than", docLambda),
		yes("numeric/lt-negative", `{"n":[{"numeric":["<",10]}]}`, `{"n":-100}`, "negative numbers are less", docLambda),
		yes("numeric/le-boundary", `{"n":[{"numeric":["<=",10]}]}`, `{"n":10}`, "<= includes the bound", docLambda),
		no("numeric/le-above", `{"n":[{"numeric":["<=",10]}]}`, `{"n":10.0001}`, "above the bound", docLambda),
		no("numeric/range-open-bottom", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":0}`, "> 0 excludes 0", docLambda),
		yes("numeric/range-closed-top", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":5}`, "<= 5 includes 5", docLambda),
		yes("numeric/range-inside", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":2.5}`, "inside the range", docLambda),
		no("numeric/range-above", `{"n":[{"numeric":[">",0,"<=",5]}]}`, `{"n":5.5}`, "above the range", docLambda),
		yes("numeric/range-closed-bottom", `{"n":[{"numeric":[">=",0,"<",5]}]}`, `{"n":0}`, ">= 0 includes 0", "§2.5"),
		no("numeric/range-open-top", `{"n":[{"numeric":[">=",0,"<",5]}]}`, `{"n":5}`, "< 5 excludes 5", "§2.5"),
		yes("numeric/range-negative", `{"n":[{"numeric":[">=",-10,"<",-5]}]}`, `{"n":-7}`, "negative range", "§2.5"),
		no("numeric/range-negative-top", `{"n":[{"numeric":[">=",-10,"<",-5]}]}`, `{"n":-5}`, "negative range top excluded", "§2.5"),
		yes("numeric/range-decimals", `{"n":[{"numeric":[">",0.1,"<",0.2]}]}`, `{"n":0.15}`, "decimal bounds", "§2.5"),
		yes("numeric/eq-decimal", `{"n":[{"numeric":["=",0.5]}]}`, `{"n":0.50}`, "decimal equality", "§2.4"),
		no("numeric/on-numeric-string", `{"n":[{"numeric":[">",0]}]}`, `{"n":"5"}`,
			"numeric matches JSON numbers only (AWS-validated numeric-string_NEG)", "§2.3"),
		no("numeric/on-dynamodb-N-string", `{"n":{"N":[{"numeric":[">",0]}]}}`, `{"n":{"N":"42"}}`,
			"DynamoDB N values are strings, so numeric never matches them (LocalStack, real Lambda)", "§2.3"),
		no("numeric/on-bool", `{"n":[{"numeric":[">",0]}]}`, `{"n":true}`, "numeric fails on booleans", "§2.3"),
		yes("numeric/array-any", `{"n":[{"numeric":[">",10]}]}`, `{"n":[1,20]}`, "any array element may match", "§2.2"),
		no("numeric/array-none", `{"n":[{"numeric":[">",10]}]}`, `{"n":[1,2]}`, "no array element matches", "§2.2"),
		yes("numeric/with-string-in-list", `{"n":[{"numeric":[">",10]},"low"]}`, `{"n":"low"}`, "numeric ORed with an exact string", "§2.1"),
		yes("numeric/float64-precision", `{"n":[{"numeric":[">",1.0000001]}]}`, `{"n":1.0000002}`,
			"default: full binary64 precision (recommendation: default to float64)", "§2.5"),
		yes("numeric/above-5e9-default", `{"n":[{"numeric":[">",5e9]}]}`, `{"n":6000000000}`,
			"default float64 range: 6e9 > 5e9", "§2.5"),
		yes("numeric/1e10-default", `{"n":[{"numeric":[">=",1e10]}]}`, `{"n":1e10}`, "default float64 range", "§2.5"),
		yes("numeric/eq-large-default", `{"n":[{"numeric":["=",12345678901]}]}`, `{"n":12345678901}`, "default float64 range", "§2.5"),
		yes("numeric/below-minus-5e9-default", `{"n":[{"numeric":["<",-5e9]}]}`, `{"n":-6e9}`, "default float64 range", "§2.5"),
		yes("numeric/huge-default", `{"n":[{"numeric":[">",1e300]}]}`, `{"n":1e301}`, "default float64 range", "§2.5"),
		no("numeric/above-5e9-legacy", `{"n":[{"numeric":[">",0]}]}`, `{"n":6000000000}`,
			"legacy engine: event values outside -5e9..5e9 cannot be compared, so numeric fails", "§2.5").leg(),
		yes("numeric/5e9-legacy-inclusive", `{"n":[{"numeric":[">",0]}]}`, `{"n":5000000000}`,
			"legacy engine range is -5e9..5e9 inclusive", "§2.5").leg(),
		yes("numeric/in-range-legacy", `{"n":[{"numeric":[">",10,"<",20]}]}`, `{"n":15}`,
			"ordinary ranges behave the same under the legacy engine", "§2.5").leg(),
		yes("numeric/six-decimals-legacy", `{"n":[{"numeric":["=",1]}]}`, `{"n":1.0000001}`,
			"legacy engine: only six decimal places count (values scaled x1e6 and truncated; follows the notes' recommendation for the legacy option)", "§2.5").leg(),
		no("numeric/seven-decimals-default", `{"n":[{"numeric":["=",1]}]}`, `{"n":1.0000001}`,
			"default engine: full precision, 1.0000001 != 1", "§2.5"),
		yes("number/large-literal-legacy-textual", `{"n":[6000000000]}`, `{"n":6000000000}`,
			"legacy engine: an out-of-range literal keeps its textual matcher (the numeric one is skipped, 'survivable')", "§2.4").leg(),
	}
}

// arrayCases are the match cases of arrays in events, EventBridge operators beyond Lambda's, and limits.
func arrayCases() []matchCase {
	return []matchCase{
		// --- arrays in events ----------------------------------------------------------------
		yes("array/any-element", `{"a":["x"]}`, `{"a":["y","x"]}`, "a leaf matches if any element matches", docEBArrays),
		no("array/no-element", `{"a":["z"]}`, `{"a":["y","x"]}`, "no element matches", docEBArrays),
		yes("array/pattern-list-intersection", `{"a":["p","x"]}`, `{"a":["y","x"]}`, "non-empty intersection", "§2.2"),
		yes("array/nested-flattened", `{"a":[3]}`, `{"a":[[1,2],[3]]}`, "nested arrays are flattened", "§2.2"),
		yes("array/deeply-nested-flattened", `{"a":["x"]}`, `{"a":[[["x"]]]}`, "nested arrays are flattened", "§2.2"),
		yes("array/mixed-types", `{"a":[5]}`, `{"a":["5",5]}`, "the number element matches", "§2.2"),
		no("array/string-elements-only", `{"a":[5]}`, `{"a":["5"]}`, "type strictness per element", "§2.3"),
		yes("array/null-element", `{"a":[null]}`, `{"a":["x",null]}`, "a null element is a leaf value", "§2.2"),
		yes("array/objects-crushed", `{"a":{"b":[2]}}`, `{"a":[{"b":1},{"b":2}]}`,
			"arrays of objects are crushed: {\"a\":[{\"b\":..}]} has leaf path a.b", "§2.2"),
		no("array/objects-none", `{"a":{"b":[3]}}`, `{"a":[{"b":1},{"b":2}]}`, "no element has b=3", "§2.2"),
		no("array/consistency-doc-example", `{"employees":{"firstName":["Anna"],"lastName":["Jones"]}}`,
			`{"employees":[{"firstName":"Anna","lastName":"Smith"},{"firstName":"Peter","lastName":"Jones"}]}`,
			"array consistency: two fields under one array of objects must match in the same element", "§2.2"),
		yes("array/consistency-same-element-first", `{"employees":{"firstName":["Anna"],"lastName":["Smith"]}}`,
			`{"employees":[{"firstName":"Anna","lastName":"Smith"},{"firstName":"Peter","lastName":"Jones"}]}`,
			"both fields match in element 0", "§2.2"),
		yes("array/consistency-same-element-second", `{"employees":{"firstName":["Peter"],"lastName":["Jones"]}}`,
			`{"employees":[{"firstName":"Anna","lastName":"Smith"},{"firstName":"Peter","lastName":"Jones"}]}`,
			"both fields match in element 1", "§2.2"),
		yes("array/consistency-different-arrays", `{"a":{"x":[1]},"b":{"y":[2]}}`, `{"a":[{"x":1}],"b":[{"y":2}]}`,
			"fields under different arrays are independent", "§2.2"),
		no("array/consistency-nested-mismatch", `{"a":{"b":{"c":[1],"d":[4]}}}`, `{"a":[{"b":[{"c":1,"d":2}]},{"b":[{"c":3,"d":4}]}]}`,
			"c=1 and d=4 are in different elements of nested arrays", "§2.2"),
		yes("array/consistency-nested-match", `{"a":{"b":{"c":[3],"d":[4]}}}`, `{"a":[{"b":[{"c":1,"d":2}]},{"b":[{"c":3,"d":4}]}]}`,
			"c=3 and d=4 are in the same element", "§2.2"),
		yes("array/consistency-top-field-and-array", `{"id":["1"],"items":{"sku":["x"]}}`, `{"id":"1","items":[{"sku":"y"},{"sku":"x"}]}`,
			"a field outside the array combines with any element", "§2.2"),
		no("array/empty-exact", `{"a":["x"]}`, `{"a":[]}`, "an empty event array has no leaf values", "§2.2"),

		// --- wildcard, cidr, anything-but sub-forms (EventBridge superset) -------------------
		yes("wildcard/match", `{"f":[{"wildcard":"dir/*.png"}]}`, `{"f":"dir/a.png"}`, "wildcard (EventBridge only)", docEBOps).eb(),
		no("wildcard/no-match", `{"f":[{"wildcard":"dir/*.png"}]}`, `{"f":"dir/a.jpg"}`, "wildcard (EventBridge only)", docEBOps).eb(),
		yes("wildcard/star-spans-slash", `{"f":[{"wildcard":"dir/*.png"}]}`, `{"f":"dir/x/y.png"}`, "* matches any characters", docEBOps).eb(),
		yes("wildcard/escaped-star", `{"f":[{"wildcard":"a\\*b"}]}`, `{"f":"a*b"}`, "\\* is a literal star", "§1").eb(),
		no("wildcard/escaped-star-literal-only", `{"f":[{"wildcard":"a\\*b"}]}`, `{"f":"axb"}`, "\\* is not a wildcard", "§1").eb(),
		no("wildcard/on-number", `{"f":[{"wildcard":"1*"}]}`, `{"f":12}`, "wildcard matches strings only", "§2.3").eb(),
		yes("cidr/v4-in", `{"ip":[{"cidr":"10.0.0.0/24"}]}`, `{"ip":"10.0.0.17"}`, "IPv4 CIDR", docEBOps).eb(),
		yes("cidr/v4-top", `{"ip":[{"cidr":"10.0.0.0/24"}]}`, `{"ip":"10.0.0.255"}`, "IPv4 CIDR upper bound", docEBOps).eb(),
		no("cidr/v4-out", `{"ip":[{"cidr":"10.0.0.0/24"}]}`, `{"ip":"10.0.1.1"}`, "outside the block", docEBOps).eb(),
		no("cidr/on-number", `{"ip":[{"cidr":"10.0.0.0/24"}]}`, `{"ip":10}`, "cidr matches strings only", "§2.3").eb(),
		yes("cidr/v6-in", `{"ip":[{"cidr":"2001:db8::/32"}]}`, `{"ip":"2001:db8::1"}`, "IPv6 CIDR", docEBOps).eb(),
		no("cidr/v6-out", `{"ip":[{"cidr":"2001:db8::/32"}]}`, `{"ip":"2001:db9::1"}`, "IPv6 outside the block", docEBOps).eb(),
		no("anything-but-prefix/excluded", `{"s":[{"anything-but":{"prefix":"init"}}]}`, `{"s":"initial"}`, "anything-but prefix", docEBOps).eb(),
		yes("anything-but-prefix/other", `{"s":[{"anything-but":{"prefix":"init"}}]}`, `{"s":"final"}`, "anything-but prefix", docEBOps).eb(),
		no("anything-but-suffix/excluded", `{"s":[{"anything-but":{"suffix":".png"}}]}`, `{"s":"a.png"}`, "anything-but suffix", docEBOps).eb(),
		yes("anything-but-suffix/other", `{"s":[{"anything-but":{"suffix":".png"}}]}`, `{"s":"a.jpg"}`, "anything-but suffix", docEBOps).eb(),
		no("anything-but-ignore-case/excluded", `{"s":[{"anything-but":{"equals-ignore-case":"X"}}]}`, `{"s":"x"}`, "anything-but ignore-case", docEBOps).eb(),
		yes("anything-but-ignore-case/other", `{"s":[{"anything-but":{"equals-ignore-case":"X"}}]}`, `{"s":"y"}`, "anything-but ignore-case", docEBOps).eb(),
		no("anything-but-ignore-case/list-excluded", `{"s":[{"anything-but":{"equals-ignore-case":["a","b"]}}]}`, `{"s":"B"}`, "anything-but ignore-case list", docEBOps).eb(),
		no("anything-but-wildcard/excluded", `{"s":[{"anything-but":{"wildcard":"*/lib/*"}}]}`, `{"s":"/usr/lib/x"}`, "anything-but wildcard", docEBOps).eb(),
		yes("anything-but-wildcard/other", `{"s":[{"anything-but":{"wildcard":"*/lib/*"}}]}`, `{"s":"/usr/bin/x"}`, "anything-but wildcard", docEBOps).eb(),

		// --- limits --------------------------------------------------------------------------
		yes("limit/pattern-4096-characters", patternOfLength(limits.MaxFilterPatternLength), docOfPatternLength(limits.MaxFilterPatternLength),
			"a pattern of exactly 4096 characters is allowed", docAPIFilter),
	}
}

// ---------------------------------------------------------------------------------------------
// Invalid patterns

func invalidCases() []invalidCase {
	return append(invalidShapeCases(), invalidOperatorCases()...)
}

// invalidShapeCases are the invalid patterns of a wrong shape, values and operators; invalidOperatorCases
// those of numeric, anything-but and the operators Lambda does not take, and limits.
func invalidShapeCases() []invalidCase {
	return []invalidCase{
		// not an object / malformed
		bad("not-object/null", `null`, "pattern null (AWS-validated Invalid filter pattern definition)", "§7").at(""),
		bad("not-object/string", `"simple string"`, "a JSON string (AWS-validated)", "§7").at(""),
		bad("not-object/array", `[{"a":["x"]}]`, "Filter is not an object", "§7").at(""),
		bad("not-object/number", `5`, "Filter is not an object", "§7").at(""),
		bad("not-object/bool", `true`, "Filter is not an object", "§7").at(""),
		bad("malformed/empty-text", ``, "no JSON at all", "§7"),
		bad("malformed/unclosed", `{"a":["x"]`, "malformed JSON", "§7"),
		bad("malformed/unquoted-key", `{a:["x"]}`, "malformed JSON", "§7"),
		bad("malformed/trailing-comma", `{"a":["x"],}`, "malformed JSON", "§7"),
		bad("malformed/single-quotes", `{'a':['x']}`, "malformed JSON", "§7"),
		bad("malformed/plain-text", `simple string`, "not JSON (AWS-validated 'simple string')", "§7"),

		// leaf not an array
		bad("leaf/string", `{"eventSource":"aws:sqs"}`, "a leaf must be an array (AWS-validated)", "§7").at("eventSource"),
		bad("leaf/number", `{"a":5}`, "\"a\" must be an object or an array", "§7").at("a"),
		bad("leaf/null", `{"a":null}`, "\"a\" must be an object or an array", "§7").at("a"),
		bad("leaf/bool", `{"a":true}`, "\"a\" must be an object or an array", "§7").at("a"),
		bad("leaf/nested-string", `{"a":{"b":"x"}}`, "leaf a.b must be an array", "§7").at("a.b"),

		// empty array / object
		bad("empty/array", `{"eventSource":[]}`, "empty arrays are not allowed (AWS-validated)", "§7").at("eventSource"),
		bad("empty/array-nested", `{"a":{"b":[]}}`, "empty arrays are not allowed", "§7").at("a.b"),
		bad("empty/object-root", `{}`, "empty objects are not allowed", "§7").at(""),
		bad("empty/object-nested", `{"a":{}}`, "empty objects are not allowed", "§7").at("a"),

		// match values
		bad("value/nested-array", `{"a":[["x"]]}`, "match value must be string, number, bool, null or object", "§7").at("a"),
		bad("value/nested-array-after-value", `{"a":["x",["y"]]}`, "match value must be string, number, bool, null or object", "§7").at("a"),
		bad("match-object/no-key", `{"a":[{}]}`, "a match object needs exactly one key", "§7").at("a"),
		bad("match-object/two-keys", `{"a":[{"prefix":"x","suffix":"y"}]}`, "Only one key allowed in match expression", "§7").at("a"),
		bad("match-object/exists-plus-prefix", `{"a":[{"exists":true,"prefix":"x"}]}`, "Only one key allowed in match expression", "§7").at("a"),

		// unknown operators
		bad("operator/unknown", `{"a":[{"foo":"x"}]}`, "Unrecognized match type", "§7").at("a"),
		bad("operator/EXISTS-upper-case", `{"a":[{"EXISTS":true}]}`, "operator names are case-sensitive (Unrecognized match type EXISTS)", "§7").at("a"),
		bad("operator/Prefix-capitalized", `{"a":[{"Prefix":"x"}]}`, "operator names are case-sensitive", "§7").at("a"),
		bad("operator/regexp", `{"a":[{"regexp":"x.*"}]}`, "regexp is not an EventBridge/Lambda operator (Quamina-only)", "§1").at("a"),
		bad("operator/regexp-eventbridge", `{"a":[{"regexp":"x.*"}]}`, "regexp is not supported on an EventBridge bus either", "§1").eb().at("a"),

		// prefix / suffix
		bad("prefix/number", `{"a":[{"prefix":5}]}`, "prefix match pattern must be a string", "§7").at("a"),
		bad("prefix/null", `{"a":[{"prefix":null}]}`, "prefix match pattern must be a string", "§7").at("a"),
		bad("prefix/list", `{"a":[{"prefix":["a"]}]}`, "prefix match pattern must be a string", "§7").at("a"),
		bad("prefix/object-not-ignore-case", `{"a":[{"prefix":{"foo":"x"}}]}`, "prefix given a non-equals-ignore-case object", "§7").at("a"),
		bad("prefix/ignore-case-number", `{"a":[{"prefix":{"equals-ignore-case":5}}]}`, "equals-ignore-case must be a string", "§7").at("a"),
		bad("suffix/number", `{"a":[{"suffix":5}]}`, "suffix match pattern must be a string", "§7").at("a"),
		bad("suffix/bool", `{"a":[{"suffix":true}]}`, "suffix match pattern must be a string", "§7").at("a"),
		bad("suffix/object-not-ignore-case", `{"a":[{"suffix":{"prefix":"x"}}]}`, "suffix given a non-equals-ignore-case object", "§7").at("a"),

		// equals-ignore-case
		bad("equals-ignore-case/list", `{"a":[{"equals-ignore-case":["a","b"]}]}`, "equals-ignore-case takes a single string, no list", "§7").at("a"),
		bad("equals-ignore-case/number", `{"a":[{"equals-ignore-case":5}]}`, "equals-ignore-case takes a string", "§7").at("a"),
		bad("equals-ignore-case/null", `{"a":[{"equals-ignore-case":null}]}`, "equals-ignore-case takes a string", "§7").at("a"),

		// exists
		bad("exists/string-true", `{"a":[{"exists":"true"}]}`, "exists must be true or false", "§7").at("a"),
		bad("exists/number", `{"a":[{"exists":1}]}`, "exists must be true or false", "§7").at("a"),
		bad("exists/null", `{"a":[{"exists":null}]}`, "exists must be true or false", "§7").at("a"),
	}
}

func invalidOperatorCases() []invalidCase {
	return []invalidCase{
		// numeric
		bad("numeric/not-array", `{"a":[{"numeric":5}]}`, "Value of numeric must be an array", "§7").at("a"),
		bad("numeric/string-operand", `{"a":[{"numeric":["=","5"]}]}`, "operand must be a number", "§7").at("a"),
		bad("numeric/bool-operand", `{"a":[{"numeric":[">",true]}]}`, "operand must be a number", "§7").at("a"),
		bad("numeric/bad-operator", `{"a":[{"numeric":["==",5]}]}`, "unrecognized numeric operator", "§7").at("a"),
		bad("numeric/empty", `{"a":[{"numeric":[]}]}`, "bad count", "§7").at("a"),
		bad("numeric/missing-operand", `{"a":[{"numeric":[">"]}]}`, "bad count", "§7").at("a"),
		bad("numeric/operand-first", `{"a":[{"numeric":[5,">"]}]}`, "operator must come first", "§7").at("a"),
		bad("numeric/too-many-terms", `{"a":[{"numeric":[">",1,"<",5,"<",9]}]}`, "too many terms", "§7").at("a"),
		bad("numeric/upper-then-lower", `{"a":[{"numeric":["<",10,">",5]}]}`, "lower operator must come first", "§2.5").at("a"),
		bad("numeric/two-lower-operators", `{"a":[{"numeric":[">",5,">",10]}]}`, "second operator must be < or <=", "§2.5").at("a"),
		bad("numeric/eq-with-range", `{"a":[{"numeric":["=",5,"<",10]}]}`, "= takes a single operand", "§2.5").at("a"),
		bad("numeric/bottom-above-top", `{"a":[{"numeric":[">",10,"<",5]}]}`, "bottom must be less than top", "§2.5").at("a"),
		bad("numeric/bottom-equals-top", `{"a":[{"numeric":[">=",5,"<=",5]}]}`, "bottom must be strictly less than top, so [>=,5,<=,5] is invalid", "§2.5").at("a"),
		bad("numeric/legacy-operand-5e9", `{"a":[{"numeric":[">",5e9]}]}`, "legacy engine: [>, 5e9] is invalid (Bottom must be less than top)", "§2.5").leg().at("a"),
		bad("numeric/legacy-operand-below-range", `{"a":[{"numeric":["<",-6e9]}]}`, "legacy engine: operands outside -5e9..5e9 are invalid", "§2.5").leg().at("a"),
		bad("numeric/legacy-operand-1e10", `{"a":[{"numeric":[">=",1e10]}]}`, "legacy engine: operands outside -5e9..5e9 are invalid", "§2.5").leg().at("a"),

		// anything-but
		bad("anything-but/null", `{"a":[{"anything-but":null}]}`, "anything-but cannot take null", "§3").at("a"),
		bad("anything-but/bool", `{"a":[{"anything-but":true}]}`, "anything-but cannot take a boolean", "§3").at("a"),
		bad("anything-but/empty-list", `{"a":[{"anything-but":[]}]}`, "anything-but list must be non-empty", "§3").at("a"),
		bad("anything-but/mixed-list", `{"a":[{"anything-but":["a",1]}]}`, "anything-but list must be all strings or all numbers", "§3").at("a"),
		bad("anything-but/null-in-list", `{"a":[{"anything-but":["a",null]}]}`, "null not allowed in anything-but list", "§3").at("a"),
		bad("anything-but/bool-list", `{"a":[{"anything-but":[true]}]}`, "booleans not allowed in anything-but list", "§3").at("a"),
		bad("anything-but/unknown-sub-operator", `{"a":[{"anything-but":{"foo":"x"}}]}`, "Unsupported anything-but pattern", "§7").eb().at("a"),
		bad("anything-but/prefix-empty", `{"a":[{"anything-but":{"prefix":""}}]}`, "anything-but with an empty prefix", "§7").eb().at("a"),
		bad("anything-but/suffix-empty", `{"a":[{"anything-but":{"suffix":""}}]}`, "anything-but with an empty suffix", "§7").eb().at("a"),

		// strict Lambda operator set
		bad("strict/wildcard", `{"a":[{"wildcard":"*.png"}]}`, "wildcard has Pipe support No; rejected without WithEventBridge", "§1").at("a"),
		bad("strict/cidr", `{"a":[{"cidr":"10.0.0.0/24"}]}`, "cidr is treated as EventBridge superset; rejected without WithEventBridge", "§1").at("a"),
		bad("strict/anything-but-prefix", `{"a":[{"anything-but":{"prefix":"init"}}]}`, "anything-but prefix has Pipe support No", "§1").at("a"),
		bad("strict/anything-but-suffix", `{"a":[{"anything-but":{"suffix":".png"}}]}`, "anything-but suffix has Pipe support No", "§1").at("a"),
		bad("strict/anything-but-ignore-case", `{"a":[{"anything-but":{"equals-ignore-case":"x"}}]}`, "anything-but equals-ignore-case has Pipe support No", "§1").at("a"),
		bad("strict/anything-but-wildcard", `{"a":[{"anything-but":{"wildcard":"*/lib/*"}}]}`, "anything-but wildcard has Pipe support No", "§1").at("a"),

		// cidr (EventBridge)
		bad("cidr/no-slash", `{"a":[{"cidr":"10.0.0.0"}]}`, "Malformed CIDR, one '/' required", "§7").eb().at("a"),
		bad("cidr/mask-not-integer", `{"a":[{"cidr":"10.0.0.0/abc"}]}`, "Malformed CIDR, mask bits must be an integer", "§7").eb().at("a"),
		bad("cidr/v4-mask-33", `{"a":[{"cidr":"10.0.0.0/33"}]}`, "IPv4 mask bits out of range", "§7").eb().at("a"),
		bad("cidr/v4-mask-32", `{"a":[{"cidr":"10.0.0.1/32"}]}`, "quirk: IPv4 /32 is rejected (mask bits must be < 32)", "§7").eb().at("a"),
		bad("cidr/not-an-ip", `{"a":[{"cidr":"not-an-ip/8"}]}`, "malformed CIDR address", "§7").eb().at("a"),
		bad("cidr/not-string", `{"a":[{"cidr":10}]}`, "cidr must be a string", "§7").eb().at("a"),
		bad("cidr/v6-mask-129", `{"a":[{"cidr":"2001:db8::/129"}]}`, "malformed CIDR: IPv6 mask bits out of range", "§7").eb().at("a"),

		// wildcard (EventBridge)
		bad("wildcard/double-star", `{"a":[{"wildcard":"a**b"}]}`, "wildcard with ** (consecutive wildcard characters)", "§7").eb().at("a"),
		bad("wildcard/bad-escape", `{"a":[{"wildcard":"a\\b"}]}`, "wildcard with an invalid escape (only \\* and \\\\)", "§7").eb().at("a"),
		bad("wildcard/not-string", `{"a":[{"wildcard":5}]}`, "wildcard match pattern must be a string", "§7").eb().at("a"),

		// $or (paths inside $or are not asserted)
		bad("or/one-branch", `{"$or":[{"a":["1"]}]}`, "$or needs at least 2 objects", "§2.8"),
		bad("or/empty", `{"$or":[]}`, "$or needs at least 2 objects", "§2.8"),
		bad("or/non-object-element", `{"$or":[{"a":["1"]},"x"]}`, "only JSON objects are allowed in $or", "§7"),
		bad("or/array-element", `{"$or":[{"a":["1"]},["x"]]}`, "only JSON objects are allowed in $or", "§7"),
		bad("or/nested-one-branch", `{"$or":[{"a":["1"]},{"$or":[{"b":["2"]}]}]}`, "a nested $or also needs 2 objects", "§2.8"),
		bad("or/branch-key-numeric", `{"$or":[{"numeric":[">",1]},{"b":["x"]}]}`, "operator names cannot be $or branch keys", "§2.8"),
		bad("or/branch-key-prefix", `{"$or":[{"prefix":["x"]},{"b":["y"]}]}`, "operator names cannot be $or branch keys", "§2.8"),
		bad("or/branch-key-exists", `{"$or":[{"exists":[true]},{"b":["y"]}]}`, "operator names cannot be $or branch keys", "§2.8"),
		bad("or/combinations-1100", orCombinations(10, 10, 11), "$or expansion of 10*10*11 = 1100 exceeds 1000 combinations", "§2.8"),
		bad("or/combinations-1024-nested", nestedOr(10), "ten nested two-branch $or clauses expand to 1024 > 1000 combinations", "§2.8"),

		// length
		bad("limit/pattern-4097-characters", patternOfLength(limits.MaxFilterPatternLength+1), "pattern longer than 4096 characters", docAPIFilter).at(""),
	}
}

// ---------------------------------------------------------------------------------------------
// Kafka

func kafkaCases() []kafkaCase {
	docExample, err := base64.StdEncoding.DecodeString("SGVsbG8sIHRoaXMgaXMgYSB0ZXN0Lg==")
	if err != nil {
		panic(err)
	}
	utf16 := []byte{0xff, 0xfe, 'h', 0, 'i', 0} // "hi" in UTF-16LE with BOM: not UTF-8
	const lowMismatch = "format mismatch between pattern and value: the docs say Lambda 'processes metadata filters only' (ambiguous, marked low); following the notes' recommendation the value conditions cannot be satisfied, so no match"
	const valueOnly = "Kafka mappings 'only support filtering on the value key': the filtering record holds only value, so a condition on another record field has nothing to match"
	return []kafkaCase{
		{name: "kafka/json-field", patterns: []string{`{"value":{"status":["ok"]}}`}, value: []byte(`{"status":"ok"}`), want: true,
			reason: "a JSON object value is parsed and filtered by field", source: docKafka},
		{name: "kafka/json-field-other", patterns: []string{`{"value":{"status":["ok"]}}`}, value: []byte(`{"status":"fail"}`), want: false,
			reason: "a different field value", source: docKafka},
		{name: "kafka/json-numeric", patterns: []string{`{"value":{"amount":[{"numeric":[">",100]}]}}`}, value: []byte(`{"amount":150}`), want: true,
			reason: "numbers inside a JSON value are numbers", source: "§4.2"},
		{name: "kafka/json-numeric-string", patterns: []string{`{"value":{"amount":[{"numeric":[">",100]}]}}`}, value: []byte(`{"amount":"150"}`), want: false,
			reason: "numeric fails on a numeric string inside the value", source: "§2.3"},
		{name: "kafka/json-array-consistency", patterns: []string{`{"value":{"items":{"sku":["x"],"qty":[2]}}}`},
			value: []byte(`{"items":[{"sku":"x","qty":1},{"sku":"y","qty":2}]}`), want: false,
			reason: "array consistency applies inside the parsed value", source: "§2.2"},
		{name: "kafka/json-exists-false", patterns: []string{`{"value":{"b":[{"exists":false}]}}`}, value: []byte(`{"a":1}`), want: true,
			reason: "exists:false on a field the JSON value lacks", source: "§2.7"},
		{name: "kafka/json-null-field", patterns: []string{`{"value":{"a":[null]}}`}, value: []byte(`{"a":null}`), want: true,
			reason: "null inside a JSON value", source: "§2.6"},
		{name: "kafka/json-nested", patterns: []string{`{"value":{"order":{"region":[{"prefix":"eu-"}]}}}`}, value: []byte(`{"order":{"region":"eu-west-1","id":7}}`), want: true,
			reason: "nested fields of the parsed value", source: "§4.2"},
		{name: "kafka/json-field-name-case", patterns: []string{`{"value":{"Status":["ok"]}}`}, value: []byte(`{"status":"ok"}`), want: false,
			reason: "field names are case-sensitive", source: "§2.1"},
		{name: "kafka/plain-doc-example", patterns: []string{`{"value":[{"prefix":"Hello"}]}`}, value: docExample, want: true,
			reason: "the doc's base64 value decodes to the plain string 'Hello, this is a test.'", source: docKafka},
		{name: "kafka/plain-doc-example-exact", patterns: []string{`{"value":["Hello, this is a test."]}`}, value: docExample, want: true,
			reason: "plain (non-JSON) value is matched as a string", source: "§4.2"},
		{name: "kafka/plain-anything-but-ok", patterns: []string{`{"value":[{"anything-but":["error"]}]}`}, value: []byte("ok"), want: true,
			reason: "leaf pattern on a plain-text value (the notes' own example)", source: "§4.2"},
		{name: "kafka/plain-anything-but-excluded", patterns: []string{`{"value":[{"anything-but":["error"]}]}`}, value: []byte("error"), want: false,
			reason: "the plain value is the excluded string", source: "§4.2"},
		{name: "kafka/plain-utf8", patterns: []string{`{"value":["héllo wörld"]}`}, value: []byte("héllo wörld"), want: true,
			reason: "value bytes are decoded as UTF-8", source: "§4.2"},
		{name: "kafka/plain-numeric", patterns: []string{`{"value":[{"numeric":[">",0]}]}`}, value: []byte("abc"), want: false,
			reason: "a plain value is a string; numeric fails", source: "§2.3"},
		{name: "kafka/plain-value-object-pattern", patterns: []string{`{"value":{"a":["x"]}}`}, value: []byte("x"), want: false,
			reason: lowMismatch, source: "§4.2"},
		{name: "kafka/json-value-leaf-pattern", patterns: []string{`{"value":[{"prefix":"{"}]}`}, value: []byte(`{"a":"x"}`), want: false,
			reason: lowMismatch + "; a JSON object value is parsed, not matched as text", source: "§4.2"},
		{name: "kafka/json-value-raw-text-pattern", patterns: []string{`{"value":["{\"a\":\"x\"}"]}`}, value: []byte(`{"a":"x"}`), want: false,
			reason: lowMismatch + "; the JSON text itself is not a string leaf", source: "§4.2"},
		{name: "kafka/non-utf8-exists-false", patterns: []string{`{"value":[{"exists":false}]}`}, value: utf16, want: true,
			reason: "non-UTF-8 value (UTF-16): the notes recommend treating value as absent (record {}), under which exists:false matches; low confidence, included as the brief requires", source: "§4.2"},
		{name: "kafka/non-utf8-exists-true", patterns: []string{`{"value":[{"exists":true}]}`}, value: utf16, want: false,
			reason: "non-UTF-8 value is absent, so exists:true fails", source: "§4.2"},
		{name: "kafka/non-utf8-anything-but", patterns: []string{`{"value":[{"anything-but":["x"]}]}`}, value: utf16, want: false,
			reason: "non-UTF-8 value is absent; anything-but does not match a missing field", source: "§4.2"},
		{name: "kafka/non-utf8-invalid-byte", patterns: []string{`{"value":[{"prefix":""}]}`}, value: []byte{'a', 0xc3, 0x28}, want: false,
			reason: "invalid UTF-8 sequence: value absent, so even prefix \"\" fails", source: "§4.2"},
		{name: "kafka/key-pattern", patterns: []string{`{"key":["k1"]}`}, key: []byte("k1"), value: []byte(`{"a":1}`), want: false,
			reason: valueOnly, source: docKafka},
		{name: "kafka/key-exists", patterns: []string{`{"key":[{"exists":true}]}`}, key: []byte("k1"), value: []byte(`{"a":1}`), want: false,
			reason: valueOnly, source: docKafka},
		{name: "kafka/topic-pattern", patterns: []string{`{"topic":["orders"]}`}, value: []byte(`{"a":1}`), want: false,
			reason: valueOnly, source: docKafka},
		{name: "kafka/partition-pattern", patterns: []string{`{"partition":[0]}`}, value: []byte(`{"a":1}`), want: false,
			reason: valueOnly, source: docKafka},
		{name: "kafka/value-and-key", patterns: []string{`{"value":{"a":["x"]},"key":["k1"]}`}, key: []byte("k1"), value: []byte(`{"a":"x"}`), want: false,
			reason: valueOnly + "; the AND with the key condition fails", source: docKafka},
		{name: "kafka/filters-ored-second", patterns: []string{`{"key":["k1"]}`, `{"value":{"a":["x"]}}`}, key: []byte("k1"), value: []byte(`{"a":"x"}`), want: true,
			reason: "filters are ORed: the value filter matches", source: "§2.1"},
		{name: "kafka/filters-ored-none", patterns: []string{`{"value":{"a":["y"]}}`, `{"value":{"b":["x"]}}`}, value: []byte(`{"a":"x"}`), want: false,
			reason: "no filter matches: the record is skipped", source: "§2.1"},
	}
}

func kafkaRecord(c kafkaCase) *kafkaevent.Record {
	topic := c.topic
	if topic == "" {
		topic = "orders"
	}
	var opts []kafkaeventtest.RecordOption
	if c.key != nil {
		opts = append(opts, kafkaeventtest.WithKey(c.key))
	}
	e := kafkaeventtest.NewBuilder().Add(topic, 0, c.value, opts...).Event()
	return &e.Partitions[0].Records[0]
}

// ---------------------------------------------------------------------------------------------
// SQS

func sqsCases() []sqsCase {
	v := "v"
	const bodyOnly = "'Amazon SQS event source mappings only support filtering on the body key', so conditions on other message fields cannot be met"
	return []sqsCase{
		{name: "sqs/json-body-match", patterns: []string{`{"body":{"a":["x"]}}`}, body: `{"a":"x"}`, want: true,
			reason: "JSON body + object pattern: filter", source: "§4.1"},
		{name: "sqs/json-body-no-match", patterns: []string{`{"body":{"a":["x"]}}`}, body: `{"a":"y"}`, want: false,
			reason: "JSON body, field differs", source: "§4.1"},
		{name: "sqs/json-body-numeric", patterns: []string{`{"body":{"price":[{"numeric":[">=",10]}]}}`}, body: `{"price":10}`, want: true,
			reason: "numbers in a JSON body", source: docSQS},
		{name: "sqs/json-body-numeric-string", patterns: []string{`{"body":{"price":[{"numeric":[">=",10]}]}}`}, body: `{"price":"10"}`, want: false,
			reason: "numeric fails on a numeric string", source: "§2.3"},
		{name: "sqs/json-body-exists-false", patterns: []string{`{"body":{"a":[{"exists":false}]}}`}, body: `{"b":1}`, want: true,
			reason: "JSON body + object pattern: exists:false on a missing field", source: "§4.1"},
		{name: "sqs/plain-body-exact", patterns: []string{`{"body":["hello"]}`}, body: "hello", want: true,
			reason: "plain body + leaf pattern: filter as a string", source: "§4.1"},
		{name: "sqs/plain-body-prefix", patterns: []string{`{"body":[{"prefix":"ERROR"}]}`}, body: "ERROR: disk full", want: true,
			reason: "plain body + leaf pattern: filter as a string", source: "§4.1"},
		{name: "sqs/plain-body-empty", patterns: []string{`{"body":[""]}`}, body: "", want: true,
			reason: "an empty body is plain text \"\"; plain + leaf pattern: filter", source: "§4.1"},
		{name: "sqs/invalid-json-body-is-plain", patterns: []string{`{"body":[{"prefix":"{\"a\""}]}`}, body: `{"a":`, want: true,
			reason: "a body that is not valid JSON stays a string", source: "§4.1"},
		{name: "sqs/plain-body-object-pattern", patterns: []string{`{"body":{"a":["x"]}}`}, body: "x", want: false,
			reason: "plain body + object pattern: drop (documented pre-check; LocalStack valid-json-filter)", source: "§4.1"},
		{name: "sqs/plain-body-object-exists-false", patterns: []string{`{"body":{"a":[{"exists":false}]}}`}, body: "hello", want: false,
			reason: "plain body + object pattern: drop, although the engine alone would match", source: "§4.1"},
		{name: "sqs/json-body-leaf-prefix", patterns: []string{`{"body":[{"prefix":"{"}]}`}, body: `{"a":"x"}`, want: false,
			reason: "JSON body + leaf pattern: drop", source: "§4.1"},
		{name: "sqs/json-body-leaf-exists", patterns: []string{`{"body":[{"exists":true}]}`}, body: `{"a":"x"}`, want: false,
			reason: "JSON body + leaf pattern: drop", source: "§4.1"},
		{name: "sqs/json-body-leaf-raw-text", patterns: []string{`{"body":["{\"a\":\"x\"}"]}`}, body: `{"a":"x"}`, want: false,
			reason: "JSON body + leaf pattern: drop, even when the text is equal", source: "§4.1"},
		{name: "sqs/scalar-json-body-is-plain", patterns: []string{`{"body":["123"]}`}, body: "123", want: true,
			reason: "open question in the notes; follows their recommendation: only JSON objects count as a JSON body, so 123 is the plain string \"123\"", source: "§4.1"},
		{name: "sqs/attributes-pattern", patterns: []string{`{"attributes":{"ApproximateReceiveCount":["1"]}}`}, body: `{"a":"x"}`,
			attributes: map[string]string{"ApproximateReceiveCount": "1"}, want: false, reason: bodyOnly, source: docSQS},
		{name: "sqs/message-attributes-pattern", patterns: []string{`{"messageAttributes":{"k":{"stringValue":["v"]}}}`}, body: `{"a":"x"}`,
			messageAttributes: map[string]events.SQSMessageAttribute{"k": {StringValue: &v, DataType: "String"}}, want: false,
			reason: bodyOnly + "; messageAttributes never worked even in the 2023 samples", source: "§4.1"},
		{name: "sqs/message-id-pattern", patterns: []string{`{"messageId":["m1"]}`}, body: `{"a":"x"}`, messageID: "m1", want: false,
			reason: bodyOnly, source: docSQS},
		{name: "sqs/body-and-attributes", patterns: []string{`{"body":{"a":["x"]},"attributes":{"ApproximateReceiveCount":["1"]}}`}, body: `{"a":"x"}`,
			attributes: map[string]string{"ApproximateReceiveCount": "1"}, want: false, reason: bodyOnly + "; the AND fails", source: docSQS},
		{name: "sqs/filters-ored", patterns: []string{`{"attributes":{"ApproximateReceiveCount":["1"]}}`, `{"body":{"a":["x"]}}`}, body: `{"a":"x"}`,
			attributes: map[string]string{"ApproximateReceiveCount": "1"}, want: true, reason: "filters are ORed: the body filter matches", source: "§2.1"},
		{name: "sqs/filters-ored-plain-and-json", patterns: []string{`{"body":{"a":["x"]}}`, `{"body":["x"]}`}, body: "x", want: true,
			reason: "the object filter drops the plain body, the leaf filter matches it; ORed", source: "§4.1"},
	}
}

// ---------------------------------------------------------------------------------------------
// Criteria

func criteriaJSON(patterns ...string) string {
	type f struct {
		Pattern string `json:"Pattern"`
	}
	var fc struct {
		Filters []f `json:"Filters"`
	}
	for _, p := range patterns {
		fc.Filters = append(fc.Filters, f{p})
	}
	b, err := json.Marshal(fc)
	if err != nil {
		panic(err)
	}
	return string(b)
}

func nPatterns(n int) []string {
	ps := make([]string, n)
	for i := range ps {
		ps[i] = fmt.Sprintf(`{"f%d":["v%d"]}`, i, i)
	}
	return ps
}

func criteriaMatchCases() []criteriaMatchCase {
	two := []string{`{"a":["1"]}`, `{"b":["2"]}`}
	return []criteriaMatchCase{
		{name: "criteria/or-first", patterns: two, doc: `{"a":"1"}`, want: true, reason: "filters in one FilterCriteria are ORed", source: "§2.1"},
		{name: "criteria/or-second", patterns: two, doc: `{"b":"2"}`, want: true, reason: "filters in one FilterCriteria are ORed", source: "§2.1"},
		{name: "criteria/or-both", patterns: two, doc: `{"a":"1","b":"2"}`, want: true, reason: "filters in one FilterCriteria are ORed", source: "§2.1"},
		{name: "criteria/or-none", patterns: two, doc: `{"c":"3"}`, want: false, reason: "no filter matches: discarded", source: "§2.1"},
		{name: "criteria/or-five", patterns: nPatterns(5), doc: `{"f4":"v4"}`, want: true, reason: "the fifth of five filters matches", source: "§5"},
	}
}

func criteriaParseCases() []criteriaParseCase {
	ten := nPatterns(10)
	return []criteriaParseCase{
		{name: "criteria/parse-one", data: criteriaJSON(`{"a":["1"]}`), wantFilters: 1, filterIndex: -1,
			reason: "CloudFormation/SAM shape with one filter", source: docLambdaESM},
		{name: "criteria/parse-five-default", data: criteriaJSON(nPatterns(5)...), wantFilters: 5, filterIndex: -1,
			reason: "5 filters is the default quota", source: "§5"},
		{name: "criteria/parse-six-default", data: criteriaJSON(nPatterns(6)...), wantErr: true, filterIndex: -1,
			reason: "more than 5 filters without a quota increase is an error", source: "§5"},
		{name: "criteria/parse-six-raised", data: criteriaJSON(nPatterns(6)...), raised: true, wantFilters: 6, filterIndex: -1,
			reason: "a quota increase allows up to 10", source: "§5"},
		{name: "criteria/parse-ten-raised", data: criteriaJSON(ten...), raised: true, wantFilters: 10, filterIndex: -1,
			reason: "10 filters with the raised quota", source: "§5"},
		{name: "criteria/parse-eleven-raised", data: criteriaJSON(nPatterns(11)...), raised: true, wantErr: true, filterIndex: -1,
			reason: "11 filters exceed even the raised quota (CFN's 20-item schema bound is not the quota)", source: "§5"},
		{name: "criteria/new-six-default", patterns: nPatterns(6), wantErr: true, filterIndex: -1,
			reason: "NewCriteria applies the same quota", source: "§5"},
		{name: "criteria/new-ten-raised", patterns: ten, raised: true, wantFilters: 10, filterIndex: -1,
			reason: "NewCriteria with the raised quota", source: "§5"},
		{name: "criteria/new-eleven-raised", patterns: nPatterns(11), raised: true, wantErr: true, filterIndex: -1,
			reason: "NewCriteria: 11 exceed the raised quota", source: "§5"},
		{name: "criteria/filters-not-array", data: `{"Filters":{"Pattern":"{\"a\":[\"1\"]}"}}`, wantErr: true, filterIndex: -1,
			reason: "Filters must be an array", source: docLambdaESM},
		{name: "criteria/pattern-not-string", data: `{"Filters":[{"Pattern":{"a":["1"]}}]}`, wantErr: true, filterIndex: -1,
			reason: "Pattern is a JSON string holding the pattern, not an object", source: docLambdaESM},
		{name: "criteria/invalid-pattern-index", data: criteriaJSON(`{"a":["1"]}`, `{"a":"x"}`), wantErr: true, filterIndex: 1, path: "a", checkPath: true,
			reason: "an invalid pattern is reported with its filter index and path", source: "§7"},
		{name: "criteria/new-invalid-pattern-index", patterns: []string{`{"a":["1"]}`, `{"b":["2"]}`, `{"c":[]}`}, wantErr: true, filterIndex: 2, path: "c", checkPath: true,
			reason: "NewCriteria reports the index of the bad pattern", source: "§7"},
		{name: "criteria/pattern-too-long", data: criteriaJSON(patternOfLength(limits.MaxFilterPatternLength + 1)), wantErr: true, filterIndex: 0,
			reason: "Filter.Pattern length constraint 0..4096", source: docAPIFilter},
	}
}

// ---------------------------------------------------------------------------------------------
// Tests

func TestConformanceCount(t *testing.T) {
	nMatch := len(matchCases())
	nInvalid := len(invalidCases())
	nKafka := len(kafkaCases())
	nSQS := len(sqsCases())
	nCriteria := len(criteriaMatchCases()) + len(criteriaParseCases())
	total := nMatch + nInvalid + nKafka + nSQS + nCriteria
	t.Logf("conformance cases: total %d (match %d, invalid %d, kafka %d, sqs %d, criteria %d)",
		total, nMatch, nInvalid, nKafka, nSQS, nCriteria)
	if total < minTotalCases {
		t.Errorf("only %d conformance cases, want at least %d", total, minTotalCases)
	}
	if nInvalid < minInvalidCases {
		t.Errorf("only %d invalid-pattern cases, want at least %d", nInvalid, minInvalidCases)
	}

	// Names must be unique so a failing subtest names one rule; every case needs its why.
	seen := map[string]bool{}
	check := func(name, reason, source string) {
		if seen[name] {
			t.Errorf("duplicate case name %q", name)
		}
		seen[name] = true
		if reason == "" || source == "" {
			t.Errorf("case %q lacks a reason or source", name)
		}
	}
	for _, c := range matchCases() {
		check(c.name, c.reason, c.source)
	}
	for _, c := range invalidCases() {
		check(c.name, c.reason, c.source)
	}
	for _, c := range kafkaCases() {
		check(c.name, c.reason, c.source)
	}
	for _, c := range sqsCases() {
		check(c.name, c.reason, c.source)
	}
	for _, c := range criteriaMatchCases() {
		check(c.name, c.reason, c.source)
	}
	for _, c := range criteriaParseCases() {
		check(c.name, c.reason, c.source)
	}
}

func TestConformanceMatch(t *testing.T) {
	for _, c := range matchCases() {
		t.Run(c.name, func(t *testing.T) {
			if !json.Valid([]byte(c.pattern)) || !json.Valid([]byte(c.doc)) {
				t.Fatalf("test bug: pattern or doc is not valid JSON\npattern: %s\ndoc:     %s", c.pattern, c.doc)
			}
			p, err := filter.Compile(c.pattern, c.opts()...)
			if err != nil {
				t.Fatalf("Compile(%s) [options %s]: unexpected error: %v\nrule: %s (%s)",
					c.pattern, optNames(c.eventBridge, c.legacy), err, c.reason, c.source)
			}
			got, err := p.Match([]byte(c.doc))
			if err != nil {
				t.Fatalf("Match(%s): unexpected error: %v", c.doc, err)
			}
			if got != c.want {
				t.Errorf("pattern %s\ndoc     %s\noptions %s\ngot match=%v, want %v\nrule: %s (%s)",
					c.pattern, c.doc, optNames(c.eventBridge, c.legacy), got, c.want, c.reason, c.source)
			}
		})
	}
}

func TestConformanceInvalid(t *testing.T) {
	for _, c := range invalidCases() {
		t.Run(c.name, func(t *testing.T) {
			p, err := filter.Compile(c.pattern, c.opts()...)
			if err == nil {
				t.Fatalf("Compile(%s) [options %s] = %v, nil; want an error\nrule: %s (%s)",
					abbreviate(c.pattern), optNames(c.eventBridge, c.legacy), p, c.reason, c.source)
			}
			var fe *filter.Error
			if !errors.As(err, &fe) {
				t.Fatalf("Compile(%s): error %T %q is not a *filter.Error", abbreviate(c.pattern), err, err)
			}
			if fe.Reason == "" {
				t.Errorf("Compile(%s): *filter.Error has an empty Reason: %+v", abbreviate(c.pattern), fe)
			}
			if fe.Filter != -1 {
				t.Errorf("Compile(%s): Error.Filter = %d, want -1 for a lone pattern", abbreviate(c.pattern), fe.Filter)
			}
			if c.checkPath && fe.Path != c.path {
				t.Errorf("Compile(%s): Error.Path = %q, want %q (error: %v)\nrule: %s (%s)",
					abbreviate(c.pattern), fe.Path, c.path, err, c.reason, c.source)
			}
			if c.wantInErr != "" && !strings.Contains(err.Error(), c.wantInErr) {
				t.Errorf("Compile(%s): error %q does not contain %q", abbreviate(c.pattern), err, c.wantInErr)
			}
		})
	}
}

func TestConformanceKafka(t *testing.T) {
	for _, c := range kafkaCases() {
		t.Run(c.name, func(t *testing.T) {
			crit, err := filter.NewCriteria(c.patterns)
			if err != nil {
				t.Fatalf("NewCriteria(%q): %v", c.patterns, err)
			}
			r := kafkaRecord(c)
			if got, err := crit.MatchKafka(r); got != c.want || err != nil {
				t.Errorf("patterns %s\nvalue   %q (key %q)\ngot match=%v (err %v), want %v\nrule: %s (%s)",
					c.patterns, c.value, c.key, got, err, c.want, c.reason, c.source)
			}
		})
	}
}

func TestConformanceSQS(t *testing.T) {
	for _, c := range sqsCases() {
		t.Run(c.name, func(t *testing.T) {
			crit, err := filter.NewCriteria(c.patterns)
			if err != nil {
				t.Fatalf("NewCriteria(%q): %v", c.patterns, err)
			}
			m := &events.SQSMessage{
				MessageId:         c.messageID,
				Body:              c.body,
				Attributes:        c.attributes,
				MessageAttributes: c.messageAttributes,
				EventSource:       "aws:sqs",
				AWSRegion:         "us-east-1",
			}
			if got, err := crit.MatchSQS(m); got != c.want || err != nil {
				t.Errorf("patterns %s\nbody    %q\ngot match=%v (err %v), want %v\nrule: %s (%s)",
					c.patterns, c.body, got, err, c.want, c.reason, c.source)
			}
		})
	}
}

func TestConformanceCriteria(t *testing.T) {
	for _, c := range criteriaMatchCases() {
		t.Run(c.name, func(t *testing.T) {
			crit, err := filter.NewCriteria(c.patterns)
			if err != nil {
				t.Fatalf("NewCriteria(%q): %v", c.patterns, err)
			}
			got, err := crit.Match([]byte(c.doc))
			if err != nil {
				t.Fatalf("Match(%s): %v", c.doc, err)
			}
			if got != c.want {
				t.Errorf("patterns %s\ndoc      %s\ngot match=%v, want %v\nrule: %s (%s)", c.patterns, c.doc, got, c.want, c.reason, c.source)
			}
			// The same filters through ParseCriteria's CloudFormation shape must agree.
			pc, err := filter.ParseCriteria([]byte(criteriaJSON(c.patterns...)))
			if err != nil {
				t.Fatalf("ParseCriteria: %v", err)
			}
			if got2, err := pc.Match([]byte(c.doc)); err != nil || got2 != c.want {
				t.Errorf("ParseCriteria form: got match=%v err=%v, want %v", got2, err, c.want)
			}
		})
	}
	for _, c := range criteriaParseCases() {
		t.Run(c.name, func(t *testing.T) {
			var opts []filter.Option
			if c.raised {
				opts = append(opts, filter.WithRaisedFilterQuota())
			}
			var crit *filter.Criteria
			var err error
			if c.data != "" {
				crit, err = filter.ParseCriteria([]byte(c.data), opts...)
			} else {
				crit, err = filter.NewCriteria(c.patterns, opts...)
			}
			if !c.wantErr {
				if err != nil {
					t.Fatalf("unexpected error: %v\nrule: %s (%s)", err, c.reason, c.source)
				}
				if n := len(crit.Filters()); n != c.wantFilters {
					t.Errorf("%d filters, want %d", n, c.wantFilters)
				}
				return
			}
			if err == nil {
				t.Fatalf("got %d filters and no error; want an error\nrule: %s (%s)", len(crit.Filters()), c.reason, c.source)
			}
			var fe *filter.Error
			if !errors.As(err, &fe) {
				t.Fatalf("error %T %q is not a *filter.Error", err, err)
			}
			if fe.Reason == "" {
				t.Errorf("*filter.Error has an empty Reason: %+v", fe)
			}
			if c.filterIndex >= 0 && fe.Filter != c.filterIndex {
				t.Errorf("Error.Filter = %d, want %d (error: %v)", fe.Filter, c.filterIndex, err)
			}
			if c.checkPath && fe.Path != c.path {
				t.Errorf("Error.Path = %q, want %q (error: %v)", fe.Path, c.path, err)
			}
		})
	}
}

// TestConformanceMatchDocError checks the one documented error of Pattern.Match: a document
// that is not valid JSON. Not counted as a conformance case.
func TestConformanceMatchDocError(t *testing.T) {
	p, err := filter.Compile(`{"a":["x"]}`)
	if err != nil {
		t.Fatalf("Compile: %v", err)
	}
	if _, err := p.Match([]byte(`{"a":`)); err == nil {
		t.Errorf("Match on malformed JSON: got nil error")
	}
}

func abbreviate(s string) string {
	if len(s) <= 120 {
		return s
	}
	return fmt.Sprintf("%s…(%d chars)", s[:100], len(s))
}
