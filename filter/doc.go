// Package filter evaluates the FilterCriteria of AWS Lambda event source mappings locally,
// exactly as Lambda does, so that a pattern can be tried in a unit test, checked in CI against
// the SAM template, and applied at run time as a guard for self-managed setups.
//
// # Patterns
//
// A pattern is an EventBridge event pattern in the subset Lambda supports:
//
//	{"value": {"status": ["CREATED", "PAID"], "amount": [{"numeric": [">", 100]}]}}
//
// Fields are ANDed, the values listed for a field are ORed, and "$or" ORs whole sets of
// fields. [Compile] validates a pattern and compiles it; an invalid one gives an [*Error] that
// names the path and the reason. [Pattern.Match] evaluates a JSON document:
//
//	p, err := filter.Compile(`{"status": [{"anything-but": ["CANCELLED"]}]}`)
//	ok, err := p.Match([]byte(`{"status": "CREATED"}`)) // true
//
// The semantics are the engine's, not a guess at them: types are strict ("5" is not 5, prefix
// matches strings only, numeric matches JSON numbers only); null, a missing field and ""
// differ; an array in the event matches when any element does, and fields under one array of
// objects must match within the same element; a number literal matches numerically as well as
// textually (300 equals 300.0); exists applies to leaves only. Numbers compare as float64, or
// with [WithLegacyNumbers] as the older engine did. The operators are Lambda's: equals,
// prefix, suffix, equals-ignore-case, anything-but, numeric, exists, and $or;
// [WithEventBridge] adds the ones EventBridge rules have on top (wildcard, cidr, anything-but
// with prefix, suffix, equals-ignore-case or wildcard).
//
// # FilterCriteria
//
// [ParseCriteria] reads the CloudFormation and SAM shape, {"Filters":[{"Pattern":"..."}]},
// with Lambda's limits: patterns of at most 4096 characters, at most 5 filters (10 with
// [WithRaisedFilterQuota]). Filters are ORed.
//
// Lambda does not match a record as it arrives in the function's event. A Kafka event source
// mapping filters on the record's value only, decoded from base64 as UTF-8 and parsed when it
// is a JSON object; an SQS one filters on the message body only. [Criteria.MatchKafka] and
// [Criteria.MatchSQS] shape the record the same way before matching, including the format
// check: a pattern that names fields inside the value does not match plain text, and one that
// lists values for the value itself does not match JSON. [Criteria.ExplainKafka] and
// [Criteria.ExplainSQS] say which filter matched, or for each filter the first path that
// failed and why.
//
// # Speed
//
// Matching reads the document once, validating it, and keeps only the values on paths some
// pattern names; it does not allocate. [Criteria.Which] evaluates every filter on one pass,
// like a router. See BenchmarkMatch and the README for figures.
package filter
