// Package sambuild holds the test that builds every function of the repository's
// template.yaml the way `sam build` does, and nothing else.
//
// For a function with Metadata BuildMethod: makefile, sam build copies the function's source
// directory (CodeUri) to a scratch directory, leaving out .git and .aws-sam, and runs
//
//	make --makefile <source>/Makefile build-<LogicalId>
//
// in the copy, with ARTIFACTS_DIR set to the function's artifact directory; the target must
// leave an executable $ARTIFACTS_DIR/bootstrap. The test does the same for each function it
// finds in template.yaml, then opens each bootstrap with debug/elf and debug/buildinfo: a
// static, stripped linux executable for the function's architecture, built with
// -tags lambda.norpc, -trimpath and CGO_ENABLED=0, without VCS stamping.
//
//	go test ./samples/internal/sambuild
package sambuild
