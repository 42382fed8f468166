package idempotency

import (
	"bytes"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
)

// Python-compatible payload serialization.
//
// Powertools for AWS Lambda (Python) hashes the idempotency payload in
// aws-powertools/powertools-lambda-python,
// aws_lambda_powertools/utilities/idempotency/persistence/base.py,
// BasePersistenceLayer._generate_hash:
//
//	hashed_data = self.hash_function(json.dumps(data, cls=Encoder, sort_keys=True).encode())
//	return hashed_data.hexdigest()
//
// where hash_function defaults to hashlib.md5 (IdempotencyConfig
// hash_function="md5", utilities/idempotency/config.py) and
// _get_hashed_idempotency_key returns f"{self.function_name}#{generated_hash}".
// The same _generate_hash is used for the "validation" attribute
// (_get_hashed_payload, on the payload_validation_jmespath subset), and
// save_success stores the result as json.dumps(result, cls=Encoder,
// sort_keys=True). Encoder (aws_lambda_powertools/shared/json_encoder.py) only
// adds a default() for Decimal, Pydantic and dataclasses, so for data decoded
// from a JSON event the output is plain json.dumps with its defaults:
//
//   - separators ", " and ": ", no indentation;
//   - dict keys sorted at every level by code point (Python str ordering,
//     which equals the byte order of valid UTF-8);
//   - ensure_ascii=True: only the bytes 0x20..0x7e other than '"' and '\'
//     are written raw; \" \\ \n \r \t \b \f use short escapes; everything
//     else (other control characters, DEL 0x7f, all non-ASCII) is written as
//     \uXXXX in lowercase hex, astral characters as UTF-16 surrogate pairs;
//   - True/False/None as true/false/null;
//   - int as its decimal digits (arbitrary precision);
//   - float as float.__repr__ (shortest round-trip digits; exponent form
//     when the decimal exponent is < -4 or >= 16, with a sign and at least
//     two exponent digits; ".0" appended to integral values in positional
//     form), and inf/-inf/nan as Infinity/-Infinity/NaN (allow_nan=True).
//
// The Python Lambda runtime (awslambdaric lambda_runtime_marshaller.py)
// parses the event with simplejson.loads, which like json.loads yields int
// for number literals without '.', 'e' or 'E' and float otherwise. pythonJSON
// therefore decides int versus float from the JSON number text, so callers
// that need to match a Python function exactly should pass the raw event
// (json.RawMessage) or values holding json.Number: a Go float64 of 1 is
// marshalled by encoding/json as "1" and hashes like the Python int 1, not
// like the float 1.0.

// pythonJSON returns v serialized the way Python's
// json.dumps(obj, sort_keys=True) serializes the same JSON data.
//
// v is first marshalled with encoding/json (so struct tags, json.Marshaler,
// json.RawMessage and json.Number apply) and decoded again with
// UseNumber, keeping each number's original text.
func pythonJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("idempotency: encode payload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var tree any
	if err := dec.Decode(&tree); err != nil {
		return nil, fmt.Errorf("idempotency: decode payload: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw) + len(raw)/8)
	if err := writePython(&buf, tree); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// pythonKeyHash returns the lowercase hex MD5 of pythonJSON(v), which is
// the hash part of a Powertools (Python) idempotency key
// ("<prefix>#<hash>") and of its "validation" attribute.
func pythonKeyHash(v any) (string, error) {
	b, err := pythonJSON(v)
	if err != nil {
		return "", err
	}
	sum := md5.Sum(b)
	return hex.EncodeToString(sum[:]), nil
}

func writePython(buf *bytes.Buffer, v any) error {
	switch x := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if x {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case string:
		writePythonString(buf, x)
	case json.Number:
		s, err := pythonNumber(string(x))
		if err != nil {
			return err
		}
		buf.WriteString(s)
	case []any:
		buf.WriteByte('[')
		for i, e := range x {
			if i > 0 {
				buf.WriteString(", ")
			}
			if err := writePython(buf, e); err != nil {
				return err
			}
		}
		buf.WriteByte(']')
	case map[string]any:
		keys := make([]string, 0, len(x))
		for k := range x {
			keys = append(keys, k)
		}
		// Byte order of valid UTF-8 is code point order, which is how
		// Python compares str. Decoded keys are always valid UTF-8.
		slices.Sort(keys)
		buf.WriteByte('{')
		for i, k := range keys {
			if i > 0 {
				buf.WriteString(", ")
			}
			writePythonString(buf, k)
			buf.WriteString(": ")
			if err := writePython(buf, x[k]); err != nil {
				return err
			}
		}
		buf.WriteByte('}')
	default:
		// Unreachable: json.Decoder with UseNumber yields only the types above.
		return fmt.Errorf("idempotency: unexpected decoded type %T", v)
	}
	return nil
}

// pythonNumber converts a JSON number literal to what json.dumps writes for
// the value json.loads makes of it.
func pythonNumber(s string) (string, error) {
	if !strings.ContainsAny(s, ".eE") {
		// Python int: arbitrary precision, printed in canonical decimal.
		// A JSON integer literal is already canonical except for "-0".
		if s == "-0" {
			return "0", nil
		}
		return s, nil
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		// Python's float() gives ±inf on overflow; underflow gives ±0 in
		// both languages without an error.
		if ne, ok := err.(*strconv.NumError); !ok || ne.Err != strconv.ErrRange {
			return "", fmt.Errorf("idempotency: bad number %q: %w", s, err)
		}
	}
	return pythonFloatRepr(f), nil
}

// pythonFloatRepr formats f as Python's repr(float) (and json.dumps) does.
func pythonFloatRepr(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	case math.IsNaN(f):
		return "NaN"
	}
	// Shortest round-trip digits, as Python's 'r' format mode. Go's 'e'
	// form already has Python's layout: "1e+16", "1.5e-07", "5e-324".
	e := strconv.FormatFloat(f, 'e', -1, 64)
	i := strings.LastIndexByte(e, 'e')
	exp, _ := strconv.Atoi(e[i+1:])
	if exp < -4 || exp >= 16 {
		return e
	}
	p := strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.ContainsRune(p, '.') {
		p += ".0"
	}
	return p
}

const lowerHex = "0123456789abcdef"

// writePythonString writes s quoted as json.dumps(..., ensure_ascii=True)
// does (Lib/json/encoder.py py_encode_basestring_ascii / the C encoder).
func writePythonString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"':
			buf.WriteString(`\"`)
		case r == '\\':
			buf.WriteString(`\\`)
		case r >= 0x20 && r <= 0x7e:
			buf.WriteByte(byte(r))
		case r == '\n':
			buf.WriteString(`\n`)
		case r == '\r':
			buf.WriteString(`\r`)
		case r == '\t':
			buf.WriteString(`\t`)
		case r == '\b':
			buf.WriteString(`\b`)
		case r == '\f':
			buf.WriteString(`\f`)
		case r > 0xffff:
			r -= 0x10000
			writeU16(buf, 0xd800|(r>>10)&0x3ff)
			writeU16(buf, 0xdc00|r&0x3ff)
		default:
			writeU16(buf, r)
		}
	}
	buf.WriteByte('"')
}

func writeU16(buf *bytes.Buffer, r rune) {
	buf.WriteString(`\u`)
	buf.WriteByte(lowerHex[r>>12&0xf])
	buf.WriteByte(lowerHex[r>>8&0xf])
	buf.WriteByte(lowerHex[r>>4&0xf])
	buf.WriteByte(lowerHex[r&0xf])
}
