package esmtest_test

import (
	"bytes"
	"os"
	"testing"
)

// TestDocsTest holds the complete test of docs/testing.md, its first go block, to
// internal/doctest/orders_test.go byte for byte, so that the test the page shows is one that
// builds and passes (go test ./esm/esmtest/... runs it).
func TestDocsTest(t *testing.T) {
	page, err := os.ReadFile("../../docs/testing.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("internal/doctest/orders_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := bytes.Cut(page, []byte("\n```go\n"))
	if !ok {
		t.Fatal("docs/testing.md has no go block")
	}
	got, _, ok := bytes.Cut(rest, []byte("```\n"))
	if !ok {
		t.Fatal("docs/testing.md: the first go block is not closed")
	}
	if !bytes.Equal(got, want) {
		t.Errorf("the first go block of docs/testing.md is not esm/esmtest/internal/doctest/orders_test.go; copy the file into the page")
	}
}
