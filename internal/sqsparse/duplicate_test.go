package sqsparse_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// firstDuplicate returns the path, as Parse's errors write it, of the first member that data
// gives twice where Parse reads it: Records, a member of a message or of a message attribute
// (names matched as encoding/json matches them: exactly, else without regard to case), a name in
// attributes or in messageAttributes. It walks data with encoding/json's tokenizer, apart from
// Parse, as far as data is valid JSON.
func firstDuplicate(data []byte) (string, bool) {
	d := json.NewDecoder(bytes.NewReader(data))
	var found string
	// open reads the next value's first token and reports whether it is delim; a container of
	// another kind is read to its end.
	open := func(delim json.Delim) (bool, error) {
		tok, err := d.Token()
		if err != nil || tok == delim {
			return err == nil, err
		}
		for depth := 0; ; {
			if dl, ok := tok.(json.Delim); ok {
				if dl == '{' || dl == '[' {
					depth++
				} else {
					depth--
				}
			}
			if depth == 0 {
				return false, nil
			}
			if tok, err = d.Token(); err != nil {
				return false, err
			}
		}
	}
	skip := func() error {
		_, err := open(0)
		return err
	}
	// members reads an object whose '{' has been read, calling value with each member's name
	// and the name it stands for among fields ("" for none); value consumes the member's
	// value. It stops, with found set, at the first name that stands for one before it.
	members := func(path string, fields []string, value func(path, name, field string) error) error {
		seen := map[string]bool{}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return err
			}
			name := tok.(string)
			field := match(name, fields)
			if field != "" && seen[field] {
				found = path + jsonscan.Member(name)
				return errFound
			}
			if field != "" {
				seen[field] = true
			}
			if err := value(path+jsonscan.Member(name), name, field); err != nil {
				return err
			}
		}
		_, err := d.Token() // '}'
		return err
	}
	messageFields := []string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
		"attributes", "messageAttributes", "eventSourceARN", "eventSource", "awsRegion"}
	attributeFields := []string{"stringValue", "binaryValue", "stringListValues", "binaryListValues", "dataType"}
	// names reads an object of names and values into which the values are stored by name:
	// every name is a field of its own.
	names := func(path string, value func(path string) error) error {
		seen := map[string]bool{}
		for d.More() {
			tok, err := d.Token()
			if err != nil {
				return err
			}
			name := tok.(string)
			if seen[name] {
				found = path + jsonscan.Member(name)
				return errFound
			}
			seen[name] = true
			if err := value(path + jsonscan.Member(name)); err != nil {
				return err
			}
		}
		_, err := d.Token()
		return err
	}
	message := func(path string) error {
		if ok, err := open('{'); !ok {
			return err
		}
		return members(path, messageFields, func(path, _, field string) error {
			switch field {
			case "attributes":
				if ok, err := open('{'); !ok {
					return err
				}
				return names(path, func(string) error { return skip() })
			case "messageAttributes":
				if ok, err := open('{'); !ok {
					return err
				}
				return names(path, func(path string) error {
					if ok, err := open('{'); !ok {
						return err
					}
					return members(path, attributeFields, func(string, string, string) error { return skip() })
				})
			}
			return skip()
		})
	}
	if ok, _ := open('{'); !ok {
		return "", false
	}
	err := members("", []string{"Records"}, func(path, name, field string) error {
		if field == "" {
			return skip()
		}
		if ok, err := open('['); !ok {
			return err
		}
		for idx := 0; d.More(); idx++ {
			if err := message(strings.TrimPrefix(path, ".") + "[" + strconv.Itoa(idx) + "]"); err != nil {
				return err
			}
		}
		_, err := d.Token() // ']'
		return err
	})
	if err == errFound {
		return strings.TrimPrefix(found, "."), true
	}
	return "", false
}

var errFound = errors.New("found") // ends the walk at the first duplicate

// match returns the field of fields that name stands for, as encoding/json matches a member
// name to a struct field: the same name, else one equal without regard to case; "" for none.
func match(name string, fields []string) string {
	for _, f := range fields {
		if name == f {
			return f
		}
	}
	for _, f := range fields {
		if strings.EqualFold(name, f) {
			return f
		}
	}
	return ""
}
