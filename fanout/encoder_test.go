package fanout

import (
	"bytes"
	"reflect"
	"slices"
	"testing"
	"unicode/utf8"
)

// TestEncoderSharesNothingVisible builds the entries of every record shape with one encoder,
// as a Dispatch does, in two rounds, and checks each against the entry of a fresh encoder:
// strings and bytes written for one record must never show up in, or be changed by, another.
func TestEncoderSharesNothingVisible(t *testing.T) {
	s := shapes()
	names := make([]string, 0, len(s))
	for name := range s {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, fifo := range []bool{false, true} {
		var enc encoder
		enc.grow(64) // far too small: the buffer must grow without moving what is written
		type built struct {
			name string
			e    any
			size int
			err  error
		}
		var got []built
		for range 2 {
			for _, name := range names {
				e, size, err := enc.entry(s[name], fifo, nil)
				got = append(got, built{name, e, size, err})
			}
		}
		for _, g := range got {
			want, size, err := entry(s[g.name], fifo, nil)
			if !reflect.DeepEqual(g.e, any(want)) || g.size != size || (g.err == nil) != (err == nil) {
				t.Errorf("fifo %v, %s: one encoder for all built\n%+v (size %d, %v), alone\n%+v (size %d, %v)", fifo, g.name, g.e, g.size, g.err, want, size, err)
			}
		}
	}
}

// TestTextOKWordAtATime checks textOK's eight-bytes-at-once path against the rule read one
// character at a time: every byte value at every position of a 24-byte text, and the
// multi-byte characters SQS refuses or allows around a word's edge.
func TestTextOKWordAtATime(t *testing.T) {
	slow := func(b []byte) bool {
		for len(b) > 0 {
			r, n := utf8.DecodeRune(b)
			if r == utf8.RuneError && n == 1 || r < 0x20 && r != '\t' && r != '\n' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
				return false
			}
			b = b[n:]
		}
		return true
	}
	base := bytes.Repeat([]byte("abcdefgh"), 3)
	for c := range 256 {
		for i := range base {
			b := bytes.Clone(base)
			b[i] = byte(c)
			if got, want := textOK(b), slow(b); got != want {
				t.Fatalf("byte %#x at %d: textOK %v, want %v", c, i, got, want)
			}
		}
	}
	for _, ch := range []string{"é", "🚀", "\uFFFE", "\uFFFF", "\uFFFD", "\xed\xa0\x80", "\xff", "\x7f", "\x1f", "\t"} {
		for i := range 17 {
			b := append(append(bytes.Clone(base[:i]), ch...), base...)
			if got, want := textOK(b), slow(b); got != want {
				t.Fatalf("%q at %d: textOK %v, want %v", ch, i, got, want)
			}
		}
	}
}
