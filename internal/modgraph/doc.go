// Package modgraph holds no code: its tests hold what a team inherits by depending on the
// toolkit, measured as a user measures it, on a module of a user's own built beside this
// checkout:
//
//   - TestUserModuleGraph: a function module whose handler imports batch, idempotency,
//     idempotency/dynamodb (its store), kafkaevent, codec, fanout and producer. Every module
//     in its `go list -m all` that none of its linked packages come from (`go list -deps`) is
//     something its vulnerability scanner, licence review and `go get -u` carry for nothing. The test counts them, names the ones
//     the toolkit's own go.mod brings (at most maxInherited), and holds the total.
//   - TestUserModuleGraphWithEsmtest: the same module with a test that imports esm/esmtest:
//     what the emulator adds (kfake, the schema compilers), to the tests' graph only.
//   - TestLeanPackages: the packages every function links (batch, idempotency without its
//     DynamoDB store, kafkaevent) come from no DynamoDB, Kafka, YAML or tracing module.
//
// The tests run the go command with GOWORK=off and GOFLAGS=-mod=mod in a temporary module
// whose replace directives point at this checkout, so they read the modules' go.mod files
// from the module cache (make tools downloads them) or the module proxy.
package modgraph
