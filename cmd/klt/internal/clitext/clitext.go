// Package clitext words klt's messages: one line of printable text from any input
// (OneLine), the errors an error joins (LeafErrors), plurals and sizes. It prints nothing, so
// commands and engines alike use it.
package clitext

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// LeafErrors returns the errors that err joins, recursively, or err itself; nil for nil.
func LeafErrors(err error) []error {
	if err == nil {
		return nil
	}
	j, ok := err.(interface{ Unwrap() []error })
	if !ok {
		return []error{err}
	}
	var leaves []error
	for _, e := range j.Unwrap() {
		leaves = append(leaves, LeafErrors(e)...)
	}
	return leaves
}

// Plural returns "1 filter" or "N filters".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}

// OneLine returns s for a message of one line: printable text stays as it is, and anything
// else (control characters, line breaks, bytes that are not UTF-8) is escaped as Go escapes it
// in a quoted string, so input never reaches the terminal raw.
func OneLine(s string) string {
	clean := true
	for _, r := range s {
		if r == utf8.RuneError || !unicode.IsPrint(r) && r != ' ' {
			clean = false
			break
		}
	}
	if clean {
		return s
	}
	var b strings.Builder
	for len(s) > 0 {
		r, size := utf8.DecodeRuneInString(s)
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[0])
		case unicode.IsPrint(r) || r == ' ':
			b.WriteString(s[:size])
		default:
			q := strconv.QuoteRune(r)
			b.WriteString(q[1 : len(q)-1])
		}
		s = s[size:]
	}
	return b.String()
}

// OrDefault returns s, or def when s is empty.
func OrDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// SizeText writes n bytes as binary megabytes or kilobytes ("6 MB", "512 KB"), or bytes.
func SizeText(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return strconv.FormatInt(n>>20, 10) + " MB"
	case n >= 1<<10 && n%(1<<10) == 0:
		return strconv.FormatInt(n>>10, 10) + " KB"
	}
	return strconv.FormatInt(n, 10) + " bytes"
}
