// Package completion holds what package idempotency and package batch share about the
// completion of an idempotency entry, and no user needs: the [Outcome] batch records for a
// record it completes without a result of its own, and the registry of completions that Do
// could not store before it returned, which batch waits for ([Settle]) before its next batch
// on the same store.
//
// It is internal so that package idempotency's API is what a user calls: Do and its options.
package completion
