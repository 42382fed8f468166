// Package recheader edits the headers of franz-go records, for the tracing adapters' producer
// hooks.
package recheader

import (
	"strings"

	"github.com/twmb/franz-go/pkg/kgo"
)

// Set sets header key of hs to value, in place of the first header of that name (compared
// without regard to case), and removes the others of that name; without one, it appends it.
// It reuses hs's array: callers copy a slice they do not own first.
func Set(hs []kgo.RecordHeader, key, value string) []kgo.RecordHeader {
	out, found := hs[:0], false
	for _, h := range hs {
		if strings.EqualFold(h.Key, key) {
			if found {
				continue
			}
			h, found = kgo.RecordHeader{Key: key, Value: []byte(value)}, true
		}
		out = append(out, h)
	}
	if !found {
		return append(out, kgo.RecordHeader{Key: key, Value: []byte(value)})
	}
	clear(hs[len(out):]) // the removed duplicates' places
	return out
}
