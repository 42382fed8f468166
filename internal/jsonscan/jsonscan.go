// Package jsonscan is the JSON reader core of the toolkit's hand-written decoders: package
// kafkaevent reads Kafka event source mapping payloads with it, internal/sqsparse SQS ones, and
// package filter the documents it matches. It has three layers:
//
//   - the lexer: SkipWS, String, Number, Literal and AppendUnescaped scan one token in a byte
//     slice by position and validate it exactly as RFC 8259 and encoding/json do. They keep no
//     state, so that a caller's cursor stays in a register, and allocate nothing but the
//     caller's buffer;
//   - the reader, Reader: values, objects, arrays, strings, literals and numbers, with the one
//     nesting limit of the readers, MaxDepth (encoding/json's), and every syntax error worded
//     as encoding/json words it ("invalid character '}' after object key", "unexpected end
//     of JSON input in string literal"). A decoder embeds a Reader and is its Failer, which
//     puts the decoder's JSON path into the error, so that every envelope error names where it is;
//   - FindDuplicates, which finds members given twice, for the decoders' tests and for klt.
//
// The path steps and quoting of payload text in error messages (Member, QuoteText, Path) are
// here too, so that the decoders write them alike.
package jsonscan

import (
	"unicode/utf16"
	"unicode/utf8"
)

// IsSpace reports whether c is JSON whitespace: space, tab, line feed or carriage return.
func IsSpace(c byte) bool { return c == ' ' || c == '\n' || c == '\r' || c == '\t' }

// SkipWS returns the position of the first byte at or after i that is not JSON whitespace.
func SkipWS(d []byte, i int) int {
	// Every byte that starts a JSON token is above ' ', and compact JSON has no whitespace, so
	// one comparison usually settles it.
	for i < len(d) && d[i] <= ' ' && IsSpace(d[i]) {
		i++
	}
	return i
}

// IsHex reports whether c is a hexadecimal digit.
func IsHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

// NumberError says why the text at a position is not a JSON number.
type NumberError uint8

// The ways a number can be malformed. NumberOK is the zero value.
const (
	NumberOK         NumberError = iota
	NumberNoDigits               // no digit where the integer part starts
	NumberNoFraction             // no digit after the decimal point
	NumberNoExponent             // no digit in the exponent
)

// Context is where encoding/json says a syntax error of this kind is ("in numeric literal",
// "after decimal point in numeric literal", "in exponent of numeric literal"); "" for NumberOK.
func (e NumberError) Context() string {
	switch e {
	case NumberNoDigits:
		return "in numeric literal"
	case NumberNoFraction:
		return "after decimal point in numeric literal"
	case NumberNoExponent:
		return "in exponent of numeric literal"
	}
	return ""
}

// Number scans the JSON number at d[i] (a '-' or a digit) per RFC 8259. It returns the position
// after it; on a malformed number it returns the position of the offending byte and the reason.
// A leading zero ends the integer part, so "01" scans as "0" followed by "1", which the caller
// rejects as the next token, as encoding/json does.
func Number(d []byte, i int) (int, NumberError) {
	if i < len(d) && d[i] == '-' {
		i++
	}
	if i < len(d) && d[i] == '0' {
		i++
	} else if j := digits(d, i); j == i {
		return i, NumberNoDigits
	} else {
		i = j
	}
	if i < len(d) && d[i] == '.' {
		i++
		j := digits(d, i)
		if j == i {
			return i, NumberNoFraction
		}
		i = j
	}
	if i < len(d) && (d[i] == 'e' || d[i] == 'E') {
		i++
		if i < len(d) && (d[i] == '+' || d[i] == '-') {
			i++
		}
		j := digits(d, i)
		if j == i {
			return i, NumberNoExponent
		}
		i = j
	}
	return i, NumberOK
}

func digits(d []byte, i int) int {
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		i++
	}
	return i
}

// Literal reports whether the literal lit (true, false or null) is at d[i], and returns the
// position after it. When it is not, the position is that of the first byte that differs.
func Literal(d []byte, i int, lit string) (int, bool) {
	for k := 0; k < len(lit); k++ {
		if i >= len(d) || d[i] != lit[k] {
			return i, false
		}
		i++
	}
	return i, true
}

// StringFlags says what a scanned string body needs before its bytes can be used as text.
type StringFlags uint8

