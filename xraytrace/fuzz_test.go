package xraytrace

import (
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// FuzzParseTraceHeader: any header value is read without a panic; what is accepted is a
// well-formed trace ID (and parent ID), which reads back the same when written again, and
// producerTraces counts the record as a trace or as invalid, never both.
func FuzzParseTraceHeader(f *testing.F) {
	for _, s := range []string{
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793",
		" Parent=53995c3f42cd8ad8 ; Root=1-5759e988-bd862e3fe1be46a994272793 ;Lineage=a87bd80c:0",
		"Root=1-5759e988-bd862e3fe1be46a99427279;Sampled=1",
		"Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f",
		"Root=;Parent=",
		"",
		";;;=",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, v string) {
		root, parent, ok := parseTraceHeader(v)
		if !ok {
			if root != "" || parent != "" {
				t.Fatalf("rejected %q but returned %q, %q", v, root, parent)
			}
		} else {
			if len(root) != 35 || !strings.HasPrefix(root, "1-") || (parent != "" && len(parent) != 16) {
				t.Fatalf("accepted %q: root %q, parent %q", v, root, parent)
			}
			again := "Root=" + root
			if parent != "" {
				again += ";Parent=" + parent
			}
			if r2, p2, ok2 := parseTraceHeader(again); !ok2 || r2 != root || p2 != parent {
				t.Fatalf("%q read as %q, %q; written again as %q it reads as %q, %q, %v", v, root, parent, again, r2, p2, ok2)
			}
		}
		recs := []kafkaevent.Record{{Headers: []kafkaevent.Header{{Key: "x-amzn-trace-id", Value: []byte(v)}}}}
		traces, distinct, invalid := producerTraces(recs)
		if ok != (distinct == 1 && len(traces) == 1 && invalid == 0) || !ok != (invalid == 1 && distinct == 0) {
			t.Fatalf("%q: ok %v, but producerTraces gives %d traces, %d distinct, %d invalid", v, ok, len(traces), distinct, invalid)
		}
	})
}
