// Package ledger is the model of what klt local observed of every record it produced: the
// records themselves (Input), each mapping's events for each record (Step), every side effect
// klt saw with the record it belongs to and how its identity was read (Effect), the side
// effects whose record could not be told (Unattributed), and the mappings' invocations
// (Invocation). Package stackrun's observers (the mappings' esm.Observer, the proxies in
// front of the local servers, the HTTP sink, the readers of failure queues and output
// topics) record into a Ledger; package report reads it.
//
// It holds facts only: a record's fate is what the ledger saw, never what klt expected.
// Account turns the facts into what the report says of a pipeline: each record's fate, and
// for each resource where the pipeline's last function's side effects are observed, what
// was applied, applied twice and out of order; where nothing can be observed, those counts
// are unobservable, never 0 (Measure).
//
// The package is pure: no I/O, no goroutines, no clock (every time in it is one the caller
// gave). A Ledger is safe for concurrent use, as the observers record from their own
// goroutines.
package ledger
