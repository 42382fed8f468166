package kafkaevent

import (
	"encoding/binary"
	"testing"
)

// word8 returns up to eight bytes of s as a little-endian word.
func word8(s string) uint64 {
	var b [8]byte
	copy(b[:], s)
	return binary.LittleEndian.Uint64(b[:])
}

func TestRecordWords(t *testing.T) {
	for _, c := range []struct {
		text string
		got  uint64
	}{
		{`"topic":`, uint64(wTopic)},
		{`"partiti`, uint64(wPartiti)},
		{`on":`, uint64(wOnColon)},
		{`"offset"`, uint64(wOffset)},
		{`"timesta`, uint64(wTimesta)},
		{`mp":`, uint64(wMpColon)},
		{`mpType":`, uint64(wMpType)},
		{`"key":`, uint64(wKey)},
		{`"value":`, uint64(wValue)},
		{`"headers`, uint64(wHeaders)},
		{`"valueSc`, uint64(wValueSc)},
		{`"keySche`, uint64(wKeySche)},
		{`":`, uint64(wQuoteColon)},
	} {
		if want := word8(c.text); c.got != want {
			t.Errorf("word of %q = %#x, want %#x", c.text, c.got, want)
		}
	}
}
