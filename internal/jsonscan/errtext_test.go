package jsonscan

import "testing"

func TestQuoteTextAndMember(t *testing.T) {
	for in, want := range map[string]string{
		"orders-0": "orders-0", "a b": "a b", "line\nbreak": `"line\nbreak"`, "\x00\xff": `"\x00\xff"`,
		"\ufeff{": `"\ufeff{"`, "é": "é",
	} {
		if got := QuoteText(in); got != want {
			t.Errorf("QuoteText(%q) = %s, want %s", in, got, want)
		}
	}
	for in, want := range map[string]string{
		"records": ".records", "orders-0": ".orders-0", "": `[""]`, "a.b": `["a.b"]`, "x\ny": `["x\ny"]`,
	} {
		if got := Member(in); got != want {
			t.Errorf("Member(%q) = %s, want %s", in, got, want)
		}
	}
}
