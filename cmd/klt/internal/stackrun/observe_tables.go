package stackrun

import (
	"encoding/json"
	"fmt"
	"net/http"
	"sort"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// tableObserver reads the functions' writes to DynamoDB, as the proxy saw them, into the
// ledger: PutItem, UpdateItem, DeleteItem, BatchWriteItem and TransactWriteItems that the
// server applied, each with the input record it belongs to, and the conditional writes the
// server refused as Repeats (a write that finds its record's item already there is the
// record coming again).
//
// The record is read from the item (its key for UpdateItem and DeleteItem):
//   - an attribute the caller names for the table (KeyAttributes) holding
//     topic-partition-offset;
//   - else the idempotency store's entry key, "<prefix>#<digest of KafkaKey>" in any string
//     attribute, matched against the digests of the records klt produced (ledger.byHash); an
//     entry's status tells its claim (INPROGRESS), completion (COMPLETED, or an UpdateItem
//     that sets it) and release (DeleteItem) apart;
//   - else any string attribute that is exactly topic-partition-offset of a record klt
//     produced.
//
// A write none of these name is unattributed: counted, never dropped.
type tableObserver struct {
	l       *ledger.Ledger
	tables  map[string]string   // table name -> logical ID
	keys    map[string][]string // logical ID -> attributes holding topic-partition-offset
	schemas map[string][]string // logical ID -> the table's key attributes
	notes
}

func newTableObserver(l *ledger.Ledger, tables map[string]string, keys, schemas map[string][]string) *tableObserver {
	return &tableObserver{l: l, tables: tables, keys: keys, schemas: schemas}
}

// target is what a write wrote: its item's key, as compact JSON of the key attributes
// (the whole item when the table's key is not known).
func (o *tableObserver) target(tableID string, w write) string {
	it := w.item
	if names := o.schemas[tableID]; len(names) > 0 && w.op == "PutItem" {
		it = item{}
		for _, n := range names {
			it[n] = w.item[n]
		}
	}
	b, err := json.Marshal(it)
	if err != nil {
		return string(w.body)
	}
	return string(b)
}

// item is a DynamoDB item (or key) in the JSON protocol: attribute -> {"S": "..."}.
type item map[string]map[string]json.RawMessage

// str returns the attribute's string value (type S).
func (it item) str(name string) (string, bool) {
	v, ok := it[name]["S"]
	if !ok {
		return "", false
	}
	var s string
	return s, json.Unmarshal(v, &s) == nil
}

// write is one item a request writes.
type write struct {
	table, op string
	item      item // the item (PutItem) or its key
	values    item // UpdateItem's ExpressionAttributeValues, as an item of ":name"
	body      json.RawMessage
}

func (o *tableObserver) exchange(x faultproxy.Exchange) {
	if x.Fault != faultproxy.NoFault || x.Err != nil {
		return // the server never saw it
	}
	if x.RequestTruncated {
		o.add("%s from %s: a request of more than %d bytes, not read", x.Target, x.Client, len(x.Request))
		o.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectTable, Resource: x.Operation, At: x.At, Why: "request too large to read"})
		return
	}
	writes, err := readWrites(x.Operation, x.Request)
	if err != nil {
		o.add("%s from %s: %v", x.Target, x.Client, err)
		return
	}
	if writes == nil {
		return // not a write
	}
	applied, repeat := x.Status == http.StatusOK, conditionFailed(x.Status, x.Response)
	if !applied && !repeat {
		return // refused for another reason: nothing happened
	}
	unprocessed := map[string]bool{}
	if applied && x.Operation == "BatchWriteItem" {
		unprocessed = unprocessedOf(x.Response)
	}
	for _, w := range writes {
		if unprocessed[string(w.body)] {
			continue // not written: the caller retries it
		}
		o.record(x, w, repeat)
	}
}

