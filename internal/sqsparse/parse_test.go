package sqsparse_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/internal/sqsparse"
)

// Errors name the JSON path of the bad value, give its offset, and quote it on one line.
func TestErrors(t *testing.T) {
	for _, c := range []struct {
		payload string
		path    string
		msg     string
		offset  int
	}{
		{`{"Records":[{"body":42}]}`, "Records[0].body", "want a string, got 42", 20},
		{`{"Records":[{},{"messageId":{"a":[1,2]}}]}`, "Records[1].messageId", `want a string, got {"a":[1,2]}`, 28},
		{`{"Records":[{"attributes":{"SentTimestamp":1768471200000}}]}`, "Records[0].attributes.SentTimestamp", "want a string, got 1768471200000", 43},
		{`{"Records":[{"attributes":["SentTimestamp"]}]}`, "Records[0].attributes", `want an object of strings, got ["SentTimestamp"]`, 26},
		{`{"Records":[{"messageAttributes":{"a b":{"binaryValue":"QQ"}}}]}`, `Records[0].messageAttributes["a b"].binaryValue`, `want standard base64, got "QQ": illegal base64 data at input byte 0`, 55},
		{`{"Records":[{"messageAttributes":{"m":{"binaryListValues":["QQ==",[1,300]]}}}]}`, "Records[0].messageAttributes.m.binaryListValues[1][1]", "want a byte number 0..255, got 300", 69},
		{`{"Records":[{"messageAttributes":{"m":{"stringListValues":["a",7]}}}]}`, "Records[0].messageAttributes.m.stringListValues[1]", "want a string, got 7", 63},
		{`{"Records":[{"messageAttributes":{"m":{"stringValue":true}}}]}`, "Records[0].messageAttributes.m.stringValue", "want a string, got true", 53},
		{`{"Records":[{"messageAttributes":{"m":"String"}}]}`, "Records[0].messageAttributes.m", `want a message attribute object, got "String"`, 38},
		{`{"Records":[{"Body":false}]}`, "Records[0].Body", "want a string, got false", 20},
		{`{"Records":["m"]}`, "Records[0]", `want a message object, got "m"`, 12},
		{`{"Records":{}}`, "Records", "want an array of messages, got {}", 11},
		{`{"records":7}`, "records", "want an array of messages, got 7", 11},
		{`[{"Records":[]}]`, "$", `want a JSON object, got [{"Records":[]}]`, 0},
		{`"` + strings.Repeat("x", 60) + `"`, "$", `want a JSON object, got "` + strings.Repeat("x", 39) + "...", 0},
		{``, "$", "want a JSON object, got nothing", 0},
		{"\ufeff{}", "$", "the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow; remove it", 0},
		{`{"Records":[]} x`, "$", "unexpected data after the event: x", 15},
		// Syntax errors, worded as encoding/json words them.
		{`{"Records":[{"body":"x`, "Records[0].body", "unexpected end of JSON input in string literal", 22},
		{"{\"Records\":[{\"body\":\"a\tb\"}]}", "Records[0].body", `invalid character '\t' in string literal`, 22},
		{`{"Records":[{"body":"\q"}]}`, "Records[0].body", `invalid character 'q' in string escape code`, 22},
		{`{"Records":[{"weird key":[1,}]}`, `Records[0]["weird key"]`, "invalid character '}' looking for beginning of value", 28},
		{`{"Records":[{"body":"x" "messageId":"y"}]}`, "Records[0]", `invalid character '"' after object key:value pair`, 24},
		{"{\"Records\":[{\"body\":tru\x00e}]}", "Records[0].body", `invalid character '\x00' in literal true (expecting 'e')`, 23},
		{"{\"Records\":[{\"body\":\xff}]}", "Records[0].body", "invalid character byte 0xff looking for beginning of value", 20},
		{"{\"Records\":[{\"attributes\":7,\"x\xff\\n\":1}]}", "Records[0].attributes", "want an object of strings, got 7", 26},
		// Text of the payload in a message is escaped onto one line.
		{"{\"Records\":[{\"attributes\":\"a\\nb\xff\"}]}", "Records[0].attributes", `want an object of strings, got "\"a\\nb\xff\""`, 26},
		{`{"Records":[{"attributes":"` + "\u2028" + `"}]}`, "Records[0].attributes", `want an object of strings, got "\"\u2028\""`, 26},
		// A member given twice, where encoding/json would keep the last one.
		{`{"Records":[],"records":[]}`, "records", `member "Records" appears twice in the event`, 24},
		{`{"Records":[{"body":"x","Body":"y"}]}`, "Records[0].Body", `member "body" appears twice in the message`, 31},
		{`{"Records":[{"attributes":{"SentTimestamp":"1","SentTimestamp":"2"}}]}`, "Records[0].attributes.SentTimestamp", "name appears twice in attributes", 63},
		{`{"Records":[{"messageAttributes":{"trace":{"dataType":"String"},"trace":null}}]}`, "Records[0].messageAttributes.trace", "name appears twice in messageAttributes", 72},
		{`{"Records":[{"messageAttributes":{"m":{"stringValue":"a","StringValue":"b"}}}]}`, "Records[0].messageAttributes.m.StringValue", `member "stringValue" appears twice in the message attribute`, 71},
		{`{"x":` + strings.Repeat("[", 10001) + strings.Repeat("]", 10001) + `}`, "x", "nesting exceeds 10000 levels", 10004},
	} {
		ev, err := sqsparse.Parse([]byte(c.payload))
		var e *jsonscan.Error
		if !errors.As(err, &e) || ev != nil {
			t.Errorf("Parse(%.60q) = %v, %v; want *Error", c.payload, ev, err)
			continue
		}
		if e.Path != c.path || e.Msg != c.msg || e.Offset != c.offset {
			t.Errorf("Parse(%.60q):\n got path %q, offset %d, msg %q\nwant path %q, offset %d, msg %q", c.payload, e.Path, e.Offset, e.Msg, c.path, c.offset, c.msg)
		}
		if want := "SQS event: " + c.path + ": " + c.msg; err.Error() != want {
			t.Errorf("Error() = %q, want %q", err.Error(), want)
		}
		if strings.ContainsAny(err.Error(), "\n\r\t\x00\u2028") {
			t.Errorf("Parse(%.60q): error not on one line of printable text: %q", c.payload, err)
		}
	}
}

// A base64 error wraps encoding/base64's error.
func TestErrorUnwrapsBase64(t *testing.T) {
	_, err := sqsparse.Parse([]byte(`{"Records":[{"messageAttributes":{"m":{"binaryValue":"QQ"}}}]}`))
	var b64 base64.CorruptInputError
	if !errors.As(err, &b64) {
		t.Fatalf("error %v does not wrap base64.CorruptInputError", err)
	}
}
