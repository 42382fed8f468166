package jsonscan

import (
	"strconv"
	"unicode/utf8"
)

// The decoders' error messages quote payload text and name JSON paths the same way; these
// are the shared pieces.

// QuoteText returns s as it is when it is printable text on one line, and otherwise quoted
// with Go escapes (\n, \x00, \ufeff ...), so that an error message never carries raw binary or
// line breaks from a payload.
func QuoteText(s string) string {
	for _, r := range s {
		if r == utf8.RuneError || r == '\ufeff' || !strconv.IsPrint(r) {
			return strconv.Quote(s)
		}
	}
	return s
}

// Member returns the path step for an object member: .name for a name made of ASCII letters,
// digits, '_' and '-', and ["name"], quoted and escaped, for any other (the empty name
// included).
func Member(name string) string {
	if name == "" {
		return `[""]`
	}
	for i := 0; i < len(name); i++ {
		c := name[i]
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-') {
			return "[" + strconv.Quote(name) + "]"
		}
	}
	return "." + name
}
