package sqsparse_test

import (
	"strings"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// firstDuplicate returns the path, as Parse's errors write it, of the first member that data
// gives twice where Parse reads it: Records, a member of a message or of a message attribute
// (names matched as encoding/json matches them: exactly, else without regard to case), a name in
// attributes or in messageAttributes. jsonscan.FindDuplicates finds it, with encoding/json's
// tokenizer, apart from Parse, as far as data is valid JSON.
func firstDuplicate(data []byte) (string, bool) {
	var path string
	found := false
	_ = jsonscan.FindDuplicates(data, sqsField, func(d jsonscan.Duplicate) bool {
		path, found = d.Path().String(), true
		return false
	})
	return path, found
}

var (
	recordsField    = []string{"Records"}
	messageFields   = []string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes", "attributes", "messageAttributes", "eventSourceARN", "eventSource", "awsRegion"}
	attributeFields = []string{"stringValue", "binaryValue", "stringListValues", "binaryListValues", "dataType"}
)

// sqsField says which field of events.SQSEvent the member name fills in the object at obj, as
// encoding/json decodes it; none (ok false) where Parse reads no fields (in an unknown
// member's value, say).
func sqsField(obj jsonscan.Path, name string) (string, bool) {
	if len(obj) == 0 {
		return match(name, recordsField)
	}
	if _, ok := match(obj[0].Name, recordsField); !ok || len(obj) < 2 || obj[1].Index < 0 {
		return "", false // not in a message of Records
	}
	if len(obj) == 2 {
		return match(name, messageFields)
	}
	if obj[2].Index >= 0 {
		return "", false
	}
	switch member, _ := match(obj[2].Name, messageFields); {
	case len(obj) == 3 && (member == "attributes" || member == "messageAttributes"):
		return name, true // a map: every name is a field of its own
	case len(obj) == 4 && member == "messageAttributes" && obj[3].Index < 0:
		return match(name, attributeFields)
	}
	return "", false
}

// match returns the field of fields that name stands for, as encoding/json matches a member
// name to a struct field: the same name, else one equal without regard to case.
func match(name string, fields []string) (string, bool) {
	for _, f := range fields {
		if name == f {
			return f, true
		}
	}
	for _, f := range fields {
		if strings.EqualFold(name, f) {
			return f, true
		}
	}
	return "", false
}