// record writes one write into the ledger.
func (o *tableObserver) record(x faultproxy.Exchange, w write, repeat bool) {
	tableID := o.tables[w.table]
	if tableID == "" {
		tableID = w.table
	}
	id, via, ok := o.identify(tableID, w.item)
	if !ok {
		o.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectTable, Resource: tableID, At: x.At,
			Why: fmt.Sprintf("%s by %s: no attribute names an input record", w.op, x.Client)})
		return
	}
	op := w.op
	if via == ledger.ViaIdempotencyKey {
		op = entryOp(w)
	}
	o.l.AddEffect(ledger.Effect{Kind: ledger.EffectTable, Resource: tableID, Function: x.Client, Record: id, Via: via, Op: op,
		Repeat: repeat, At: x.At.Add(x.Duration), Body: capBody(w.body), Target: o.target(tableID, w)})
}

// entryOp tells an idempotency entry's write: its claim, completion or release, and the
// completion of a record sent to a sink (opSunk) from the others.
func entryOp(w write) string {
	switch {
	case w.op == "DeleteItem":
		return ledger.OpRelease
	case w.op == "UpdateItem":
		completed, sunk := false, false
		for name := range w.values {
			s, _ := w.values.str(name)
			completed = completed || s == "COMPLETED"
			sunk = sunk || sunkData(w.values[name])
		}
		switch {
		case completed && sunk:
			return ledger.OpSunk
		case completed:
			return ledger.OpComplete
		}
		return w.op
	}
	if s, _ := w.item.str("status"); s == "COMPLETED" {
		if sunkData(w.item["data"]) {
			return ledger.OpSunk
		}
		return ledger.OpComplete
	}
	return ledger.OpClaim
}

// sunkData reports whether an entry's data attribute is the outcome package batch stores
// for a record it sent to its sink, {"outcome":"sunk"} (idempotency's Outcome): a JSON
// string in Powertools Python's layout, a map in TypeScript's.
func sunkData(v map[string]json.RawMessage) bool {
	var outcome struct {
		Outcome *string `json:"outcome"`
	}
	if raw, ok := v["S"]; ok {
		var s string
		return json.Unmarshal(raw, &s) == nil && json.Unmarshal([]byte(s), &outcome) == nil &&
			outcome.Outcome != nil && *outcome.Outcome == "sunk"
	}
	if raw, ok := v["M"]; ok {
		var m item
		if json.Unmarshal(raw, &m) != nil || len(m) != 1 {
			return false
		}
		s, ok := m.str("outcome")
		return ok && s == "sunk"
	}
	return false
}

// identify finds the input record an item names, and how.
func (o *tableObserver) identify(tableID string, it item) (ledger.RecordID, string, bool) {
	for _, a := range o.keys[tableID] {
		if s, ok := it.str(a); ok {
			if id, ok := parseKafkaKey(s); ok {
				return id, ledger.ViaItemKey, true
			}
		}
	}
	names := make([]string, 0, len(it))
	for n := range it {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, ok := it.str(n)
		if !ok {
			continue
		}
		if i := strings.LastIndexByte(s, '#'); i >= 0 {
			if id, ok := o.l.ByHash(s[i+1:]); ok {
				return id, ledger.ViaIdempotencyKey, true
			}
		}
		if id, ok := parseKafkaKey(s); ok {
			if _, known := o.l.Input(id); known {
				return id, ledger.ViaItemKey, true
			}
		}
	}
	return ledger.RecordID{}, "", false
}

// parseKafkaKey reads "topic-partition-offset" (idempotency.KafkaKey), splitting at the last
// two dashes (a topic may hold dashes).
func parseKafkaKey(s string) (ledger.RecordID, bool) {
	j := strings.LastIndexByte(s, '-')
	if j <= 0 {
		return ledger.RecordID{}, false
	}
	i := strings.LastIndexByte(s[:j], '-')
	if i <= 0 {
		return ledger.RecordID{}, false
	}
	p, err1 := strconv.ParseInt(s[i+1:j], 10, 32)
	off, err2 := strconv.ParseInt(s[j+1:], 10, 64)
	if err1 != nil || err2 != nil || p < 0 || off < 0 {
		return ledger.RecordID{}, false
	}
	return ledger.RecordID{Topic: s[:i], Partition: int32(p), Offset: off}, true
}

