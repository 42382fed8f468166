package esm

import (
	"errors"
	"testing"
)

// TestParseSQSBatchResponse: the success and failure conditions of
// https://docs.aws.amazon.com/lambda/latest/dg/services-sqs-errorhandling.html#services-sqs-batchfailurereporting,
// one by one, and the case-sensitive member names of awsdocs/aws-lambda-developer-guide
// issue 320.
func TestParseSQSBatchResponse(t *testing.T) {
	ids := map[string]bool{"a": true, "b": true}
	cases := []struct {
		in     string
		failed []string // nil: complete success
		bad    bool     // complete failure
	}{
		{in: ``},
		{in: `null`},
		{in: ` {} `},
		{in: `{"batchItemFailures":null}`},
		{in: `{"batchItemFailures":[]}`},
		{in: `{"BatchItemFailures":[{"itemIdentifier":"a"}]}`}, // not our member: no failures
		{in: `{"batchItemFailures":[{"itemIdentifier":"a"}]}`, failed: []string{"a"}},
		{in: `{"batchItemFailures":[{"itemIdentifier":"a"},{"itemIdentifier":"b"},{"itemIdentifier":"a"}],"x":1}`, failed: []string{"a", "b"}},
		{in: `{"batchItemFailures":[{"itemIdentifier":"a","extra":true}]}`, failed: []string{"a"}},
		{in: `{"batchItemFailures":[`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":""}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":null}]}`, bad: true},
		{in: `{"batchItemFailures":[{"ItemIdentifier":"a"}]}`, bad: true},
		{in: `{"batchItemFailures":[{}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":"zzz"}]}`, bad: true},
		{in: `{"batchItemFailures":[{"itemIdentifier":1}]}`, bad: true},
		{in: `{"batchItemFailures":["a"]}`, bad: true},
		{in: `{"batchItemFailures":{"itemIdentifier":"a"}}`, bad: true},
		{in: `{"batchItemFailures":"a"}`, bad: true},
		{in: `"ok"`, bad: true},
		{in: `[]`, bad: true},
		{in: `{"a":1}{}`, bad: true},
	}
	for _, tc := range cases {
		got, err := parseSQSBatchResponse([]byte(tc.in), ids)
		var re *sqsResponseError
		switch {
		case tc.bad:
			if !errors.As(err, &re) {
				t.Errorf("%s: %v, %v; want an *sqsResponseError", tc.in, got, err)
			}
		case err != nil:
			t.Errorf("%s: %v", tc.in, err)
		case len(got) != len(tc.failed):
			t.Errorf("%s: failed %v, want %v", tc.in, got, tc.failed)
		default:
			for _, id := range tc.failed {
				if !got[id] {
					t.Errorf("%s: failed %v, want %v", tc.in, got, tc.failed)
				}
			}
		}
	}
}

// FuzzSQSResponse: parsing any response never panics, and an answer without error lists
// only message IDs of the batch, each non-empty.
func FuzzSQSResponse(f *testing.F) {
	for _, s := range []string{``, `null`, `{"batchItemFailures":[{"itemIdentifier":"a"}]}`, `{"batchItemFailures":[{"itemIdentifier":""}]}`,
		`{"batchItemFailures":null}`, `{"BatchItemFailures":[]}`, `[1]`, `{"batchItemFailures":[{"itemIdentifier":"b"},{"itemIdentifier":"a"}]}`} {
		f.Add([]byte(s))
	}
	ids := map[string]bool{"a": true, "b": true, "\u00e9": true}
	f.Fuzz(func(t *testing.T, payload []byte) {
		got, err := parseSQSBatchResponse(payload, ids)
		if err != nil {
			var re *sqsResponseError
			if !errors.As(err, &re) || got != nil {
				t.Fatalf("error %v (%T) with %v", err, err, got)
			}
			return
		}
		for id := range got {
			if id == "" || !ids[id] {
				t.Fatalf("failed id %q not in the batch", id)
			}
		}
	})
}
