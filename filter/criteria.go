package filter

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// Criteria is the FilterCriteria of an event source mapping: up to 5 patterns (10 with a
// raised quota), ORed. A record goes to the function when any pattern matches it. Criteria is
// safe for concurrent use.
type Criteria struct {
	filters []*Pattern
	cfg     config
	// One pass over a document serves every filter: the trie and path numbers below are the
	// union of the filters' own, and pathMaps[i] maps filter i's numbers to them.
	paths    [][]string
	root     *trieNode
	pathMaps [][]int
	plan     *plan // the fast path's; nil when the criteria are too large for it
}

// ParseCriteria reads FilterCriteria in the shape CloudFormation, SAM and the Lambda API use,
// {"Filters":[{"Pattern":"<pattern as a JSON string>"}]}, and compiles every pattern. It takes
// one JSON object with the key Filters alone, an array of one to five objects (ten with
// [WithRaisedFilterQuota]) each with the key Pattern alone; key names are case-sensitive, as
// CloudFormation's are. Errors are *Error values that name the filter, the path and the
// reason.
func ParseCriteria(data []byte, opts ...Option) (*Criteria, error) {
	var top map[string]json.RawMessage
	if err := decodeOne(data, &top); err != nil || top == nil {
		if err == nil {
			err = errors.New("got null")
		}
		return nil, &Error{Filter: -1, Reason: "FilterCriteria is not a JSON object: " + jsonErrText(err)}
	}
	if err := onlyKey(top, "Filters"); err != nil {
		return nil, &Error{Filter: -1, Reason: err.Error()}
	}
	if err := uniqueKeys(data); err != nil {
		return nil, &Error{Filter: -1, Reason: err.Error()}
	}
	raw, ok := top["Filters"]
	if !ok {
		return nil, &Error{Filter: -1, Path: "Filters", Reason: "missing"}
	}
	var filters []json.RawMessage
	if err := json.Unmarshal(raw, &filters); err != nil || filters == nil {
		return nil, &Error{Filter: -1, Path: "Filters", Reason: "want an array of {\"Pattern\": string}, got " + jsonKind(raw)}
	}
	patterns := make([]string, len(filters))
	for i, f := range filters {
		var fo map[string]json.RawMessage
		if err := json.Unmarshal(f, &fo); err != nil || fo == nil {
			return nil, &Error{Filter: i, Reason: "want an object {\"Pattern\": string}, got " + jsonKind(f)}
		}
		if err := onlyKey(fo, "Pattern"); err != nil {
			return nil, &Error{Filter: i, Reason: err.Error()}
		}
		if err := uniqueKeys(f); err != nil {
			return nil, &Error{Filter: i, Reason: err.Error()}
		}
		p, ok := fo["Pattern"]
		if !ok {
			return nil, &Error{Filter: i, Path: "Pattern", Reason: "missing"}
		}
		if err := json.Unmarshal(p, &patterns[i]); err != nil || string(p) == "null" {
			return nil, &Error{Filter: i, Path: "Pattern", Reason: "want the pattern as a JSON string, got " + jsonKind(p)}
		}
	}
	return NewCriteria(patterns, opts...)
}

// decodeOne decodes data, which must hold one JSON value and nothing after it, into v.
func decodeOne(data []byte, v any) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	if err := dec.Decode(v); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("data after the top-level value")
	}
	return nil
}

// uniqueKeys reports an error when the JSON object obj, already known to be valid, has a key
// twice: decoding into a map would keep the last one silently, and which one Lambda keeps is
// not documented.
func uniqueKeys(obj []byte) error {
	var dup error
	err := jsonscan.FindDuplicates(obj, topLevel, func(d jsonscan.Duplicate) bool {
		dup = fmt.Errorf("key %q given twice", d.Name)
		return false
	})
	if dup != nil {
		return dup
	}
	return err
}

// topLevel takes the names of the top-level object for fields of their own, and no other.
func topLevel(obj jsonscan.Path, name string) (string, bool) { return name, len(obj) == 0 }