// readWrites returns the items a request writes (nil for a request that writes nothing).
func readWrites(op string, body []byte) ([]write, error) {
	switch op {
	case "PutItem", "UpdateItem", "DeleteItem":
		var r struct {
			TableName string
			Item, Key item
			Values    item `json:"ExpressionAttributeValues"`
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		it := r.Item
		if op != "PutItem" {
			it = r.Key
		}
		return []write{{table: r.TableName, op: op, item: it, values: r.Values, body: body}}, nil
	case "BatchWriteItem":
		var r struct {
			RequestItems map[string][]json.RawMessage
		}
		if err := json.Unmarshal(body, &r); err != nil {
			return nil, err
		}
		var out []write
		for table, reqs := range r.RequestItems {
			for _, raw := range reqs {
				var q struct {
					PutRequest    *struct{ Item item }
					DeleteRequest *struct{ Key item }
				}
				if err := json.Unmarshal(raw, &q); err != nil {
					return nil, err
				}
				switch {
				case q.PutRequest != nil:
					out = append(out, write{table: table, op: "PutItem", item: q.PutRequest.Item, body: compact(raw)})
				case q.DeleteRequest != nil:
					out = append(out, write{table: table, op: "DeleteItem", item: q.DeleteRequest.Key, body: compact(raw)})
				}
			}
		}
		return out, nil
	case "TransactWriteItems":
		return readTransaction(body)
	}
	return nil, nil
}

// readTransaction returns the writes of a TransactWriteItems request (its ConditionChecks
// write nothing).
func readTransaction(body []byte) ([]write, error) {
	type part struct {
		TableName string
		Item, Key item
		Values    item `json:"ExpressionAttributeValues"`
	}
	var r struct {
		TransactItems []struct {
			Put, Update, Delete *part
		}
	}
	if err := json.Unmarshal(body, &r); err != nil {
		return nil, err
	}
	var out []write
	for _, t := range r.TransactItems {
		switch {
		case t.Put != nil:
			out = append(out, write{table: t.Put.TableName, op: "PutItem", item: t.Put.Item, body: body})
		case t.Update != nil:
			out = append(out, write{table: t.Update.TableName, op: "UpdateItem", item: t.Update.Key, values: t.Update.Values, body: body})
		case t.Delete != nil:
			out = append(out, write{table: t.Delete.TableName, op: "DeleteItem", item: t.Delete.Key, body: body})
		}
	}
	return out, nil
}

// conditionFailed reports whether the server refused a write because its condition failed:
// ConditionalCheckFailedException, or a transaction cancelled for a ConditionalCheckFailed.
func conditionFailed(status int, resp []byte) bool {
	if status != http.StatusBadRequest {
		return false
	}
	var r struct {
		Type    string                  `json:"__type"`
		Reasons []struct{ Code string } `json:"CancellationReasons"`
	}
	if json.Unmarshal(resp, &r) != nil {
		return false
	}
	code := r.Type[strings.LastIndexByte(r.Type, '#')+1:]
	if code == "ConditionalCheckFailedException" {
		return true
	}
	if code == "TransactionCanceledException" {
		for _, c := range r.Reasons {
			if c.Code == "ConditionalCheckFailed" {
				return true
			}
		}
	}
	return false
}

// unprocessedOf returns BatchWriteItem's UnprocessedItems, as compact JSON of each request.
func unprocessedOf(resp []byte) map[string]bool {
	var r struct {
		UnprocessedItems map[string][]json.RawMessage
	}
	out := map[string]bool{}
	if json.Unmarshal(resp, &r) != nil {
		return out
	}
	for _, reqs := range r.UnprocessedItems {
		for _, raw := range reqs {
			out[string(compact(raw))] = true
		}
	}
	return out
}

// compact re-encodes JSON so that two spellings of one request compare equal (map keys
// sorted).
func compact(raw json.RawMessage) json.RawMessage {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, err := json.Marshal(v)
	if err != nil {
		return raw
	}
	return b
}
