package idempotency

// The engine of Do, its options, entries and formats live in internal/idemcore, which does
// not import the DynamoDB client: package batch imports idemcore, so that a function using
// batch without idempotency does not link the client's package initialisation (its service
// schemas and endpoint tables, 0.6 MB on linux/arm64). The names below are the same types,
// values and functions under the names users know; the DynamoDB store is in dynamodb.go.

import (
	"context"
	"hash"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/idemcore"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Format is the entry layout of one Powertools edition: how the stored ID and the payload's
// validation hash are computed from a key and a payload, and how a result is stored. A Store
// has one format ([WithFormat] for the DynamoDB store), and Do hashes keys the store's way, so
// that a Go function and a Powertools function of that edition, with the same key prefix and
// the same key, share an entry: each replays what the other stored and waits while the other
// runs.
//
// The attributes (id, expiration, in_progress_expiration, status, data, validation), the
// statuses (INPROGRESS, COMPLETED), the write condition and the hash function (MD5) are the
// same in both editions. What differs:
//
//	                     FormatPython (default)          FormatTypeScript
//	hashed text          json.dumps(v, sort_keys=True)   JSON.stringify(deepSort(v))
//	digest encoding      hex                             base64 (standard, padded)
//	data attribute       the result as a JSON string (S) the result as a DynamoDB value (M, L, S, N, BOOL, NULL)
//	completed entries    in_progress_expiration dropped  in_progress_expiration kept
//
// So the key "orders-0-42" under the prefix "fn" is stored as
// "fn#" + hex(md5(`"orders-0-42"`)) by Python and "fn#" + base64(md5(`"orders-0-42"`)) by
// TypeScript; the hashed texts differ for non-ASCII text (Python escapes it), numbers
// (Python keeps 1.0, JavaScript writes 1) and object keys (Python sorts by code point,
// TypeScript ignoring case).
type Format = idemcore.Format

// The formats.
const (
	// FormatPython is the layout of Powertools for AWS Lambda (Python).
	FormatPython = idemcore.FormatPython
	// FormatTypeScript is the layout of Powertools for AWS Lambda (TypeScript), package
	// @aws-lambda-powertools/idempotency, checked against version 2.35.0.
	FormatTypeScript = idemcore.FormatTypeScript
)

// Status is the state of an idempotency entry.
type Status = idemcore.Status

// The statuses both Powertools editions write; entries of either side are read by the other.
const (
	StatusInProgress = idemcore.StatusInProgress
	StatusCompleted  = idemcore.StatusCompleted
)

// Entry is what Do stores for one key: an idempotency record of Powertools. Its fields are
// documented where it is defined: go doc github.com/kafkalambda/toolkit/internal/idemcore.Entry.
type Entry = idemcore.Entry

// Store keeps idempotency entries. NewDynamoDBStore returns the one for DynamoDB, and
// idempotencytest.NewStore one in memory for tests; idempotencytest.TestStore is the suite
// every Store must pass. A Store must be safe for concurrent use.
//
// Do bounds the context of every call by the invocation's deadline, or by the lease it holds
// for the calls made after Do returned (see [Do]); a store returns when its context ends. Do
// retries a failed Complete, Release or Renew while the error is transient by the AWS SDK's rules (throttling, a 5xx answer, a connection error, or an error
// with a RetryableError() bool method that says true), so a store need not retry itself;
// every retry must then be safe, which the owner conditions of its methods make it.
//
// Its methods' contracts are documented where it is defined, in internal/idemcore:
// go doc github.com/kafkalambda/toolkit/internal/idemcore.Store.
type Store = idemcore.Store

// PersistenceError reports a failure of the store. Op is "acquire", "complete" or
// "release".
type PersistenceError = idemcore.PersistenceError

// CorruptEntryError reports a stored entry that cannot be read: an attribute of the wrong type,
// a number that does not parse, an unknown status, data that is not JSON. Do fails closed on
// it (fn does not run, the error comes wrapped in a *PersistenceError): the entry may be
// another tool's, or written with other attribute names or another Format.
//
// Its fields: go doc github.com/kafkalambda/toolkit/internal/idemcore.CorruptEntryError.
type CorruptEntryError = idemcore.CorruptEntryError

// Do runs fn once per key. The first call for a key writes an in-progress entry, runs fn,
// and stores its result; later calls with the same key return the stored result without
// running fn, until the entry expires. While the first call runs, others get ErrInProgress.
//
// key is what makes two calls the same: KafkaKey or SQSKey for redeliveries of one record, or
// a business key from the payload (an order ID) when a producer may send the same thing
// twice. The stored ID is "<prefix>#<hash>" where the hash is computed as the Powertools
// edition of the store's Format computes it, so a Powertools function selecting the same key
// shares the entry.
//
// payload, when not nil, is the part of the input that must not change for the same key: its
// hash is stored, and a later call whose payload hashes differently gets ErrPayloadMismatch.
//
// If fn fails or panics, the in-progress entry is deleted (so a retry runs fn again) and the
// error is returned or the panic goes on. If the store fails before fn runs, fn does not run
// and the error is a *PersistenceError (fail closed). If fn succeeds and its completion cannot
// be stored, even after retries, Do returns fn's result with ErrNotRecorded and leaves the
// entry in progress: the package doc's table lists every case.
//
// Every store call ends by ctx's deadline less WithDeadlineMargin (100 ms), or, when ctx has
// none, by the end of the default lease (WithDefaultLease) less the margin; the completion
// and the release are made even if ctx has been cancelled, until then. Each call writes a
// new owner (Entry.Owner) into its entry, so that a write the SDK retries after its answer
// was lost is recognised as the caller's own.
//
// # Nested calls
//
// The context Do passes to fn records that this call holds the key in this store. A Do
// inside fn (or anywhere under that context) with the same store (the same Store value, by
// ==) and the same stored ID (the same key, prefix, hash and format) is covered by the outer
// call's lease: it makes no store call and replays nothing, it runs its fn and returns its
// result, and the outer call's completion is what gets stored. So batch.WithIdempotency and
// a Do on KafkaKey in the handler compose. The nested call's payload is checked against the
// outer call's when both give one (a difference is ErrPayloadMismatch, and fn does not run);
// its other options (expiry, lease, result, replay hook) do not apply, because it writes
// nothing. A nested Do with another key or another store is an ordinary call: it takes and
// completes its own entry. A store whose dynamic type is not comparable is never the same.
func Do[T any](ctx context.Context, store Store, key string, payload any, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	return idemcore.Do(ctx, store, key, payload, fn, opts...)
}

// KafkaKey is the key of a Kafka record's redeliveries: "topic-partition-offset". It makes a
// retried batch, or a partition replayed after a partial failure, skip the records already
// handled. A producer's retry writes the same message at a new offset: for that, key on a
// business identifier from the value instead.
func KafkaKey(r *kafkaevent.Record) string {
	return idemcore.KafkaKey(r)
}

// SQSKey is the key of an SQS message's redeliveries: its message ID. A sender that sends the
// same thing twice makes two messages with two IDs: for that, key on a business identifier
// from the body (or use a FIFO queue's deduplication within its five minutes).
func SQSKey(m *events.SQSMessage) string {
	return idemcore.SQSKey(m)
}

// Option configures one call of [Do]. An invalid option (a duration of zero or less, a nil
// function) makes Do fail with [ErrInvalidOption] before it touches the store or runs fn.
type Option = idemcore.Option

// DisabledEnv is the environment variable that turns idempotency off, as in Powertools: when
// it is set to a true value (1, t, true, y, yes, on, in any case), Do just calls fn; a false
// value (0, f, false, n, no, off) or no value leaves it on, and anything else makes Do fail
// (it cannot tell which was meant).
const DisabledEnv = idemcore.DisabledEnv

// WithKeyPrefix sets the prefix of stored IDs, "<prefix>#<hash of the key>". The default is
// the function's name (AWS_LAMBDA_FUNCTION_NAME), or "idempotency" outside Lambda. Entries
// are found again only under the same prefix: to share entries with a Powertools function,
// use the prefix it uses (Python: its key_prefix, or "<function name>.<module>.<function>"
// for a decorated function other than the handler; TypeScript: its keyPrefix, or the
// function name for a handler). The empty prefix is allowed and gives "#<hash>".
func WithKeyPrefix(p string) Option {
	return idemcore.WithKeyPrefix(p)
}

// WithExpiry sets how long a completed entry is replayed, counted from the completion (as
// Powertools sets it when it saves the success); d must be positive. The default is 1 hour,
// as in Powertools. It does not shorten a lease: an in-progress entry expires no earlier
// than its lease ends.
func WithExpiry(d time.Duration) Option {
	return idemcore.WithExpiry(d)
}

// WithMaxLease caps how long an in-progress entry blocks other callers past the last sign of
// life of the call that holds it; d must be positive. The lease written at the claim ends at
// the context's deadline (the Lambda timeout), or d after the claim if that is earlier, so
// that a function that crashes or times out frees the key. While fn runs past half its lease
// (or half of d before its end), and while a completion that could not be stored is retried,
// Do renews the lease (Store.Renew) to d from then (without WithMaxLease, to as long as the
// claim's lease was, between 1 and 30 s), as long as the process runs: a handler that ignores its context keeps its key after the
// deadline, so a redelivery waits for it rather than running fn beside it. When a renewal
// fails until the lease ends, fn's context ends (cause ErrLeaseLost), and a result that then
// cannot be stored is ErrLeaseLost, not a success. A frozen process renews nothing: its key is
// free d after its last renewal (docs/idempotency.md, "Leases").
func WithMaxLease(d time.Duration) Option {
	return idemcore.WithMaxLease(d)
}

// WithDefaultLease sets the lease when the context has no deadline; d must be positive. The
// default is 5 minutes. Do then treats the lease's end as the invocation's deadline: its store
// calls end by then (less WithDeadlineMargin), however long fn takes.
func WithDefaultLease(d time.Duration) Option {
	return idemcore.WithDefaultLease(d)
}

// WithDeadlineMargin sets how long before the context's deadline Do's store calls end, so
// that its caller has time to report what happened before the function times out; d must
// not be negative. The default is 100 ms. A store call still running then is abandoned: an
// acquire fails (fn does not run), a completion is ErrNotRecorded. Without a deadline the
// calls end the margin before the default lease does (WithDefaultLease).
func WithDeadlineMargin(d time.Duration) Option {
	return idemcore.WithDeadlineMargin(d)
}

// WithHash sets the hash of keys and payloads. The default is MD5, as in both Powertools
// editions; any other breaks compatibility with functions that use the default.
func WithHash(newHash func() hash.Hash) Option {
	return idemcore.WithHash(newHash)
}

// WithReplayHook calls hook each time Do returns a stored result instead of calling fn. By
// default nothing is called. Given twice, the last one counts.
func WithReplayHook(hook func(ctx context.Context, r *Entry)) Option {
	return idemcore.WithReplayHook(hook)
}

// WithoutResult stores no result: a replay returns the zero value of T. Use it when the side
// effect matters and the result does not, or when results may exceed an item's size. By
// default the result is stored, as JSON.
func WithoutResult() Option {
	return idemcore.WithoutResult()
}

// WithClock makes Do read the time from now. The default is time.Now. Tests use it to move
// past an expiry or a lease without waiting (see idempotencytest).
func WithClock(now func() time.Time) Option {
	return idemcore.WithClock(now)
}

// Errors. Store failures come wrapped in *PersistenceError.
var (
	// ErrInProgress: another invocation holds the key and its lease has not ended. Report
	// the record as failed so that it is delivered again later.
	ErrInProgress = idemcore.ErrInProgress
	// ErrPayloadMismatch: the key was used before with a different payload.
	ErrPayloadMismatch = idemcore.ErrPayloadMismatch
	// ErrExists is returned by Store.Acquire when a live entry exists.
	ErrExists = idemcore.ErrExists
	// ErrInconsistentState: the entry kept vanishing between the conditional write and the
	// read that followed it.
	ErrInconsistentState = idemcore.ErrInconsistentState
	// ErrResultTooLarge: the result does not fit in a DynamoDB item (400 KB).
	ErrResultTooLarge = idemcore.ErrResultTooLarge
	// ErrInvalidOption: an option of Do or of a store, or the DisabledEnv variable, has a
	// value that cannot be used. Nothing was stored and fn did not run.
	ErrInvalidOption = idemcore.ErrInvalidOption
	// ErrEmptyKey: Do was given an empty key (an SQS message without a MessageId, say).
	// Every such call would share one entry, and all but the first would be skipped as
	// replays, so Do refuses it: nothing was stored and fn did not run.
	ErrEmptyKey = idemcore.ErrEmptyKey
	// ErrNotRecorded: fn ran and succeeded, so its side effect has happened, but its
	// completion could not be stored, even after retries within the deadline. Do returns it
	// (wrapped in a *PersistenceError, Op "complete") together with fn's result. The entry
	// stays in progress, its lease renewed, while the completion is retried after Do returns,
	// so no other caller runs fn meanwhile. Do not report the input for redelivery: that
	// could apply the effect a second time.
	ErrNotRecorded = idemcore.ErrNotRecorded
	// ErrLeaseLost: fn ran, but its lease ended before its completion could be stored (it
	// could not be renewed, or another call took the key over), so another call may run fn
	// too: Do returns it (wrapped in a *PersistenceError, Op "complete") instead of a success,
	// and fn's context ends with the lease (its cause is ErrLeaseLost). Store.Renew returns it
	// for an entry that is no longer the caller's. Report the input for redelivery: it will
	// replay what the other call stored, or wait for it.
	ErrLeaseLost = idemcore.ErrLeaseLost
)
