package completion

import (
	"encoding/json"
	"fmt"
)

// Outcome is how a record ended that package batch completed under its key without a result
// of its own (idempotency.WithoutResult): "" for a record handled, Sunk for one handed to a
// failure sink. idempotency.Do stores a non-empty Outcome, even under WithoutResult, as the
// entry's data, {"outcome":"sunk"}, with the status COMPLETED: every Powertools edition reads
// such an entry as a completion whose result is that object (a JSON string for Python, a map
// for TypeScript), and nothing runs the record again; package batch, replaying it, reads the
// outcome back and says that the record was sunk.
type Outcome string

// Sunk is the outcome of a record the sink took.
const Sunk Outcome = "sunk"

// MarshalJSON writes {"outcome":"sunk"}, or {} for no outcome.
func (o Outcome) MarshalJSON() ([]byte, error) {
	if o == "" {
		return []byte("{}"), nil
	}
	return json.Marshal(struct {
		Outcome string `json:"outcome"`
	}{string(o)})
}

// UnmarshalJSON reads a stored result: an object whose "outcome" is a string gives that
// outcome; any other object (a result another function stored under the key) gives none.
// What is not an object is an error, as for the struct{} result batch gave Do before.
func (o *Outcome) UnmarshalJSON(b []byte) error {
	var v struct {
		Outcome json.RawMessage `json:"outcome"`
	}
	if err := json.Unmarshal(b, &v); err != nil {
		return fmt.Errorf("idempotency: stored outcome: %w", err)
	}
	*o = ""
	var s string
	if len(v.Outcome) > 0 && json.Unmarshal(v.Outcome, &s) == nil {
		*o = Outcome(s)
	}
	return nil
}