const (
	// Escaped: the body holds backslash escapes; AppendUnescaped decodes them.
	Escaped StringFlags = 1 << iota
	// NonASCII: the body holds bytes from 0x80 up.
	NonASCII
	// BadUTF8: the body holds bytes that are not valid UTF-8, which encoding/json, and so
	// AppendUnescaped, replace by U+FFFD.
	BadUTF8
)

// NeedsDecoding reports whether the raw body differs from the text it stands for, so that it
// must go through AppendUnescaped: it has escapes or invalid UTF-8.
func (f StringFlags) NeedsDecoding() bool { return f&(Escaped|BadUTF8) != 0 }

// StringError says why the text at a position is not a JSON string.
type StringError uint8

// The ways a string can be malformed. StringOK is the zero value.
const (
	StringOK         StringError = iota
	StringEOF                    // the input ends before the closing quote
	StringControl                // a byte below 0x20, which must be escaped
	StringBadEscape              // a backslash followed by a byte that starts no escape, or by nothing
	StringBadUnicode             // \u not followed by four hexadecimal digits
)

// plain marks the bytes that may appear in a JSON string as they are, without ending it or
// starting an escape: printable ASCII other than '"' and '\'. Bytes from 0x80 up are not
// marked, so that String notices them and checks the UTF-8 only when there is some.
var plain = func() (t [256]bool) {
	for c := 0x20; c < 0x80; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// String scans the JSON string whose opening quote is at d[i]. It returns the position after the
// closing quote and what the body d[i+1:end-1] holds. On a malformed string it returns the
// position of the offending byte (the backslash of a bad escape; len(d) when the input ends)
// and the reason.
func String(d []byte, i int) (end int, flags StringFlags, err StringError) {
	j := i + 1
	for {
		for j < len(d) && plain[d[j]] {
			j++
		}
		if j >= len(d) {
			return len(d), flags, StringEOF
		}
		switch c := d[j]; {
		case c == '"':
			if flags&NonASCII != 0 && !utf8.Valid(d[i+1:j]) {
				flags |= BadUTF8
			}
			return j + 1, flags, StringOK
		case c >= utf8.RuneSelf:
			flags |= NonASCII
			j++
		case c == '\\':
			flags |= Escaped
			if j+1 >= len(d) {
				return j, flags, StringBadEscape
			}
			switch d[j+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				j += 2
			case 'u':
				if j+5 >= len(d) || !IsHex(d[j+2]) || !IsHex(d[j+3]) || !IsHex(d[j+4]) || !IsHex(d[j+5]) {
					return j, flags, StringBadUnicode
				}
				j += 6
			default:
				return j, flags, StringBadEscape
			}
		default:
			return j, flags, StringControl
		}
	}
}

// AppendUnescaped appends the text of a JSON string body (the bytes between the quotes, already
// checked by String) to b. Like encoding/json, it turns invalid UTF-8 and lone surrogates into
// U+FFFD.
func AppendUnescaped(b, raw []byte) []byte {
	for i := 0; i < len(raw); {
		c := raw[i]
		if c != '\\' {
			if c < utf8.RuneSelf {
				b = append(b, c)
				i++
				continue
			}
			r, size := utf8.DecodeRune(raw[i:])
			b = utf8.AppendRune(b, r)
			i += size
			continue
		}
		switch raw[i+1] {
		case 'b':
			b = append(b, '\b')
		case 'f':
			b = append(b, '\f')
		case 'n':
			b = append(b, '\n')
		case 'r':
			b = append(b, '\r')
		case 't':
			b = append(b, '\t')
		case 'u':
			r := hex4(raw[i+2 : i+6])
			i += 6
			if utf16.IsSurrogate(r) {
				if i+6 <= len(raw) && raw[i] == '\\' && raw[i+1] == 'u' {
					if r2 := utf16.DecodeRune(r, hex4(raw[i+2:i+6])); r2 != utf8.RuneError {
						b = utf8.AppendRune(b, r2)
						i += 6
						continue
					}
				}
				r = utf8.RuneError
			}
			b = utf8.AppendRune(b, r)
			continue
		default: // " \ /
			b = append(b, raw[i+1])
		}
		i += 2
	}
	return b
}

func hex4(s []byte) rune {
	var r rune
	for _, c := range s[:4] {
		switch {
		case c <= '9':
			c -= '0'
		case c <= 'F':
			c -= 'A' - 10
		default:
			c -= 'a' - 10
		}
		r = r<<4 | rune(c)
	}
	return r
}
