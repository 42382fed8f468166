package batch_test

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// encodingJSONInvoke is what SQSFunc.Invoke did before it decoded with sqsparse: encoding/json
// into events.SQSEvent, then the function, then the response marshalled.
func encodingJSONInvoke(ctx context.Context, f batch.SQSFunc, payload []byte) ([]byte, error) {
	var ev events.SQSEvent
	if err := json.Unmarshal(payload, &ev); err != nil {
		return nil, err
	}
	resp, err := f(ctx, &ev)
	if err != nil {
		return nil, err
	}
	return json.Marshal(resp)
}

// seenMessages records copies of the messages a handler is given, by message ID, and fails
// those whose body contains "fail".
type seenMessages struct {
	mu   sync.Mutex
	msgs map[string][]events.SQSMessage
}

func (s *seenMessages) handle(_ context.Context, m *events.SQSMessage) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.msgs == nil {
		s.msgs = map[string][]events.SQSMessage{}
	}
	s.msgs[m.MessageId] = append(s.msgs[m.MessageId], *m)
	if strings.Contains(m.Body, "fail") {
		return batch.Permanent(errTransient)
	}
	return nil
}

// SQSHandler through Invoke, on raw payload bytes, behaves as it did when Invoke decoded with
// encoding/json: the handler sees the same messages, field by field, and the response is the
// same bytes; for standard and FIFO queues, with failures, and on every vendored fixture
// that aws-lambda-go decodes.
func TestSQSInvokeRawBytesAsBefore(t *testing.T) {
	payloads := map[string][]byte{
		"generated": sqsgen.Event(50, 200),
		"standard with failures": []byte(`{"Records":[
			{"messageId":"m-0","body":"{\"ok\":true}","attributes":{"SentTimestamp":"1768471200000"},"eventSourceARN":"` + standardARN + `","eventSource":"aws:sqs","awsRegion":"us-east-1"},
			{"messageId":"m-1","body":"please fail \u00e9","messageAttributes":{"trace":{"stringValue":"t-1","dataType":"String"},"bin":{"binaryValue":"AAEC","dataType":"Binary"}},"eventSourceARN":"` + standardARN + `"},
			{"messageId":"m-2","body":"","eventSourceARN":"` + standardARN + `"}]}`),
		"fifo with a failure": []byte(`{"Records":[
			{"messageId":"g0-0","body":"a","attributes":{"MessageGroupId":"g0"},"eventSourceARN":"` + fifoARN + `"},
			{"messageId":"g1-0","body":"fail","attributes":{"MessageGroupId":"g1"},"eventSourceARN":"` + fifoARN + `"},
			{"messageId":"g0-1","body":"b","attributes":{"MessageGroupId":"g0"},"eventSourceARN":"` + fifoARN + `"},
			{"messageId":"g1-1","body":"c","attributes":{"MessageGroupId":"g1"},"eventSourceARN":"` + fifoARN + `"}]}`),
		"empty":      []byte(`{"Records":[]}`),
		"null":       []byte(`null`),
		"no Records": []byte(`{"eventVersion":"1"}`),
	}
	files, err := filepath.Glob("../internal/sqsparse/testdata/fixtures/*/*.json")
	if err != nil || len(files) == 0 {
		t.Fatalf("fixtures: %v, %v", files, err)
	}
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var ev events.SQSEvent
		if json.Unmarshal(data, &ev) == nil {
			payloads[filepath.Base(f)] = data
		}
	}
	for name, payload := range payloads {
		t.Run(name, func(t *testing.T) {
			var now, before seenMessages
			out, err := batch.SQSHandler(now.handle, silent()...).Invoke(context.Background(), payload)
			if err != nil {
				t.Fatalf("Invoke: %v", err)
			}
			wantOut, err := encodingJSONInvoke(context.Background(), batch.SQSHandler(before.handle, silent()...), payload)
			if err != nil {
				t.Fatalf("encoding/json: %v", err)
			}
			if string(out) != string(wantOut) {
				t.Errorf("response %s, before %s", out, wantOut)
			}
			if !reflect.DeepEqual(now.msgs, before.msgs) {
				t.Errorf("handler saw\n%+v\nbefore\n%+v", now.msgs, before.msgs)
			}
		})
	}
	// The cases above must include failures, or the comparison proves little.
	var s seenMessages
	out, _ := batch.SQSHandler(s.handle, silent()...).Invoke(context.Background(), payloads["fifo with a failure"])
	if string(out) != wantSQS("g1-0", "g1-1") {
		t.Errorf("FIFO response %s", out)
	}
}

// A payload that is not an SQS event fails the invocation, with the JSON path of the bad value
// and the value quoted, and no message is handled.
func TestSQSInvokeBadPayload(t *testing.T) {
	var s seenMessages
	for payload, want := range map[string]string{
		`{"Records":[{"messageId":"m-0","body":"x"},{"messageId":"m-1","body":42}]}`:                          "batch: SQS event: Records[1].body: want a string, got 42",
		`{"Records":[{"messageAttributes":{"trace id":{"binaryValue":"not base64"}}}]}`:                       `batch: SQS event: Records[0].messageAttributes["trace id"].binaryValue: want standard base64, got "not base64": illegal base64 data at input byte 3`,
		`{"Records":[{"messageId":"m-0"}`:                                                                     "batch: SQS event: Records: unexpected end of JSON input after array element",
		`{"records":{"orders-0":[]}}`:                                                                         `batch: SQS event: records: want an array of messages, got {"orders-0":[]}`,
		"{\"Records\":[{\"messageId\":\"m-0\",\"body\":\"line\nbreak\"}]}":                                    `batch: SQS event: Records[0].body: invalid character '\n' in string literal`,
		`{"Records":[{"messageId":"m-0","attributes":{"SentTimestamp":1768471200000,"MessageGroupId":"g"}}]}`: "batch: SQS event: Records[0].attributes.SentTimestamp: want a string, got 1768471200000",
	} {
		out, err := batch.SQSHandler(s.handle).Invoke(context.Background(), []byte(payload))
		if err == nil || err.Error() != want || out != nil {
			t.Errorf("Invoke(%.50q) = %s, %v\nwant error %s", payload, out, err, want)
		}
	}
	if len(s.msgs) != 0 {
		t.Errorf("handled %v", s.msgs)
	}
}
