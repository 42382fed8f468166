package esm

import (
	"errors"
	"testing"
)

// TestParseKafkaResponse checks the partial batch response rules, including the older
// "topic-partition" key.
//
// AWS (https://docs.aws.amazon.com/lambda/latest/dg/kafka-retry-configurations.html#kafka-partial-batch-response):
// "If you return an empty valid JSON or null, the event source mapping will consider a batch as
// successfully processed. Any invalid topic-partition_number or offset returned that was not
// present in the invoked event will be treated as failure and entire batch will be retried."
func TestParseKafkaResponse(t *testing.T) {
	offsets := map[string][]int64{"t-1": {3, 4, 7, 9}, "t-3": {0, 1}}
	for _, tc := range []struct {
		in     string
		from   int64
		failed bool
		bad    bool
	}{
		{in: ``},
		{in: ` null `},
		{in: `{}`},
		{in: `{"batchItemFailures":null}`},
		{in: `{"batchItemFailures":[]}`},
		{in: `{"other":1}`},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":7}}]}`, from: 7, failed: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":9}},{"itemIdentifier":{"topic-partition":"t-1","offset":4}}]}`, from: 4, failed: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","topic-partition":"t-1","offset":3}}]}`, from: 3, failed: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","topic-partition":"t-2","offset":3}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":5}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-2","offset":3}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":"3"}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":3.0}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1"}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":{"offset":3}}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":null}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":"t-1-3"}]}`, bad: true},
		{in: `{"batchItemFailures":[{}]}`, bad: true},
		{in: `{"batchItemFailures":[null]}`, bad: true},
		{in: `{"batchItemFailures":{}}`, bad: true},
		{in: `{"batchItemFailures":[`, bad: true},
		{in: `"ok"`, bad: true},
		{in: `[]`, bad: true},
	} {
		got, err := parseKafkaResponse([]byte(tc.in), offsets)
		from, failed := got["t-1"], len(got) > 0
		var re *responseError
		if tc.bad {
			if !errors.As(err, &re) {
				t.Errorf("%s: err = %v, want a *responseError", tc.in, err)
			}
			continue
		}
		if err != nil || failed != tc.failed || from != tc.from {
			t.Errorf("%s: = %d %v %v, want %d %v", tc.in, from, failed, err, tc.from, tc.failed)
		}
	}
}

// FuzzKafkaResponse checks that the partial batch response parser never panics, and that what
// it accepts as a failure names an offset of the batch.
func FuzzKafkaResponse(f *testing.F) {
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":7}}]}`))
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":{"topic-partition":"t-1","offset":4}}]}`))
	f.Add([]byte(`null`))
	f.Add([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-1","offset":9223372036854775807}}]}`))
	offsets := map[string][]int64{"t-1": {3, 4, 7, 9}, "t-3": {0, 1}}
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := parseKafkaResponse(data, offsets)
		if err != nil {
			var re *responseError
			if !errors.As(err, &re) || re.Error() == "" {
				t.Fatalf("error %v is not a *responseError", err)
			}
			return
		}
		for id, from := range got {
			if !containsOffset(offsets[id], from) {
				t.Fatalf("from %d is not an offset of %s in the batch", from, id)
			}
		}
	})
}

// TestParseKafkaResponseMultiPartition checks that the lowest offset is kept per partition of a
// multi-partition event, and that the partitions not named are absent (done).
//
// AWS (kafka-retry-configurations.html#kafka-partial-batch-response): each item's
// itemIdentifier is {"partition": "topic-partition_number", "offset": number}.
func TestParseKafkaResponseMultiPartition(t *testing.T) {
	offsets := map[string][]int64{"t-1": {3, 4, 7, 9}, "t-3": {0, 1}, "t-4": {5}}
	got, err := parseKafkaResponse([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-3","offset":1}},`+
		`{"itemIdentifier":{"partition":"t-1","offset":9}},{"itemIdentifier":{"partition":"t-3","offset":0}},{"itemIdentifier":{"partition":"t-1","offset":7}}]}`), offsets)
	if err != nil || len(got) != 2 || got["t-1"] != 7 || got["t-3"] != 0 {
		t.Errorf("got %v, %v; want t-1 from 7, t-3 from 0, t-4 not named", got, err)
	}
	// An offset of another partition of the event is not an offset of this one.
	if _, err := parseKafkaResponse([]byte(`{"batchItemFailures":[{"itemIdentifier":{"partition":"t-4","offset":3}}]}`), offsets); err == nil {
		t.Error("offset 3 of t-4 accepted")
	}
}
