//go:build race

package esmtest_test

// raceBuild says whether this test binary was built with -race: TestExternalModule builds the
// user's module the same way, so that the build cache serves it.
const raceBuild = true
