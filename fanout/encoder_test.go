package fanout

import (
	"bytes"
	"reflect"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// TestEncoderSharesNothingVisible builds the entries of every record shape, and of a value
// large enough for a chunk of its own, with one encoder, as a Dispatch does, in two rounds, and checks each against the entry of a fresh encoder:
// strings and bytes written for one record must never show up in, or be changed by, another.
func TestEncoderSharesNothingVisible(t *testing.T) {
	s := shapes()
	for name, n := range map[string]int{"3,000-byte text": 3000, "20,000-byte text": 20000} { // a chunk's share, and its own
		s[name] = &kafkaevent.Record{Topic: "orders", Partition: 1, Offset: int64(n), Key: []byte("k"), Value: bytes.Repeat([]byte("v"), n)}
	}
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

// TestIDsStayTheSame pins the deduplication and group IDs to those the dispatcher has always
// sent (computed by the code before the encoder): a record replayed across a deployment
// must get the ID its first copy had, or SQS would enqueue it twice.
func TestIDsStayTheSame(t *testing.T) {
	long := strings.Repeat("t", 130)
	for _, c := range []struct {
		r            *kafkaevent.Record
		dedup, group string
	}{
		{&kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42, Key: []byte("customer-7")},
			"8279786f6d9364ea56868eced7e8fc4d4cf1c0952690a274f2db714d0363ef85", "customer-7"},
		{&kafkaevent.Record{Topic: "orders", Partition: 3, Offset: 42},
			"8279786f6d9364ea56868eced7e8fc4d4cf1c0952690a274f2db714d0363ef85", "orders-3"},
		{&kafkaevent.Record{Topic: long, Partition: 2147483647, Offset: 9223372036854775807, Key: []byte("a b")},
			"9de6116856bcbadc651a3101f4adfb8b8cdffb1f034acf28805c8a9439643112", "c8687a08aa5d6ed2044328fa6a697ab8e96dc34291e8c2034ae8c38e6fcc6d65"},
		{&kafkaevent.Record{Topic: long, Partition: 5, Offset: 0},
			"6e35f27b555886b33a5d845e8f518a8cdd47f6bb4485b40f7325f8bfd9f3e7ec", "76c751b305bbc2275c8225800646d03a7d6fb9aaeef35febaf1884c00c308845"},
	} {
		if got := string(appendDeduplicationID(nil, c.r)); got != c.dedup {
			t.Errorf("%s-%d@%d: deduplication ID %s, want %s", c.r.Topic[:6], c.r.Partition, c.r.Offset, got, c.dedup)
		}
		if got := groupByKey(c.r); got != c.group {
			t.Errorf("%s-%d@%d: group %s, want %s", c.r.Topic[:6], c.r.Partition, c.r.Offset, got, c.group)
		}
		e, _, err := entry(c.r, true, nil)
		if err != nil || *e.MessageDeduplicationId != c.dedup || *e.MessageGroupId != c.group {
			t.Errorf("%s-%d@%d: entry's IDs %v, %v (%v)", c.r.Topic[:6], c.r.Partition, c.r.Offset, e.MessageDeduplicationId, e.MessageGroupId, err)
		}
	}
}
