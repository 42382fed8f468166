package jsonscan

import (
	"encoding/binary"
	"strconv"
	"testing"
)

func TestDigits8(t *testing.T) {
	for _, c := range []struct {
		in string
		k  int
		v  uint64
	}{
		{"12345678", 8, 12345678},
		{"00000000", 8, 0},
		{"99999999", 8, 99999999},
		{"1234567,", 7, 1234567},
		{"7,\"times", 1, 7},
		{"0}]}]}}x", 1, 0},
		{",1234567", 0, 0},
		{"12:45678", 2, 12},
		{"1/345678", 1, 1}, // '/' is just below '0'
		{"1\xff345678", 1, 1},
		{"5\xfa345678", 1, 5}, // 0xfa + 6 would carry out of its byte
		{"123456789"[:8], 8, 12345678},
	} {
		k, v := digits8(binary.LittleEndian.Uint64([]byte(c.in)))
		if k != c.k || v != c.v {
			t.Errorf("digits8(%q) = %d, %d; want %d, %d", c.in, k, v, c.k, c.v)
		}
	}
	// Every byte value in every position.
	for pos := 0; pos < 8; pos++ {
		for b := 0; b < 256; b++ {
			in := []byte("12345678")
			in[pos] = byte(b)
			k, v := digits8(binary.LittleEndian.Uint64(in))
			wantK := 0
			for wantK < 8 && in[wantK] >= '0' && in[wantK] <= '9' {
				wantK++
			}
			var wantV uint64
			if wantK > 0 {
				wantV, _ = strconv.ParseUint(string(in[:wantK]), 10, 64)
			}
			if k != wantK || v != wantV {
				t.Fatalf("digits8(%q) = %d, %d; want %d, %d", in, k, v, wantK, wantV)
			}
		}
	}
}
