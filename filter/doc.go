// Package filter evaluates the FilterCriteria of AWS Lambda event source mappings locally,
// exactly as Lambda does, so that a pattern can be tried in a unit test, checked in CI against
// the SAM template, and applied at run time as a guard for self-managed setups.
//
// # FilterCriteria
//
// An event source mapping passes a record to the function when any of its filters matches
// the record. [ParseCriteria] reads the filters in the shape CloudFormation, SAM and the
// Lambda API use, and checks Lambda's limits (patterns of at most 4096 characters, one to
// five filters, ten with [WithRaisedFilterQuota]; the numbers are in package limits):
//
//	c, err := filter.ParseCriteria([]byte(`{"Filters": [
//		{"Pattern": "{\"value\": {\"status\": [\"CREATED\"]}}"}
//	]}`))
//	if err != nil {
//		return err // a *filter.Error: which filter, which path, what is wrong
//	}
//
// [NewCriteria] takes the patterns themselves. Lambda does not match a record as it arrives
// in the function's event: a Kafka event source mapping matches the record's value alone,
// decoded from base64 as UTF-8, as the field "value" of a document (parsed when it is a JSON
// object, a plain string otherwise); an SQS one matches the body as the field "body".
// [Criteria.MatchKafka] and [Criteria.MatchSQS] shape the record the same way, including
// Lambda's format check: a pattern that names fields inside the value does not match plain
// text, and one that lists values for the value itself does not match a JSON object.
//
//	pass, err := c.MatchKafka(r)
//	switch {
//	case err != nil:
//		// The answer is not known (ErrTooComplex), or r did not decode: neither pass nor
//		// drop the record; report it failed.
//	case !pass:
//		// Lambda would not have passed the record to the function.
//	}
//
// batch.WithFilter does exactly this for every record of a batch. [Criteria.ExplainKafka]
// and [Criteria.ExplainSQS] also say which filter matched, or for each filter the first path
// that failed and why; `klt filter test` prints them for the records of an event.
//
// # Patterns
//
// A pattern is an EventBridge event pattern in the subset Lambda supports:
//
//	{"value": {"status": ["CREATED", "PAID"], "amount": [{"numeric": [">", 100]}]}}
//
// Fields are ANDed, the values listed for a field are ORed, and "$or" ORs whole sets of
// fields. [Compile] validates one pattern and compiles it; [Pattern.Match] evaluates a JSON
// document as it is, with no shaping.
//
// The semantics are the engine's, not a guess at them: types are strict ("5" is not 5, prefix
// matches strings only, numeric matches JSON numbers only); null, a missing field and ""
// differ; an array in the event matches when any element does, and fields under one array of
// objects must match within the same element; a number literal matches numerically as well as
// textually (300 equals 300.0); exists applies to leaves only. The operators are Lambda's:
// equals, prefix, suffix, equals-ignore-case, anything-but, numeric, exists, and $or.
//
// # Options
//
// By default patterns are checked against Lambda's operator set and numbers compare as the
// current engine does. [WithEventBridge] adds the operators EventBridge rules have on top
// (wildcard, cidr, anything-but with prefix, suffix, equals-ignore-case or wildcard);
// [WithLegacyNumbers] compares numbers as the engine did before mid-2024;
// [WithRaisedFilterQuota] allows ten filters.
//
// # Errors
//
// Compiling reports an invalid pattern or FilterCriteria as an [*Error]. Matching reports a
// document that is not valid JSON as an error wrapping [ErrDocument] (for Kafka values and
// SQS bodies that is no error: such a value is plain text, as for Lambda), and an answer it
// does not know as an error wrapping [ErrTooComplex]: a document nested more than 1000 deep,
// or one with so many array elements under a pattern's fields that matching them element by
// element would not end in reasonable time. With an error the bool is false and means
// nothing: a caller that drops the record then loses it without cause.
//
// # Speed
//
// Matching reads the document once, validating all of it, and evaluates each condition of
// every filter on the values at its path as the scan meets them, keeping a bit per condition
// met; each conjunction is then decided from the bits. Values elsewhere are skipped, checked
// but not kept. Only when two or more conditions of a conjunction are met inside arrays only,
// where they must be met in the same element, does matching keep the values with their array
// positions and search them; that general path also words the error for a document that is
// not valid JSON. Matching does not allocate, but to unescape a string of more than 64 bytes
// on a pattern's path. [Criteria.Which] evaluates every filter on one pass, like a router.
// docs/performance.md has the figures against the alternatives (Quamina among them), and
// BenchmarkMatch and scripts/bench-quamina reproduce them.
package filter