// onlyKey reports an error naming the first key of m, in sorted order, other than key.
func onlyKey(m map[string]json.RawMessage, key string) error {
	var extra []string
	for k := range m {
		if k != key {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	slices.Sort(extra)
	return fmt.Errorf("unknown key %q: the only key here is %q (names are case-sensitive)", extra[0], key)
}

// jsonKind names the kind of a JSON value for messages.
func jsonKind(raw json.RawMessage) string {
	b := bytes.TrimSpace(raw)
	if len(b) == 0 {
		return "nothing"
	}
	switch b[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 'n':
		return "null"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// NewCriteria compiles patterns into Criteria, checking Lambda's limits on their number: at
// least one (an event source mapping without filters passes every record, which Criteria
// cannot express), at most five by default, ten with [WithRaisedFilterQuota].
func NewCriteria(patterns []string, opts ...Option) (*Criteria, error) {
	cfg := newConfig(opts)
	if len(patterns) == 0 {
		return nil, &Error{Filter: -1, Path: "Filters", Reason: "no filters: give at least one " +
			"(an event source mapping without filters passes every record: use no Criteria then)"}
	}
	if len(patterns) > cfg.maxFilters {
		reason := fmt.Sprintf("%d filters; an event source mapping takes at most %d", len(patterns), cfg.maxFilters)
		if cfg.maxFilters < limits.RaisedFilterQuota {
			reason += fmt.Sprintf(" (%d with a raised quota: WithRaisedFilterQuota)", limits.RaisedFilterQuota)
		}
		return nil, &Error{Filter: -1, Path: "Filters", Reason: reason}
	}
	c := &Criteria{cfg: cfg}
	index := map[string]int{}
	for i, src := range patterns {
		p, err := compile(src, cfg, i)
		if err != nil {
			return nil, err
		}
		m := make([]int, len(p.paths))
		for j, path := range p.paths {
			key := strings.Join(path, "\x00")
			id, ok := index[key]
			if !ok {
				id = len(c.paths)
				index[key] = id
				c.paths = append(c.paths, path)
			}
			m[j] = id
		}
		c.filters = append(c.filters, p)
		c.pathMaps = append(c.pathMaps, m)
	}
	c.root = buildTrie(c.paths)
	c.plan = newPlan(c.root, c.filters, c.pathMaps)
	return c, nil
}

// Filters returns the compiled patterns, in order.
func (c *Criteria) Filters() []*Pattern { return slices.Clone(c.filters) }

// MarshalJSON writes the criteria back in the CloudFormation shape,
// {"Filters":[{"Pattern":"..."}]}, each pattern as the text it was compiled from.
func (c *Criteria) MarshalJSON() ([]byte, error) {
	type filter struct {
		Pattern string
	}
	out := struct {
		Filters []filter
	}{Filters: []filter{}}
	for _, p := range c.filters {
		out.Filters = append(out.Filters, filter{p.src})
	}
	return json.Marshal(out)
}

// Match reports whether the JSON document doc matches any filter. doc is matched as it is:
// for a Kafka record or an SQS message, use MatchKafka or MatchSQS, which shape the record as
// Lambda does first. The errors are Pattern.Match's: ErrDocument, ErrTooComplex.
func (c *Criteria) Match(doc []byte) (bool, error) {
	if c.plan != nil {
		if match, ok, err := c.plan.matchFast(doc, c.root, c.cfg.legacyNumbers); ok {
			return match, err
		}
	}
	return c.matchGeneral(doc)
}

// matchGeneral is Match on the general path: flatten, then each filter's conjunctions.
func (c *Criteria) matchGeneral(doc []byte) (bool, error) {
	s := getState(len(c.paths), c.cfg.legacyNumbers)
	defer putState(s)
	if err := s.flatten(doc, c.root); err != nil {
		return false, err
	}
	for i, p := range c.filters {
		if p.eval(s, c.pathMaps[i], shapeAny) {
			return true, nil
		}
	}
	if s.exceeded != nil {
		return false, s.exceeded
	}
	return false, nil
}

// Which appends to dst the indexes of the filters that doc matches, evaluating every filter
// on one pass over the document, and returns the extended slice. With a reused dst it does
// not allocate. When the error wraps ErrTooComplex, the indexes appended are those of the
// filters known to match; whether the others match is not known.
func (c *Criteria) Which(doc []byte, dst []int) ([]int, error) {
	if c.plan != nil {
		if out, ok, err := c.whichFast(doc, dst); ok {
			return out, err
		}
	}
	return c.whichGeneral(doc, dst)
}

// whichGeneral is Which on the general path.
func (c *Criteria) whichGeneral(doc []byte, dst []int) ([]int, error) {
	s := getState(len(c.paths), c.cfg.legacyNumbers)
	defer putState(s)
	if err := s.flatten(doc, c.root); err != nil {
		return dst, err
	}
	for i, p := range c.filters {
		if p.eval(s, c.pathMaps[i], shapeAny) {
			dst = append(dst, i)
		}
	}
	if s.exceeded != nil {
		return dst, s.exceeded
	}
	return dst, nil
}

// MatchKafka reports whether Lambda would pass the record to the function. Kafka event
// source mappings filter on the record's value only: Lambda decodes it as UTF-8 and matches
// it as the field "value" of a document, parsed when it is a JSON object and as a plain string
// otherwise (a value that is not valid JSON is plain text). A pattern that names fields inside
// value does not match plain text, and one that lists values for value itself does not match
// a JSON object. A value that is not UTF-8, or a tombstone, leaves the field absent. Any other
// field a pattern names (key, topic, headers) is absent too, since Lambda does not filter on
// them.
//
// When the answer is not known the error wraps ErrTooComplex (a value nested more than 1000
// deep, or with so many array elements that matching would not end in reasonable time), and
// when the record could not be decoded it wraps the record's Err. The bool is then false and
// means nothing: callers must not treat the record as filtered out, but fail it, as
// package batch does.
func (c *Criteria) MatchKafka(r *kafkaevent.Record) (bool, error) {
	if r.Err != nil {
		return false, fmt.Errorf("filter: the record cannot be matched: %w", r.Err)
	}
	return c.shaped("value", r.Value, r.Value == nil, nil)
}

// MatchSQS reports whether Lambda would pass the message to the function. SQS event source
// mappings filter on the body only, matched as the field "body": parsed when it is a JSON
// object, a plain string otherwise. Lambda checks the format first: a plain body with a
// pattern that names fields inside body, or a JSON body with a pattern that lists values for
// body itself, is dropped.
//
// When the answer is not known the error wraps ErrTooComplex, as for MatchKafka; the bool is
// then false and means nothing.
func (c *Criteria) MatchSQS(m *events.SQSMessage) (bool, error) {
	return c.shaped("body", []byte(m.Body), false, nil)
}

// shaped matches the one field Lambda filters on. With v set, it also explains, on the
// general path.
func (c *Criteria) shaped(key string, value []byte, absent bool, v *Verdict) (bool, error) {
	if c.plan != nil && v == nil {
		if match, ok, err := c.shapedFast(key, value, absent); ok {
			return match, err
		}
	}
	return c.shapedGeneral(key, value, absent, v)
}

// shapedGeneral is shaped on the general path: shape, then each filter's conjunctions.
func (c *Criteria) shapedGeneral(key string, value []byte, absent bool, v *Verdict) (bool, error) {
	s := getState(len(c.paths), c.cfg.legacyNumbers)
	defer putState(s)
	ds, err := c.shape(s, key, value, absent)
	if err != nil {
		return false, err
	}
	for i, p := range c.filters {
		if p.eval(s, c.pathMaps[i], ds, key) {
			if v != nil {
				v.Match, v.Filter = true, i
			}
			return true, nil
		}
		if v != nil {
			// Explaining tries parts of the filter: a doubt about a part is not one about
			// the whole, which failed for certain unless matching itself gave up.
			exceeded := s.exceeded
			v.Misses = append(v.Misses, p.explain(s, c.pathMaps[i], ds, key, i))
			s.exceeded = exceeded
		}
	}
	if s.exceeded != nil {
		return false, s.exceeded
	}
	return false, nil
}

// shape flattens the shaped document {key: value} into s and says what format value has. A
// value that is not valid JSON is plain text, as Lambda has it; one the scanner gives up on
// (ErrTooComplex) is an error, since Lambda may well read it as JSON.
func (c *Criteria) shape(s *state, key string, value []byte, absent bool) (docShape, error) {
	node := c.root.child(key, false)
	if absent || !utf8.Valid(value) {
		return shapeAbsent, nil
	}
	if isJSONObject(value) {
		if node == nil {
			return shapeJSON, nil // no pattern looks at the value: its format does not matter
		}
		err := s.flatten(value, node)
		if err == nil {
			return shapeJSON, nil
		}
		if !errors.Is(err, ErrDocument) {
			return 0, err
		}
		s.reset()
	}
	if node != nil && node.pathID >= 0 {
		s.addLeaf(node.pathID, lString, value)
	}
	return shapePlain, nil
}

func isJSONObject(b []byte) bool {
	i := jsonscan.SkipWS(b, 0)
	return i < len(b) && b[i] == '{'
}

// Verdict says how a record fared against FilterCriteria, for tools that explain filters.
type Verdict struct {
	// Match reports whether Lambda would pass the record to the function.
	Match bool
	// Err is the error MatchKafka or MatchSQS would return: it wraps ErrTooComplex when the
	// answer is not known, or the record's decoding error. Match is then false and means
	// nothing, and Misses may be empty.
	Err error
	// Filter is the index of the first filter that matched, or -1.
	Filter int
	// Misses says, for each filter tried before one matched (every filter when none did),
	// the first path that failed and why.
	Misses []Miss
}

// Miss says why a record does not match one filter.
type Miss struct {
	// Filter is the index of the filter.
	Filter int
	// Path is the pattern path that failed, such as value.status.
	Path string
	// Reason says why, for example `got "CANCELLED", want ["CREATED"]`.
	Reason string
}

// String returns "filter FILTER: PATH: REASON", as klt filter test prints it.
func (m Miss) String() string {
	if m.Path == "" {
		return fmt.Sprintf("filter %d: %s", m.Filter, m.Reason)
	}
	return fmt.Sprintf("filter %d: %s: %s", m.Filter, m.Path, m.Reason)
}

// ExplainKafka is MatchKafka with the reasons.
func (c *Criteria) ExplainKafka(r *kafkaevent.Record) Verdict {
	v := Verdict{Filter: -1}
	if r.Err != nil {
		_, v.Err = c.MatchKafka(r)
		return v
	}
	_, v.Err = c.shaped("value", r.Value, r.Value == nil, &v)
	return v
}

// ExplainSQS is MatchSQS with the reasons.
func (c *Criteria) ExplainSQS(m *events.SQSMessage) Verdict {
	v := Verdict{Filter: -1}
	_, v.Err = c.shaped("body", []byte(m.Body), false, &v)
	return v
}

// explain finds, among the pattern's conjunctions, the one that got furthest, and says why
// its next condition failed.
func (p *Pattern) explain(s *state, pathMap []int, ds docShape, key string, filter int) Miss {
	best := Miss{Filter: filter, Reason: "no alternative of the pattern matched"}
	bestK := -1
	for ci := range p.conjs {
		c := &p.conjs[ci]
		if !shapeOK(c, key, ds) {
			if bestK < 0 {
				best.Path = key
				if ds == shapeJSON {
					best.Reason = "a JSON object, but the pattern lists values for it as for plain text"
				} else {
					best.Reason = "plain text, but the pattern names fields inside it as in a JSON object"
				}
				bestK = 0
			}
			continue
		}
		// A condition that no value meets on its own fails the conjunction for certain:
		// the first such is the reason.
		k := 0
		for k < len(c.conds) {
			if !s.conjMatch(&conj{conds: c.conds[k : k+1]}, pathMap) {
				break
			}
			k++
		}
		// Otherwise, the longest prefix of conditions that can be met together; when the
		// search for the next gives up, that is the reason.
		var unknown error
		if k == len(c.conds) {
			for k = 0; k < len(c.conds); k++ {
				s.steps, s.exceeded = 0, nil
				if !s.conjMatch(&conj{conds: c.conds[:k+1]}, pathMap) {
					unknown = s.exceeded
					break
				}
			}
		}
		if k == len(c.conds) {
			continue
		}
		if k+1 > bestK {
			bestK = k + 1
			best.Path = strings.Join(p.paths[c.conds[k].path], ".")
			best.Reason = s.why(&c.conds[k], pathMap)
			if unknown != nil {
				best.Reason = "not known: " + strings.TrimPrefix(unknown.Error(), "filter: ")
			}
		}
	}
	return best
}

// why describes the values at a condition's path that did not match it.
func (s *state) why(cd *cond, pathMap []int) string {
	path := cd.path
	if pathMap != nil {
		path = pathMap[path]
	}
	var got []string
	matched := false
	for li := s.heads[path]; li >= 0; li = s.leaves[li].next {
		lf := &s.leaves[li]
		if cd.existsTrue || s.matchAny(cd.ms, lf) {
			matched = true
		}
		if len(got) < 4 {
			got = append(got, lf.text())
		}
	}
	want := cd.text
	switch {
	case len(got) == 0 && cd.existsTrue:
		return "missing, want it to exist"
	case len(got) == 0:
		return "missing, want " + want
	case cd.existsFalse && !matched && len(cd.ms) == 0:
		return "present (" + strings.Join(got, ", ") + "), want it absent"
	case matched:
		return "matched only in a different element of an array than the pattern's other fields"
	}
	slices.Reverse(got)
	return "got " + strings.Join(got, ", ") + ", want " + want
}

func (lf *leaf) text() string {
	switch lf.kind {
	case lString:
		s := string(lf.val)
		if len(s) > 60 {
			s = s[:60] + "..."
		}
		return strconv.Quote(s)
	case lNumber:
		return string(lf.val)
	case lTrue:
		return "true"
	case lFalse:
		return "false"
	}
	return "null"
}
