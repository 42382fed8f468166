package dynamodb

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
)

// Results as DynamoDB values, for FormatTypeScript: Powertools for TypeScript stores a
// result with marshall() from @aws-sdk/util-dynamodb (an object as a map M, an array as a
// list L, a string S, a number N, a boolean BOOL, null NULL) and reads it back with
// unmarshall(). jsonToAttr and attrToJSON convert between that and JSON text.

// jsonToAttr converts JSON text to the DynamoDB value marshall() writes for the same data.
// Numbers keep their text. An object's duplicate key keeps its last value, as JSON.parse.
func jsonToAttr(text string) (types.AttributeValue, error) {
	dec := json.NewDecoder(strings.NewReader(text))
	dec.UseNumber()
	v, err := decodeAttr(dec)
	if err != nil {
		return nil, err
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, errors.New("text after the JSON value")
	}
	return v, nil
}

func decodeAttr(dec *json.Decoder) (types.AttributeValue, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case nil:
		return &types.AttributeValueMemberNULL{Value: true}, nil
	case bool:
		return &types.AttributeValueMemberBOOL{Value: t}, nil
	case json.Number:
		return &types.AttributeValueMemberN{Value: string(t)}, nil
	case string:
		return &types.AttributeValueMemberS{Value: t}, nil
	case json.Delim:
		switch t {
		case '{':
			m := map[string]types.AttributeValue{}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, _ := kt.(string) // the decoder returns object keys as strings
				v, err := decodeAttr(dec)
				if err != nil {
					return nil, err
				}
				m[k] = v
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberM{Value: m}, nil
		case '[':
			l := []types.AttributeValue{}
			for dec.More() {
				v, err := decodeAttr(dec)
				if err != nil {
					return nil, err
				}
				l = append(l, v)
			}
			if _, err := dec.Token(); err != nil {
				return nil, err
			}
			return &types.AttributeValueMemberL{Value: l}, nil
		}
	}
	return nil, fmt.Errorf("unexpected JSON token %v", tok)
}

// attrToJSON converts a DynamoDB value, as unmarshall() reads it, to JSON text. Sets and
// binary values, which no JSON result turns into, are errors.
func attrToJSON(v types.AttributeValue) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeAttrJSON(&buf, v, "data"); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeAttrJSON(buf *bytes.Buffer, v types.AttributeValue, path string) error {
	switch v := v.(type) {
	case *types.AttributeValueMemberNULL:
		buf.WriteString("null")
	case *types.AttributeValueMemberBOOL:
		if v.Value {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case *types.AttributeValueMemberN:
		if !isJSONNumber(v.Value) {
			return fmt.Errorf("%s: number %q is not a JSON number", path, v.Value)
		}
		buf.WriteString(v.Value)
	case *types.AttributeValueMemberS:
		b, err := json.Marshal(v.Value)
		if err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		buf.Write(b)
	case *types.AttributeValueMemberL:
		buf.WriteByte('[')
		for i, e := range v.Value {
			if i > 0 {
				buf.WriteByte(',')
			}
			if err := writeAttrJSON(buf, e, fmt.Sprintf("%s[%d]", path, i)); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case *types.AttributeValueMemberM:
		buf.WriteByte('{')
		for i, k := range slices.Sorted(maps.Keys(v.Value)) {
			if i > 0 {
				buf.WriteByte(',')
			}
			kb, err := json.Marshal(k)
			if err != nil {
				return fmt.Errorf("%s: key: %w", path, err)
			}
			buf.Write(kb)
			buf.WriteByte(':')
			if err := writeAttrJSON(buf, v.Value[k], path+"."+k); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		return fmt.Errorf("%s: %s, which is not a JSON value", path, attrType(v))
	}
	return nil
}

// isJSONNumber reports whether s is a number in JSON's grammar.
func isJSONNumber(s string) bool {
	return s != "" && json.Valid([]byte(s)) && (s[0] == '-' || ('0' <= s[0] && s[0] <= '9'))
}

// attrType names a DynamoDB value's type as the API does.
func attrType(v types.AttributeValue) string {
	switch v.(type) {
	case *types.AttributeValueMemberS:
		return "a string (S)"
	case *types.AttributeValueMemberN:
		return "a number (N)"
	case *types.AttributeValueMemberB:
		return "binary (B)"
	case *types.AttributeValueMemberBOOL:
		return "a boolean (BOOL)"
	case *types.AttributeValueMemberNULL:
		return "null (NULL)"
	case *types.AttributeValueMemberM:
		return "a map (M)"
	case *types.AttributeValueMemberL:
		return "a list (L)"
	case *types.AttributeValueMemberSS:
		return "a string set (SS)"
	case *types.AttributeValueMemberNS:
		return "a number set (NS)"
	case *types.AttributeValueMemberBS:
		return "a binary set (BS)"
	}
	return fmt.Sprintf("%T", v)
}
