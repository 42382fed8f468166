// Package idempotency makes side effects happen once, however often the event source mapping
// delivers a record, through conditional writes to a DynamoDB table, in the layout of the
// idempotency records of Powertools for AWS Lambda (Python or TypeScript), so that Go and
// Powertools functions can share a table. What Do stores for a key is an [Entry] (a "record"
// in Powertools' words; here a record is always a Kafka record or an SQS message).
//
// Delivery is at least once: a batch is retried after a timeout, a partial failure replays
// the rest of a partition, a producer's retry writes the same order twice. [Do] runs a
// function once per key and replays its stored result afterwards. This package is the
// engine: Do, its options and the [Store] interface; the DynamoDB store is package
// idempotency/dynamodb, as Powertools keeps its stores under persistence/ (a function that
// imports idempotency, or batch, links no DynamoDB client unless it makes that store):
//
//	import "github.com/kafkalambda/toolkit/idempotency/dynamodb"
//
//	store, err := dynamodb.NewStore(ddb, "idempotency", dynamodb.WithLocalCache(256))
//
//	func handle(ctx context.Context, r *kafkaevent.Record) error {
//		receipt, err := idempotency.Do(ctx, store, idempotency.KafkaKey(r), nil,
//			func(ctx context.Context) (Receipt, error) { return charge(ctx, r) })
//		...
//	}
//
// The first call writes an in-progress entry with a conditional PutItem, runs the function
// and stores its result as COMPLETED: two writes. A later call with the same key returns the
// result without running the function, until the entry expires ([WithExpiry], 1 hour by
// default): one conditional write that fails, or no call at all when the store's local cache
// (dynamodb.WithLocalCache) has the entry. While the first call runs, others get [ErrInProgress]:
// report the record as failed so that it comes back later. The in-progress lease ends at the
// context's deadline, the Lambda timeout, so a crashed or timed-out invocation frees the key;
// [WithMaxLease] shortens it. While fn runs past half its lease, Do renews the lease, so
// that a handler that ignores its context and runs past the deadline (abandoned by package
// batch, in a process that keeps running) keeps its key; when the lease cannot be renewed,
// fn's context ends with it and its result is [ErrLeaseLost]. A completed entry expires
// [WithExpiry] after the completion. Nothing takes a live lease over, however short the expiry: the
// in-progress entry's expiration is written no earlier than the lease's end (so Powertools
// peers and DynamoDB's TTL keep it too), and the store's condition ignores the expiration of
// an in-progress entry that has a lease.
//
// Each call has an owner, a random UUID kept in the entry ([Entry].Owner). When the SDK
// retries a write whose answer was lost after DynamoDB applied it, the retry finds the
// caller's own entry and goes on, instead of reporting [ErrInProgress] against itself; and
// the completion and the release act only on the caller's own entry.
//
// # Deadlines
//
// Every store call ends by the context's deadline less a margin ([WithStoreDeadlineMargin],
// 100 ms), so that the caller can still report before the function times out, even when
// DynamoDB never answers. The completion and the release happen after fn, when the caller's
// context may have been cancelled: they run under a context that ignores the cancellation
// but not the deadline. A context without a deadline is treated as an invocation that ends
// when the default lease does ([WithDefaultLease], 5 minutes).
//
// # Choosing the key
//
// [KafkaKey] ("topic-partition-offset") and [SQSKey] (the message ID) identify redeliveries
// of the same record: they protect against the event source mapping's retries. A producer
// that retries writes a new record at a new offset, with a new message ID: against that, key
// on a business identifier from the payload (an order ID, a payment reference). The payload
// argument is the part that must not change for the same key; a later call with a different
// one gets [ErrPayloadMismatch].
//
// # Nested calls and package batch
//
// batch.WithIdempotency runs each record's handler inside Do on KafkaKey or SQSKey. A handler
// may call Do on the same key itself (the same code then works with and without the batch
// option): the context Do passes to its function marks the key as held, and a Do under that
// context with the same store and the same stored ID runs its function directly, inside the
// outer call's lease, without a store call of its own. Its payload is checked against the
// outer call's when both have one; its other options do not apply. A nested Do on another
// key, or on another Store value, is an ordinary call with its own entry.
//
// # Formats
//
// Do keeps one [Entry] per key in a [Store]. A Store has a [Format], which decides how Do
// computes stored IDs and payload hashes and how the store keeps results. [FormatPython],
// the default, is Powertools for Python's: the ID is "<prefix>#<md5 hex>" of the key
// serialized as json.dumps(key, sort_keys=True) writes it, and the result is a JSON string.
// [FormatTypeScript] (dynamodb.WithFormat(idempotency.FormatTypeScript)) is Powertools for
// TypeScript's: "<prefix>#<md5 base64>" of JSON.stringify of the key with its object keys
// sorted, the result as a DynamoDB map (or list, string, number), and the lease kept on
// completed entries. Both use the attributes id, expiration (epoch seconds, the TTL
// attribute), in_progress_expiration (epoch milliseconds), status, data and validation, and
// the same write condition. A Go function and a Powertools function that use the same table,
// format, prefix ([WithKeyPrefix]) and key share entries: each replays what the other stored
// and waits while the other runs. dynamodb.TableInput gives the table's definition.
//
// # Failures
//
// Do fails closed before fn runs and never loses a success after it. A store call that fails
// is retried while the failure is transient (throttling, a 5xx answer, a connection error:
// the SDK's own retries first, then Do's, up to the deadline), and then:
//
//	where it fails               fn       Do returns                          the entry
//	acquire (unreachable,        no run   a *PersistenceError, Op "acquire"  not written: a retry
//	  throttled, too slow)                                                    runs fn
//	fn returns an error          ran      fn's error                          deleted: a retry
//	                                                                          runs fn again
//	fn panics                    ran      (the panic goes on)                 deleted
//	release, after fn failed     ran      fn's error joined with a            in progress until
//	  or panicked                         *PersistenceError, Op "release"     its lease ends
//	complete, after fn succeeded ran      fn's result and ErrNotRecorded in   in progress, its
//	                                      a *PersistenceError, Op "complete"  lease renewed while
//	                                                                          the completion is
//	                                                                          retried after Do
//	                                                                          returns
//	renew, while fn ran          ran      ErrLeaseLost in a *PersistenceError whoever took it
//	  (failed until the lease             (Op "complete") when the completion over; fn's context
//	  ended)                              cannot be stored either             ended with the lease
//
// [ErrNotRecorded] means the effect has happened: do not report the input for redelivery
// (package batch counts and logs it as a success). The completion is retried after Do
// returns, under a renewed lease, until it is stored or the store refuses it for good, and
// package batch waits for it (a second at most) before its next batch on the store. A
// result too large for a DynamoDB item ([ErrResultTooLarge], unless [WithoutResult] says to
// store none) is ErrNotRecorded too. A stored entry that cannot be read (an attribute of the
// wrong type, an unknown status, data that is not JSON) is a [*CorruptEntryError] inside a
// *PersistenceError, never read as if the attribute were missing, and fn does not run. Options
// are checked once, where they are given: dynamodb.NewStore returns a *toolkit.OptionError
// (matching toolkit.ErrInvalidOption) for a bad store option, and Do fails with one, before
// anything runs, for a bad option of its own. The error names the option and the value:
// "idempotency: invalid option WithExpiry: want a positive duration, not 0s".
//
// Setting POWERTOOLS_IDEMPOTENCY_DISABLED to a true value turns it all off, as in Powertools
// ([DisabledEnv]).
//
// # Testing
//
// Package idempotencytest has an in-memory Store for unit tests of code that calls Do, and
// TestStore, the conformance suite every Store passes (the DynamoDB store passes it on a
// local DynamoDB). [WithClock] moves a test past an expiry or a lease without waiting.
package idempotency
