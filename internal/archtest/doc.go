// Package archtest holds no code: its test checks the toolkit's layers as docs/architecture.md
// writes them down. The test reads the page's two tables (the layers, with what each may
// import, and every package with its layer), lists the packages of every module of the
// toolkit (the root and the nested cmd/klt, esm, samples, xraytrace and oteltrace, which
// go.work makes one workspace) with `go list -deps -json github.com/kafkalambda/toolkit/...`,
// and fails when a package is missing from the page, a row names
// no package, a package imports a module package of a layer its own may not import, or one of
// the page's rules of dependencies is broken (`testing` in product code, franz-go behind
// batch, the DynamoDB client behind producer, the YAML library outside internal/template).
// A second test fails for every function of the module longer than 120 lines.
//
// To run it:
//
//	go test -count=1 ./internal/archtest
package archtest
