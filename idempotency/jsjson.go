package idempotency

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf16"
	"unicode/utf8"
)

// JavaScript-compatible payload serialization, for FormatTypeScript.
//
// Powertools for AWS Lambda (TypeScript) hashes the idempotency key and the validation payload
// in packages/idempotency/src/persistence/BasePersistenceLayer.ts:
//
//	getHashedIdempotencyKey: `${prefix}#${this.generateHash(JSON.stringify(deepSort(payload)))}`
//	generateHash:            createHash(this.hashFunction).update(data).digest('base64')
//
// with hashFunction 'md5' by default (IdempotencyConfig). deepSort (src/deepSort.ts) rebuilds
// every object with its keys sorted by
//
//	Object.keys(object).sort((a, b) => (a.toLowerCase() < b.toLowerCase() ? -1 : 1))
//
// and JSON.stringify writes the result. What that produces, for data that came from a JSON
// event (JSON.parse), and what jsJSON reproduces:
//
//   - An object's keys that are array indices ("0" to "4294967294" in canonical form) come
//     first, in numeric order, whatever deepSort did: a JavaScript object always lists them
//     so. The other keys follow in the sort's order: by their toLowerCase() text compared as
//     UTF-16 code units. The comparator never returns 0, but V8's TimSort only asks whether
//     the first argument is less, so keys equal when lowered keep their order in the object,
//     which is their first appearance in the document.
//   - A key "__proto__" is dropped: deepSort assigns it with acc[key] = ..., which sets the
//     prototype instead of a property.
//   - A duplicate key keeps its first position and its last value (JSON.parse).
//   - Numbers are parsed as doubles and written as Number.prototype.toString does: shortest
//     round-trip digits, exponent form ("1e+21", "1e-7") below 1e-6 and from 1e21 on, "0" for
//     -0, and null for a number too large for a double (JSON.parse gives Infinity).
//   - Strings escape '"', '\\' and the control characters below U+0020 (\b \t \n \f \r, others
//     \u00xx in lowercase hex) and nothing else: non-ASCII is written as UTF-8.
//   - No spaces.
//
// The hash is then taken over the UTF-8 bytes of that text and encoded as standard base64 with
// padding.

// jsJSON returns v serialized as Powertools for TypeScript serializes the same JSON data:
// JSON.stringify(deepSort(JSON.parse(json))). v is first marshalled with encoding/json.
func jsJSON(v any) ([]byte, error) {
	raw, err := json.Marshal(v)
	if err != nil {
		return nil, fmt.Errorf("idempotency: encode payload: %w", err)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	tree, err := decodeOrdered(dec)
	if err != nil {
		return nil, fmt.Errorf("idempotency: decode payload: %w", err)
	}
	var buf bytes.Buffer
	buf.Grow(len(raw))
	writeJS(&buf, tree)
	return buf.Bytes(), nil
}

// jsObject is a JSON object with its keys in order of first appearance.
type jsObject struct {
	keys []string
	vals map[string]any
}

// decodeOrdered reads one JSON value, keeping the order of object keys.
func decodeOrdered(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		if errors.Is(err, io.EOF) {
			return nil, io.ErrUnexpectedEOF
		}
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			obj := &jsObject{vals: map[string]any{}}
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				k, ok := kt.(string)
				if !ok {
					return nil, fmt.Errorf("object key is %T", kt)
				}
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				if _, dup := obj.vals[k]; !dup {
					obj.keys = append(obj.keys, k)
				}
				obj.vals[k] = v
			}
			if _, err := dec.Token(); err != nil { // '}'
				return nil, err
			}
			return obj, nil
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := decodeOrdered(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			if _, err := dec.Token(); err != nil { // ']'
				return nil, err
			}
			return arr, nil
		}
		return nil, fmt.Errorf("unexpected %v", t)
	default:
		return tok, nil
	}
}

func writeJS(buf *bytes.Buffer, v any) {
	switch v := v.(type) {
	case nil:
		buf.WriteString("null")
	case bool:
		if v {
			buf.WriteString("true")
		} else {
			buf.WriteString("false")
		}
	case json.Number:
		f, err := strconv.ParseFloat(string(v), 64)
		if err != nil && !errors.Is(err, strconv.ErrRange) {
			// encoding/json produced the text, so it is a valid JSON number; ParseFloat
			// accepts every one, out of range ones as ±Inf or 0.
			buf.WriteString("null")
			return
		}
		buf.WriteString(jsNumber(f))
	case string:
		writeJSString(buf, v)
	case []any:
		buf.WriteByte('[')
		for i, e := range v {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJS(buf, e)
		}
		buf.WriteByte(']')
	case *jsObject:
		buf.WriteByte('{')
		for i, k := range jsKeyOrder(v.keys) {
			if i > 0 {
				buf.WriteByte(',')
			}
			writeJSString(buf, k)
			buf.WriteByte(':')
			writeJS(buf, v.vals[k])
		}
		buf.WriteByte('}')
	}
}

// jsKeyOrder returns the keys in the order JSON.stringify(deepSort(obj)) writes them.
func jsKeyOrder(keys []string) []string {
	var index []string
	type named struct {
		key   string
		lower []uint16
	}
	var rest []named
	for _, k := range keys {
		switch {
		case k == "__proto__":
		case isArrayIndex(k):
			index = append(index, k)
		default:
			rest = append(rest, named{k, jsLower(k)})
		}
	}
	slices.SortFunc(index, func(a, b string) int {
		if len(a) != len(b) {
			return len(a) - len(b)
		}
		return strings.Compare(a, b)
	})
	slices.SortStableFunc(rest, func(a, b named) int { return slices.Compare(a.lower, b.lower) })
	out := index
	for _, n := range rest {
		out = append(out, n.key)
	}
	return out
}

