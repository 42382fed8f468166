package correlation

import (
	"context"
	"strings"
	"testing"
	"unicode/utf8"
)

func TestCut(t *testing.T) {
	short := "abc"
	if got := Cut(short); got != short {
		t.Errorf("Cut(%q) = %q", short, got)
	}
	exact := strings.Repeat("a", MaxBytes)
	if got := Cut(exact); got != exact {
		t.Errorf("Cut of %d bytes changed it to %d", MaxBytes, len(got))
	}
	long := strings.Repeat("a", MaxBytes+10)
	if got := Cut(long); len(got) != MaxBytes {
		t.Errorf("Cut of %d bytes = %d bytes, want %d", len(long), len(got), MaxBytes)
	}
	// "é" is 2 bytes: with one ASCII byte first, byte MaxBytes falls inside a character.
	multi := "x" + strings.Repeat("é", MaxBytes)
	got := Cut(multi)
	if len(got) != MaxBytes-1 || !utf8.ValidString(got) {
		t.Errorf("Cut at a character boundary: %d bytes, valid %v; want %d, valid", len(got), utf8.ValidString(got), MaxBytes-1)
	}
	if b := Cut([]byte(multi)); string(b) != got {
		t.Errorf("Cut([]byte) = %d bytes, Cut(string) %d", len(b), len(got))
	}
}

func TestWithFrom(t *testing.T) {
	ctx := context.Background()
	if _, ok := From(ctx); ok {
		t.Fatal("From(Background) reported an ID")
	}
	ctx = With(ctx, strings.Repeat("z", MaxBytes*2))
	id, ok := From(ctx)
	if !ok || len(id) != MaxBytes {
		t.Errorf("From = %d bytes, %v; want %d, true", len(id), ok, MaxBytes)
	}
}

// Cut keeps a prefix of at most MaxBytes, as long as it can be without splitting a character,
// and keeps valid UTF-8 valid.
func FuzzCut(f *testing.F) {
	f.Add("abc")
	f.Add(strings.Repeat("é", MaxBytes))
	f.Add("x" + strings.Repeat("日本", MaxBytes))
	f.Fuzz(func(t *testing.T, id string) {
		got := Cut(id)
		if len(got) > MaxBytes || !strings.HasPrefix(id, got) {
			t.Fatalf("Cut(%d bytes) = %d bytes, not a prefix of at most %d", len(id), len(got), MaxBytes)
		}
		if len(id) <= MaxBytes && got != id {
			t.Fatalf("Cut changed a short ID")
		}
		if utf8.ValidString(id) && (!utf8.ValidString(got) || len(got) < MaxBytes-utf8.UTFMax+1 && len(id) > MaxBytes) {
			t.Fatalf("Cut of valid UTF-8: %d bytes, valid %v", len(got), utf8.ValidString(got))
		}
	})
}
