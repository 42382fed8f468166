package idempotency_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

// TestMalformedRecord: a stored record that cannot be read fails Do closed, with a
// *CorruptEntryError naming the attribute, and fn does not run. Before, a number that did not parse
// became 0 (a record that never expires), an attribute of the wrong type became "" (no
// validation, no result: the zero value replayed), and an unknown status was retried as if
// expired until ErrInconsistentState.
func TestMalformedRecord(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table := e.newTable(t)
	exp := n(time.Now().Add(time.Hour).Unix())
	lease := n(time.Now().Add(time.Minute).UnixMilli())
	for _, tc := range []struct {
		name   string
		format idempotency.Format
		attrs  map[string]types.AttributeValue // over a live completed record
		attr   string
	}{
		{"expiration a string", idempotency.FormatPython, map[string]types.AttributeValue{"expiration": s("1790000000")}, "expiration"},
		{"expiration out of range", idempotency.FormatPython, map[string]types.AttributeValue{"expiration": &types.AttributeValueMemberN{Value: "1e100"}}, "expiration"},
		{"lease a string", idempotency.FormatPython, map[string]types.AttributeValue{"status": s("INPROGRESS"), "in_progress_expiration": s("soon")}, "in_progress_expiration"},
		{"unknown status", idempotency.FormatPython, map[string]types.AttributeValue{"status": s("EXPIRED")}, "status"},
		{"status missing", idempotency.FormatPython, map[string]types.AttributeValue{"status": nil}, "status"},
		{"status a number", idempotency.FormatPython, map[string]types.AttributeValue{"status": n(1)}, "status"},
		{"validation a number", idempotency.FormatPython, map[string]types.AttributeValue{"validation": n(1)}, "validation"},
		{"python data a map", idempotency.FormatPython, map[string]types.AttributeValue{"data": &types.AttributeValueMemberM{Value: map[string]types.AttributeValue{}}}, "data"},
		{"python data not JSON", idempotency.FormatPython, map[string]types.AttributeValue{"data": s("{not json")}, "data"},
		{"python data empty", idempotency.FormatPython, map[string]types.AttributeValue{"data": s("")}, "data"},
		{"typescript data a set", idempotency.FormatTypeScript, map[string]types.AttributeValue{"data": &types.AttributeValueMemberSS{Value: []string{"a"}}}, "data"},
		{"typescript data binary inside", idempotency.FormatTypeScript, map[string]types.AttributeValue{"data": &types.AttributeValueMemberL{Value: []types.AttributeValue{&types.AttributeValueMemberB{Value: []byte{1}}}}}, "data"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			key := "malformed-" + tc.name
			id, err := idempotency.KeyID(tc.format, key)
			if err != nil {
				t.Fatal(err)
			}
			item := map[string]types.AttributeValue{"id": s(id), "status": s("COMPLETED"), "expiration": exp, "in_progress_expiration": lease, "data": s(`"stored"`)}
			if tc.format == idempotency.FormatTypeScript {
				item["data"] = s("stored")
			}
			for k, v := range tc.attrs {
				if v == nil {
					delete(item, k)
				} else {
					item[k] = v
				}
			}
			e.putItem(t, table, item)
			store := newStore(t, e.client, table, dynamodb.WithFormat(tc.format))
			var ran atomic.Int32
			_, err = idempotency.Do(context.Background(), store, key, "payload", counted(&ran, value("fresh")))
			var re *idempotency.CorruptEntryError
			var pe *idempotency.PersistenceError
			if !errors.As(err, &re) || !errors.As(err, &pe) || re.Attribute != tc.attr || re.ID != id {
				t.Fatalf("Do = %v, want a *PersistenceError wrapping a *CorruptEntryError on %q of %s", err, tc.attr, id)
			}
			if ran.Load() != 0 {
				t.Error("fn ran over a malformed record")
			}
		})
	}
}

// TestInvalidOptions: an option that cannot be used fails Do with ErrInvalidOption before any
// store call, and fn does not run. Before, WithLocalCache(0) silently meant no cache, a zero
// or negative duration was used as given, and an unparsable kill switch meant "on".
func TestInvalidOptions(t *testing.T) {
	e := newEnv(t)
	table := e.newTable(t)
	good := newStore(t, e.client, table)
	for _, tc := range []struct {
		name  string
		store idempotency.Store
		opts  []idempotency.Option
		env   string
		want  string
	}{
		{"WithExpiry(0)", good, []idempotency.Option{idempotency.WithExpiry(0)}, "", "invalid option WithExpiry: want a positive duration, not 0s"},
		{"WithMaxLease(-1s)", good, []idempotency.Option{idempotency.WithMaxLease(-time.Second)}, "", "invalid option WithMaxLease: want a positive duration, not -1s"},
		{"WithDefaultLease(0)", good, []idempotency.Option{idempotency.WithDefaultLease(0)}, "", "invalid option WithDefaultLease: want a positive duration, not 0s"},
		{"WithStoreDeadlineMargin(-1ms)", good, []idempotency.Option{idempotency.WithStoreDeadlineMargin(-time.Millisecond)}, "", "invalid option WithStoreDeadlineMargin: want 0 or more, not -1ms"},
		{"WithHash(nil)", good, []idempotency.Option{idempotency.WithHash(nil)}, "", "invalid option WithHash: nil"},
		{"WithReplayHook(nil)", good, []idempotency.Option{idempotency.WithReplayHook(nil)}, "", "invalid option WithReplayHook: nil"},
		{"WithClock(nil)", good, []idempotency.Option{idempotency.WithClock(nil)}, "", "invalid option WithClock: nil"},
		{"nil Option", good, []idempotency.Option{nil}, "", "invalid option Option: nil"},
		{"nil Store", nil, nil, "", "nil Store"},
		{"kill switch unparsable", good, nil, "maybe", `invalid option POWERTOOLS_IDEMPOTENCY_DISABLED: "maybe"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv(idempotency.DisabledEnv, tc.env)
			e.calls.reset()
			var ran atomic.Int32
			_, err := idempotency.Do(context.Background(), tc.store, "k", nil, counted(&ran, value(1)), tc.opts...)
			if !errors.Is(err, toolkit.ErrInvalidOption) || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Do = %v, want ErrInvalidOption naming %s", err, tc.want)
			}
			if ran.Load() != 0 {
				t.Error("fn ran")
			}
			e.calls.expectCalls(t, tc.name, nil)
		})
	}
}

// TestEmptyKey: an empty key (an SQS message without a MessageId, say) is refused before any
// store call. Before, every such call shared one record and all but the first were skipped as
// replays.
func TestEmptyKey(t *testing.T) {
	store := idempotencytest.NewStore()
	ran := 0
	for i := 0; i < 2; i++ {
		_, err := idempotency.Do(context.Background(), store, idempotency.SQSKey(&events.SQSMessage{}), nil,
			func(context.Context) (int, error) { ran++; return 1, nil })
		if !errors.Is(err, idempotency.ErrEmptyKey) {
			t.Fatalf("call %d: err = %v, want ErrEmptyKey", i, err)
		}
	}
	if ran != 0 || len(store.Records()) != 0 {
		t.Errorf("fn ran %d times, %d records stored; want none", ran, len(store.Records()))
	}
}
