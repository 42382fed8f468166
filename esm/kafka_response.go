package esm

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
)

// responseError is a function response that a Kafka mapping with ReportBatchItemFailures
// cannot read as a partial batch response. AWS: "Any invalid topic-partition_number or offset
// returned that was not present in the invoked event will be treated as failure and entire
// batch will be retried"; the mapping does the same for every other malformed response.
type responseError struct {
	Reason string // what is wrong, with the JSON path
}

func (e *responseError) Error() string {
	return "esm: partial batch response: " + e.Reason
}

// parseKafkaResponse reads the function's response as a Kafka partial batch response
// (esm-contract.md §3.3) for an invocation that held, for each partition ("topic-N", the key
// of the event's "records" object), the records at the given offsets, sorted ascending.
//
// It returns, for each partition the response names, the lowest offset it reports: the
// partition resumes from there, its records before it are done. A partition it does not name
// is done. An empty payload, null, an object without batchItemFailures, or batchItemFailures
// null or [] name no partition: the whole batch succeeded. Any other response (invalid JSON, a
// value that is not an object, an item without a valid itemIdentifier, a partition or offset
// that was not in the event) is a *responseError: the whole batch failed. Both "partition"
// (the current AWS documentation) and "topic-partition" (an earlier version of the same page)
// name the partition.
func parseKafkaResponse(payload []byte, offsets map[string][]int64) (from map[string]int64, err error) {
	payload = bytes.TrimSpace(payload)
	if len(payload) == 0 || string(payload) == "null" {
		return nil, nil
	}
	if !json.Valid(payload) {
		return nil, &responseError{Reason: "not valid JSON"}
	}
	if payload[0] != '{' {
		return nil, &responseError{Reason: fmt.Sprintf("want a JSON object or null, got %s", describeJSON(payload))}
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(payload, &top); err != nil {
		return nil, &responseError{Reason: err.Error()}
	}
	raw, ok := top["batchItemFailures"]
	if !ok || string(raw) == "null" {
		return nil, nil
	}
	if raw[0] != '[' {
		return nil, &responseError{Reason: fmt.Sprintf("batchItemFailures: want an array, got %s", describeJSON(raw))}
	}
	var items []json.RawMessage
	if err := json.Unmarshal(raw, &items); err != nil {
		return nil, &responseError{Reason: "batchItemFailures: " + err.Error()}
	}
	for i, item := range items {
		path := fmt.Sprintf("batchItemFailures[%d]", i)
		id, off, err := parseKafkaItem(item, path, offsets)
		if err != nil {
			return nil, err
		}
		if from == nil {
			from = map[string]int64{}
		}
		if f, ok := from[id]; !ok || off < f {
			from[id] = off
		}
	}
	return from, nil
}

func parseKafkaItem(item json.RawMessage, path string, offsets map[string][]int64) (string, int64, error) {
	if item[0] != '{' {
		return "", 0, &responseError{Reason: fmt.Sprintf("%s: want an object, got %s", path, describeJSON(item))}
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(item, &obj); err != nil {
		return "", 0, &responseError{Reason: path + ": " + err.Error()}
	}
	ident, ok := obj["itemIdentifier"]
	if !ok || ident[0] != '{' {
		got := "nothing"
		if ok {
			got = describeJSON(ident)
		}
		return "", 0, &responseError{Reason: fmt.Sprintf("%s.itemIdentifier: want an object, got %s", path, got)}
	}
	path += ".itemIdentifier"
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(ident, &fields); err != nil {
		return "", 0, &responseError{Reason: path + ": " + err.Error()}
	}
	var partition string
	var named bool
	for _, key := range []string{"partition", "topic-partition"} {
		v, ok := fields[key]
		if !ok {
			continue
		}
		var s string
		if v[0] != '"' || json.Unmarshal(v, &s) != nil {
			return "", 0, &responseError{Reason: fmt.Sprintf("%s.%s: want a string, got %s", path, key, describeJSON(v))}
		}
		if named && s != partition {
			return "", 0, &responseError{Reason: fmt.Sprintf("%s: partition %q and topic-partition %q disagree", path, partition, s)}
		}
		partition, named = s, true
	}
	if !named {
		return "", 0, &responseError{Reason: path + ": no partition"}
	}
	held, ok := offsets[partition]
	if !ok {
		return "", 0, &responseError{Reason: fmt.Sprintf("%s.partition: %q was not in the event (it held %s)", path, partition, heldPartitions(offsets))}
	}
	v, ok := fields["offset"]
	if !ok {
		return "", 0, &responseError{Reason: path + ": no offset"}
	}
	off, err := strconv.ParseInt(string(v), 10, 64)
	if err != nil {
		return "", 0, &responseError{Reason: fmt.Sprintf("%s.offset: want an integer, got %s", path, describeJSON(v))}
	}
	if !containsOffset(held, off) {
		return "", 0, &responseError{Reason: fmt.Sprintf("%s.offset: %d of %s was not in the event", path, off, partition)}
	}
	return partition, off, nil
}

func containsOffset(sorted []int64, off int64) bool {
	lo, hi := 0, len(sorted)
	for lo < hi {
		mid := int(uint(lo+hi) >> 1)
		if sorted[mid] < off {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return lo < len(sorted) && sorted[lo] == off
}

// heldPartitions lists the partitions of an event, for an error message.
func heldPartitions(offsets map[string][]int64) string {
	ids := make([]string, 0, len(offsets))
	for id := range offsets {
		ids = append(ids, strconv.Quote(id))
	}
	slices.Sort(ids)
	return strings.Join(ids, ", ")
}

// describeJSON quotes a JSON value for an error message, shortened.
func describeJSON(v []byte) string {
	const max = 40
	if len(v) > max {
		return strconv.Quote(string(v[:max])) + "..."
	}
	return strconv.Quote(string(v))
}
