package batch_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/kafkalambda/toolkit/batch"
)

// FuzzReadEnvelope: ReadEnvelope never panics on what a queue or topic hands back, an
// envelope it accepts gives a record without panicking, and writing it again reads back equal.
func FuzzReadEnvelope(f *testing.F) {
	f.Add([]byte(`{"version":1,"source":"kafka","topic":"orders","partition":3,"offset":42,"timestamp":"2026-01-15T10:00:00Z","timestampType":"CREATE_TIME","key":"azE=","value":"djE=","headers":[{"key":"h","value":"AP8="}],"error":"bad","permanent":true,"attempts":1,"firstAttempt":"2026-01-15T10:00:01Z","failedAt":"2026-01-15T10:00:01Z"}`))
	f.Add([]byte(`{"version":1,"source":"kafka","topic":"orders","partition":0,"offset":1,"key":null,"tombstone":true,"error":"x","permanent":false,"attempts":3,"firstAttempt":"0001-01-01T00:00:00Z","failedAt":"0001-01-01T00:00:00Z"}`))
	f.Add([]byte(`{"version":1,"source":"sqs","message":{"messageId":"m-1","body":"hello","attributes":{"MessageGroupId":"g"}},"error":"x","permanent":true,"attempts":1,"firstAttempt":"2026-01-15T10:00:00Z","failedAt":"2026-01-15T10:00:00Z"}`))
	f.Add([]byte(`{"version":2}`))
	f.Add([]byte(`{"version":1,"key":"not base64!"}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, data []byte) {
		e, err := batch.ReadEnvelope(data)
		if err != nil {
			return
		}
		_ = e.Record()
		out, err := json.Marshal(e)
		if err != nil {
			t.Fatalf("an accepted envelope does not marshal: %v", err)
		}
		again, err := batch.ReadEnvelope(out)
		if err != nil {
			t.Fatalf("written envelope does not read back: %v\n%s", err, out)
		}
		if !reflect.DeepEqual(normalizeEnvelope(e), normalizeEnvelope(again)) {
			t.Fatalf("round trip changed the envelope\nbefore %+v\nafter  %+v", e, again)
		}
	})
}

// normalizeEnvelope drops what JSON cannot keep apart: time zones (instants compare equal)
// and the monotonic clock.
func normalizeEnvelope(e *batch.Envelope) *batch.Envelope {
	c := *e
	if c.Timestamp != nil {
		ts := c.Timestamp.UTC()
		c.Timestamp = &ts
	}
	c.FirstAttempt, c.FailedAt = c.FirstAttempt.UTC(), c.FailedAt.UTC()
	return &c
}
