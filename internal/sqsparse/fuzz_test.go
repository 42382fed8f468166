package sqsparse_test

import (
	"os"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// FuzzParse holds Parse to encoding/json on any input: both refuse it, or both give the same
// events.SQSEvent, field by field, or the input gives a member twice (firstDuplicate), which
// encoding/json reads as the last one and Parse refuses there; Parse never panics, and its
// errors are *Error on one line. The seeds are the vendored fixtures, the edge cases of
// TestEdgeCasesAgree (members given twice among them), generated events, nesting at the limit,
// and the corpus in testdata/fuzz/FuzzParse.
//
// Run: go test -run '^$' -fuzz '^FuzzParse$' -fuzztime 1m ./internal/sqsparse/
func FuzzParse(f *testing.F) {
	for _, file := range fixtureFiles(f) {
		data, err := os.ReadFile(file)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(data)
	}
	for _, payload := range edgeCases {
		f.Add([]byte(payload))
	}
	f.Add(sqsgen.Event(2, 40))
	// At the limits: unknown members nested as deep as jsonscan.MaxDepth allows and one level
	// deeper, in the envelope and in a message; and a large event (2,000 messages, 0.5 MB).
	nest := func(n int) string { return strings.Repeat("[", n) + strings.Repeat("]", n) }
	f.Add([]byte(`{"x":` + nest(jsonscan.MaxDepth-1) + `}`))
	f.Add([]byte(`{"x":` + nest(jsonscan.MaxDepth) + `}`))
	f.Add([]byte(`{"Records":[{"body":"b","x":` + nest(jsonscan.MaxDepth-3) + `}]}`))
	f.Add([]byte(`{"Records":[{"body":"b","x":` + nest(jsonscan.MaxDepth-2) + `}]}`))
	f.Add(sqsgen.Event(2000, 200))
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, "fuzz input", data)
	})
}