// isArrayIndex reports whether k is an array index in canonical form: an integer from 0 to
// 2^32-2 without leading zeros.
func isArrayIndex(k string) bool {
	if k == "" || len(k) > 10 || (k[0] == '0' && len(k) > 1) {
		return false
	}
	var n uint64
	for i := 0; i < len(k); i++ {
		c := k[i]
		if c < '0' || c > '9' {
			return false
		}
		n = n*10 + uint64(c-'0')
	}
	return n < math.MaxUint32
}

// jsLower is String.prototype.toLowerCase as UTF-16 code units: the Unicode lowercase mapping,
// with the unconditional special case (U+0130 becomes "i\u0307") and Final_Sigma.
func jsLower(s string) []uint16 {
	out := make([]uint16, 0, len(s))
	runes := []rune(s)
	for i, r := range runes {
		switch {
		case r < utf8.RuneSelf:
			if 'A' <= r && r <= 'Z' {
				r += 'a' - 'A'
			}
			out = append(out, uint16(r))
			continue
		case r == 0x130:
			out = append(out, 'i', 0x307)
			continue
		case r == 0x3A3:
			if finalSigma(runes, i) {
				r = 0x3C2
			} else {
				r = 0x3C3
			}
		default:
			r = unicode.ToLower(r)
		}
		out = utf16.AppendRune(out, r)
	}
	return out
}

// finalSigma is Unicode's Final_Sigma condition for the capital sigma at runes[i]: a cased
// letter before it (case-ignorable characters between) and none after it.
func finalSigma(runes []rune, i int) bool {
	before := false
	for j := i - 1; j >= 0; j-- {
		if caseIgnorable(runes[j]) {
			continue
		}
		before = cased(runes[j])
		break
	}
	if !before {
		return false
	}
	for j := i + 1; j < len(runes); j++ {
		if caseIgnorable(runes[j]) {
			continue
		}
		return !cased(runes[j])
	}
	return true
}

func cased(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLower(r) || unicode.IsTitle(r) ||
		unicode.Is(unicode.Other_Lowercase, r) || unicode.Is(unicode.Other_Uppercase, r)
}

func caseIgnorable(r rune) bool {
	switch r {
	case '\'', '.', ':', 0xB7, 0x387, 0x55F, 0x5F4, 0x2018, 0x2019, 0x2024, 0x2027, 0xFE13,
		0xFE52, 0xFE55, 0xFF07, 0xFF0E, 0xFF1A:
		return true
	}
	return unicode.In(r, unicode.Mn, unicode.Me, unicode.Cf, unicode.Lm, unicode.Sk)
}

// writeJSString writes s as JSON.stringify does.
func writeJSString(buf *bytes.Buffer, s string) {
	buf.WriteByte('"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch c {
		case '"':
			buf.WriteString(`\"`)
		case '\\':
			buf.WriteString(`\\`)
		case '\b':
			buf.WriteString(`\b`)
		case '\t':
			buf.WriteString(`\t`)
		case '\n':
			buf.WriteString(`\n`)
		case '\f':
			buf.WriteString(`\f`)
		case '\r':
			buf.WriteString(`\r`)
		default:
			if c < 0x20 {
				buf.WriteString(`\u00`)
				buf.WriteByte(lowerHex[c>>4])
				buf.WriteByte(lowerHex[c&0xF])
			} else {
				buf.WriteByte(c)
			}
		}
	}
	buf.WriteByte('"')
}

// jsNumber formats f as JavaScript's Number.prototype.toString(): the shortest digits that
// round-trip, in positional form for 1e-7 < |f| < 1e21 and in exponent form otherwise.
func jsNumber(f float64) string {
	switch {
	case math.IsNaN(f) || math.IsInf(f, 0):
		return "null" // JSON.stringify writes NaN and Infinity as null
	case f == 0:
		return "0"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // [-]d[.ddd]e±dd
	var b strings.Builder
	if e[0] == '-' {
		b.WriteByte('-')
		e = e[1:]
	}
	mant, exp, _ := strings.Cut(e, "e")
	digits := strings.Replace(mant, ".", "", 1)
	x, _ := strconv.Atoi(exp) // FormatFloat writes a valid exponent
	k, n := len(digits), x+1  // f = 0.digits × 10^n
	switch {
	case k <= n && n <= 21:
		b.WriteString(digits)
		b.WriteString(strings.Repeat("0", n-k))
	case 0 < n && n <= 21:
		b.WriteString(digits[:n])
		b.WriteByte('.')
		b.WriteString(digits[n:])
	case -6 < n && n <= 0:
		b.WriteString("0.")
		b.WriteString(strings.Repeat("0", -n))
		b.WriteString(digits)
	default:
		b.WriteByte(digits[0])
		if k > 1 {
			b.WriteByte('.')
			b.WriteString(digits[1:])
		}
		b.WriteByte('e')
		if n-1 >= 0 {
			b.WriteByte('+')
		}
		b.WriteString(strconv.Itoa(n - 1))
	}
	return b.String()
}
