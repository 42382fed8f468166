package sqsparse_test

import (
	"os"
	"testing"

	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// FuzzParse holds Parse to encoding/json on any input: both refuse it, or both give the same
// events.SQSEvent, field by field, or the input gives a member twice (firstDuplicate), which
// encoding/json reads as the last one and Parse refuses there; Parse never panics, and its
// errors are *Error on one line. The seeds are the vendored fixtures, the edge cases of
// TestEdgeCasesAgree (members given twice among them), a generated event, and the corpus in
// testdata/fuzz/FuzzParse.
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
	f.Fuzz(func(t *testing.T, data []byte) {
		agree(t, "fuzz input", data)
	})
}
