package idempotency_test

import (
	"bytes"
	"context"
	"crypto/md5"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// Interoperation with Powertools for AWS Lambda (TypeScript): the npm package
// @aws-lambda-powertools/idempotency, pinned in package.json, run by testdata/typescript.mjs
// against the same dynalite as the Go store.

// tsStep is one step of testdata/typescript.mjs.
type tsStep struct {
	Op          string   `json:"op"`
	Event       *tsEvent `json:"event,omitempty"`
	Validate    bool     `json:"validate,omitempty"`
	Crash       bool     `json:"crash,omitempty"`
	RemainingMs int64    `json:"remainingMs,omitempty"`
	Docs        []string `json:"docs,omitempty"`
}

type tsEvent struct {
	Key    string `json:"key"`
	Order  any    `json:"order,omitempty"`
	Result any    `json:"result,omitempty"`
}

// tsOutput is one line the script prints.
type tsOutput struct {
	Ran     bool            `json:"ran"`
	Crashed bool            `json:"crashed"`
	Result  json.RawMessage `json:"result"`
	Error   *struct {
		Name    string `json:"name"`
		Message string `json:"message"`
	} `json:"error"`
	IDs []string `json:"ids"`
}

// runTS runs the script's steps against table under prefix and returns its output lines.
func runTS(t *testing.T, e *env, table, prefix string, steps ...tsStep) []tsOutput {
	t.Helper()
	node, root, _, err := standin.Locate("@aws-lambda-powertools/idempotency", "package.json")
	if err != nil {
		t.Fatal(err)
	}
	req, err := json.Marshal(map[string]any{"endpoint": e.srv.Endpoint(), "table": table, "prefix": prefix, "steps": steps})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, node, filepath.Join(root, "idempotency", "testdata", "typescript.mjs"))
	cmd.Stdin = bytes.NewReader(req)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("typescript.mjs: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	var outs []tsOutput
	dec := json.NewDecoder(&stdout)
	for dec.More() {
		var o tsOutput
		if err := dec.Decode(&o); err != nil {
			t.Fatalf("typescript.mjs output: %v\nstderr:\n%s", err, stderr.String())
		}
		outs = append(outs, o)
	}
	if len(outs) != len(steps) {
		t.Fatalf("typescript.mjs printed %d lines for %d steps\nstderr:\n%s", len(outs), len(steps), stderr.String())
	}
	return outs
}

type tsOrder struct {
	ID     string  `json:"id"`
	Amount float64 `json:"amount"`
	// Keys that JSON.stringify(deepSort()) and json.dumps(sort_keys=True) order differently,
	// and text that Python escapes and JavaScript does not.
	Zeta  int    `json:"Zeta"`
	Alpha string `json:"alpha"`
}

type tsReceipt struct {
	ChargeID string         `json:"chargeId"`
	Amount   float64        `json:"amount"`
	Items    []any          `json:"items"`
	Nested   map[string]any `json:"nested"`
}

func TestTypeScriptInterop(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	table := e.newTable(t)
	const prefix = "orders-fn"
	store := newStore(t, e.client, table, dynamodb.WithFormat(idempotency.FormatTypeScript))
	ctx := context.Background()
	opt := idempotency.WithKeyPrefix(prefix)
	order := tsOrder{ID: "o-1", Amount: 25.5, Zeta: 1, Alpha: "crème brûlée"}
	receipt := tsReceipt{ChargeID: "ch-1", Amount: 25.5, Items: []any{1.0, "x", true, nil}, Nested: map[string]any{"ok": true}}
	never := func(context.Context) (tsReceipt, error) {
		t.Error("fn ran over a record that should be replayed")
		return tsReceipt{}, nil
	}
	tsID := func(key string) string {
		id, err := idempotency.KeyID(idempotency.FormatTypeScript, key, opt)
		if err != nil {
			t.Fatal(err)
		}
		return id
	}

	t.Run("Go replays what TypeScript stored", func(t *testing.T) {
		out := runTS(t, e, table, prefix, tsStep{Op: "invoke", Validate: true,
			Event: &tsEvent{Key: "orders-0-1", Order: order, Result: receipt}})
		if !out[0].Ran || out[0].Error != nil {
			t.Fatalf("TypeScript invocation = %+v, want it run", out[0])
		}
		it := e.item(t, table, tsID("orders-0-1"))
		if it == nil {
			t.Fatalf("no item under %q, the ID Go computes: TypeScript stored another", tsID("orders-0-1"))
		}
		if _, ok := it["data"].(*types.AttributeValueMemberM); !ok {
			t.Errorf("TypeScript's data = %#v, want a map (M)", it["data"])
		}
		got, err := idempotency.Do(ctx, store, "orders-0-1", order, never, opt)
		if err != nil || !reflect.DeepEqual(got, receipt) {
			t.Errorf("Go Do over TypeScript's record = %+v, %v; want %+v replayed", got, err, receipt)
		}
		other := order
		other.Amount = 30
		if _, err := idempotency.Do(ctx, store, "orders-0-1", other, never, opt); !errors.Is(err, idempotency.ErrPayloadMismatch) {
			t.Errorf("Go Do with another order over TypeScript's record: %v, want ErrPayloadMismatch", err)
		}
		// The Python format does not find it: another ID.
		py := newStore(t, e.client, table)
		ran := false
		if _, err := idempotency.Do(ctx, py, "orders-0-1", order, func(context.Context) (int, error) { ran = true; return 0, nil }, opt); err != nil || !ran {
			t.Errorf("Python-format Do = %v (ran %v), want its own record", err, ran)
		}
	})

	t.Run("TypeScript replays what Go stored", func(t *testing.T) {
		for _, tc := range []struct {
			key    string
			result any
		}{
			{"orders-0-2", receipt},
			{"orders-0-3", "sent"},
			{"orders-0-4", 42.5},
			{"orders-0-5", []any{"a", map[string]any{"b": nil}}},
		} {
			got, err := idempotency.Do(ctx, store, tc.key, order, func(context.Context) (any, error) { return tc.result, nil }, opt)
			if err != nil {
				t.Fatal(err)
			}
			out := runTS(t, e, table, prefix,
				tsStep{Op: "invoke", Validate: true, Event: &tsEvent{Key: tc.key, Order: order, Result: "from typescript"}},
				tsStep{Op: "invoke", Validate: true, Event: &tsEvent{Key: tc.key, Order: tsOrder{ID: "o-other"}, Result: "from typescript"}},
				tsStep{Op: "invoke", Event: &tsEvent{Key: tc.key, Order: tsOrder{ID: "o-other"}, Result: "from typescript"}},
			)
			want, _ := json.Marshal(got)
			if out[0].Ran || out[0].Error != nil || !sameJSONText(out[0].Result, want) {
				t.Errorf("%s: TypeScript over Go's record = ran %v, %s, %+v; want %s replayed", tc.key, out[0].Ran, out[0].Result, out[0].Error, want)
			}
			if out[1].Ran || out[1].Error == nil || out[1].Error.Name != "IdempotencyValidationError" {
				t.Errorf("%s: TypeScript with another order = %+v, want IdempotencyValidationError", tc.key, out[1])
			}
			if out[2].Ran || !sameJSONText(out[2].Result, want) {
				t.Errorf("%s: TypeScript without validation = %+v, want %s replayed", tc.key, out[2], want)
			}
		}
		// Go's item has the attributes and types of TypeScript's, and the owner, which
		// TypeScript does not write.
		goItem, tsItem := e.item(t, table, tsID("orders-0-2")), e.item(t, table, tsID("orders-0-1"))
		if str(t, goItem, "owner") == "" {
			t.Error("Go's item has an empty owner")
		}
		delete(goItem, "owner")
		if got, want := attrTypes(goItem), attrTypes(tsItem); got != want {
			t.Errorf("Go's item: %s\nTypeScript's: %s", got, want)
		}
	})

	t.Run("in-progress records", func(t *testing.T) { tsInProgress(t, e, table, prefix, store, opt, never) })
}

func sameJSONText(a, b []byte) bool {
	var x, y any
	if json.Unmarshal(a, &x) != nil || json.Unmarshal(b, &y) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}

// attrTypes describes an item's attribute names and types, values left out.
func attrTypes(it map[string]types.AttributeValue) string {
	var b strings.Builder
	for _, name := range attrNames(it) {
		fmt.Fprintf(&b, "%s:%T ", name, it[name])
	}
	return b.String()
}

// TestTypeScriptHash compares the IDs Go computes in FormatTypeScript with those the npm
// package computes, for documents that exercise JSON.stringify(deepSort()): key order
// (case-insensitive, array indices first, duplicates, __proto__), number formatting and
// string escaping.
func TestTypeScriptHash(t *testing.T) {
	t.Parallel()
	docs := []string{
		`"orders-0-1"`, `""`, `"ü é ß 日本 😀"`, `"\u2028\u2029\u007f\u0000\u001f\b\t\n\f\r\"\\/"`,
		`0`, `-0`, `1`, `-1`, `0.1`, `1.0`, `1e21`, `1e20`, `123456789012345678901`, `1e-6`, `1e-7`,
		`1.5e-7`, `5e-324`, `1.7976931348623157e308`, `1e400`, `-1e400`, `1e-400`, `9007199254740993`,
		`0.000001234`, `100`, `1.25e+2`, `12345678.9`, `true`, `false`, `null`, `[]`, `{}`,
		`{"b":1,"a":2}`, `{"B":1,"a":2,"A":3,"b":4}`, `{"a":1,"A":2}`, `{"A":1,"a":2}`,
		`{"10":1,"9":2,"a":3,"01":4,"4294967294":5,"4294967295":6,"-1":7,"1.5":8}`,
		`{"__proto__":{"x":1},"y":2}`, `{"__proto__":3,"y":2}`, `{"a":1,"a":2,"b":3}`,
		`{"_":1,"Z":2,"z":3,"[":4,"a":5}`, `{"é":1,"E":2,"f":3,"É":4}`, `{"ΑΣ":1,"ας":2,"ασ":3,"Σ":4}`,
		`{"İ":1,"i":2,"i̇":3,"j":4}`, `{"😀":1,"\uffff":2,"\ud7ff":3}`,
		`{"nested":{"Y":[{"b":1,"a":[{"d":1,"C":2}]}],"x":null},"A":[3,2,1]}`,
		`{"order":{"id":"o-1","amount":25.5,"Zeta":1,"alpha":"crème brûlée"}}`,
	}
	rng := rand.New(rand.NewPCG(8, 2026))
	for range 300 {
		docs = append(docs, randomJSON(rng, 0))
	}
	e := newEnv(t)
	const prefix = "fn"
	out := runTS(t, e, "unused", prefix, tsStep{Op: "hash", Docs: docs})
	for i, doc := range docs {
		text, err := idempotency.JSJSON(json.RawMessage(doc))
		if err != nil {
			t.Errorf("JSJSON(%s): %v", doc, err)
			continue
		}
		sum := md5.Sum(text)
		got := prefix + "#" + base64.StdEncoding.EncodeToString(sum[:])
		if got != out[0].IDs[i] {
			t.Errorf("ID of %s = %s (hashed text %s), TypeScript: %s", doc, got, text, out[0].IDs[i])
		}
	}
	// A string key through Do's own path.
	id, err := idempotency.KeyID(idempotency.FormatTypeScript, "orders-0-1", idempotency.WithKeyPrefix(prefix))
	if err != nil || id != out[0].IDs[0] {
		t.Errorf("KeyID(TypeScript, orders-0-1) = %s, %v; TypeScript: %s", id, err, out[0].IDs[0])
	}
}

var randomKeys = []string{"a", "A", "b", "B", "_", "z", "Z", "0", "1", "2", "10", "01", "é", "É", "Σ", "σ", "ς", "ΑΣ", "key", "Key", "KEY", "k2", "k10", "😀", "日本", "__proto__", "İ", "ß", ""}

// randomJSON returns a random JSON document with the keys, strings and numbers that
// serializers disagree on.
func randomJSON(rng *rand.Rand, depth int) string {
	n := rng.IntN(8)
	if depth > 3 {
		n = rng.IntN(5)
	}
	switch n {
	case 0:
		return "null"
	case 1:
		return strconv.FormatBool(rng.IntN(2) == 0)
	case 2:
		return strconv.FormatFloat((rng.Float64()-0.5)*pow10(rng.IntN(50)-25), 'g', -1, 64)
	case 3:
		return strconv.Itoa(rng.IntN(2000) - 1000)
	case 4:
		b, _ := json.Marshal(randomKeys[rng.IntN(len(randomKeys))] + string(rune(rng.IntN(0x3000))))
		return string(b)
	case 5, 6:
		var parts []string
		for range rng.IntN(12) {
			k, _ := json.Marshal(randomKeys[rng.IntN(len(randomKeys))])
			parts = append(parts, string(k)+":"+randomJSON(rng, depth+1))
		}
		return "{" + strings.Join(parts, ",") + "}"
	default:
		var parts []string
		for range rng.IntN(5) {
			parts = append(parts, randomJSON(rng, depth+1))
		}
		return "[" + strings.Join(parts, ",") + "]"
	}
}

func pow10(n int) float64 {
	f := 1.0
	for ; n > 0; n-- {
		f *= 10
	}
	for ; n < 0; n++ {
		f /= 10
	}
	return f
}

// tsInProgress is the subtest "in-progress records".
func tsInProgress(t *testing.T, e *env, table, prefix string, store idempotency.Store, opt idempotency.Option, never func(context.Context) (tsReceipt, error)) {
	ctx := context.Background()
	// TypeScript crashes while it holds the key: Go waits, then takes over after the lease.
	out := runTS(t, e, table, prefix, tsStep{Op: "invoke", Crash: true, RemainingMs: 60_000,
		Event: &tsEvent{Key: "orders-1-1", Result: "never stored"}})
	if !out[0].Crashed {
		t.Fatalf("TypeScript = %+v, want a crash", out[0])
	}
	if _, err := idempotency.Do(ctx, store, "orders-1-1", nil, never, opt); !errors.Is(err, idempotency.ErrInProgress) {
		t.Errorf("Go Do while TypeScript holds the key: %v, want ErrInProgress", err)
	}
	later := idempotency.WithClock(func() time.Time { return time.Now().Add(2 * time.Minute) })
	got, err := idempotency.Do(ctx, store, "orders-1-1", nil, func(context.Context) (string, error) { return "taken over", nil }, opt, later)
	if err != nil || got != "taken over" {
		t.Errorf("Go Do after TypeScript's lease = %q, %v; want it run", got, err)
	}

	// Go holds the key: TypeScript is refused.
	_, err = idempotency.Do(ctx, store, "orders-1-2", nil, func(context.Context) (string, error) {
		out := runTS(t, e, table, prefix, tsStep{Op: "invoke", Event: &tsEvent{Key: "orders-1-2", Result: "ts"}})
		if out[0].Ran || out[0].Error == nil || out[0].Error.Name != "IdempotencyAlreadyInProgressError" {
			t.Errorf("TypeScript while Go holds the key = %+v, want IdempotencyAlreadyInProgressError", out[0])
		}
		return "go", nil
	}, opt)
	if err != nil {
		t.Fatal(err)
	}

	// Go holds the key with an expiry shorter than its lease: TypeScript, whose condition
	// takes over an expired record whatever its lease, is still refused once the expiry
	// has passed, because Go writes the expiration no earlier than the lease's end.
	_, err = idempotency.Do(ctx, store, "orders-1-3", nil, func(context.Context) (string, error) {
		time.Sleep(2200 * time.Millisecond)
		out := runTS(t, e, table, prefix, tsStep{Op: "invoke", Event: &tsEvent{Key: "orders-1-3", Result: "ts"}})
		if out[0].Ran || out[0].Error == nil || out[0].Error.Name != "IdempotencyAlreadyInProgressError" {
			t.Errorf("TypeScript 2.2 s into Go's lease, past its 1 s expiry = %+v, want IdempotencyAlreadyInProgressError", out[0])
		}
		return "go", nil
	}, opt, idempotency.WithExpiry(time.Second))
	if err != nil {
		t.Fatal(err)
	}
}
