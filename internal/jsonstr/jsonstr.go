// Package jsonstr decodes the bodies of JSON strings for the toolkit's hand-written JSON
// scanners (kafkaevent, filter), exactly as encoding/json does.
package jsonstr

import (
	"unicode/utf16"
	"unicode/utf8"
)

// AppendUnescaped appends the decoded text of a JSON string body (the bytes between the
// quotes, already checked to be a valid string) to b. Like encoding/json, it turns invalid
// UTF-8 and lone surrogates into U+FFFD.
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
