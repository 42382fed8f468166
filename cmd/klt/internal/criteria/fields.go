package criteria

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/filter"
)

// FieldWarnings warns about the fields that patterns of c name and that Lambda never shows them
// for records of kind: it filters a Kafka record on its "value" only and an SQS message on its
// "body", so a Kafka pattern on "body" (or "key") or an SQS pattern on "value", the other
// source's field, tests a field that is always missing.
func FieldWarnings(c *filter.Criteria, kind string) []string {
	var warnings []string
	for i, p := range c.Filters() {
		names, err := topFields(p.String())
		if err != nil {
			warnings = append(warnings, fmt.Sprintf("filter %d: cannot list the fields it names: %v", i, err))
			continue
		}
		for _, name := range names {
			switch {
			case kind == input.KindKafka && name == "body":
				warnings = append(warnings, fmt.Sprintf(`filter %d names "body", an SQS message's field: Lambda filters Kafka records on "value" only, so to it "body" is always missing`, i))
			case kind == input.KindKafka && name != "value":
				warnings = append(warnings, fmt.Sprintf(`filter %d names %q: Lambda filters Kafka records on "value" only, so to it %q is always missing`, i, name, name))
			case kind == input.KindSQS && name == "value":
				warnings = append(warnings, fmt.Sprintf(`filter %d names "value", a Kafka record's field: Lambda filters SQS messages on "body", so to it "value" is always missing`, i))
			}
		}
	}
	return warnings
}

// topFields returns the top-level field names of pattern, a JSON object, in order and once
// each, looking inside "$or", whose elements are patterns at the same level.
func topFields(pattern string) ([]string, error) {
	var names []string
	var walk func(raw []byte) error
	walk = func(raw []byte) error {
		fields, err := jsonl.SplitObject(raw, "pattern")
		if err != nil {
			return err
		}
		for _, f := range fields {
			if f.Name != "$or" {
				if !slices.Contains(names, f.Name) {
					names = append(names, f.Name)
				}
				continue
			}
			var alts []json.RawMessage
			if err := json.Unmarshal(f.Value, &alts); err != nil {
				return fmt.Errorf("$or: %w", jsonl.JSONError(err))
			}
			for _, alt := range alts {
				if err := walk(alt); err != nil {
					return err
				}
			}
		}
		return nil
	}
	return names, walk([]byte(pattern))
}
