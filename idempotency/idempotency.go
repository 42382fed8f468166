package idempotency

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strconv"
	"time"

	"github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/google/uuid"

	"github.com/kafkalambda/toolkit/internal/completion"
	"github.com/kafkalambda/toolkit/internal/recovered"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// Status is the state of an idempotency entry.
type Status string

// The statuses both Powertools editions write; entries of either side are read by the other.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// Entry is what Do stores for one key: an idempotency record of Powertools.
type Entry struct {
	// ID is the stored key: "<prefix>#<hash of the key>".
	ID     string
	Status Status
	// Expiration is when the entry stops counting (the table's TTL attribute), to the second.
	// The zero time means the entry never expires.
	Expiration time.Time
	// InProgressExpiration is when an in-progress entry's lease ends, to the millisecond. The
	// zero time means the lease lasts until Expiration. Do keeps it on the completed entry;
	// stores write it there or not as their format says (FormatTypeScript keeps it).
	InProgressExpiration time.Time
	// Data is the stored result as JSON text; empty for an in-progress entry, or when the
	// result was not stored (WithoutResult). A store keeps it in its own form (a DynamoDB map
	// for FormatTypeScript) and gives it back as JSON text.
	Data string
	// Validation is the hash of the payload that must not change for this key, if any.
	Validation string
	// Owner identifies the Do call that wrote the entry: a random UUID, new for each call.
	// It lets a call recognise its own in-progress entry when the store retries a write
	// whose answer was lost, and it makes Complete and Release act only on the caller's own
	// entry. Entries written by Powertools, or before owners were recorded, have none.
	Owner string
}

// Store keeps idempotency entries. dynamodb.NewStore (package idempotency/dynamodb) returns
// the one for DynamoDB, and idempotencytest.NewStore one in memory for tests;
// idempotencytest.TestStore is the suite every Store must pass. A Store must be safe for
// concurrent use.
//
// Do bounds the context of every call by the invocation's deadline, or by the lease it holds
// for the calls made after Do returned (see [Do]); a store returns when its context ends. Do
// retries a failed Complete, Release or Renew while the error is transient by the AWS SDK's
// rules (throttling, a 5xx answer, a connection error, or an error with a RetryableError()
// bool method that says true), so a store need not retry itself; every retry must then be
// safe, which the owner conditions of its methods make it.
type Store interface {
	// Acquire writes r, an in-progress entry, unless a live entry with the same ID and
	// another owner exists: a completed entry not yet expired (to the second), or an
	// in-progress one whose lease (InProgressExpiration, to the millisecond) has not ended at
	// now, whatever its Expiration; an in-progress entry without a lease lives until it
	// expires. Then it returns that entry and ErrExists. A stored entry with r's Owner is
	// r itself, written by an earlier attempt whose answer was lost: Acquire writes over it.
	// A nil existing entry with ErrExists means the entry vanished before it could be
	// read; Do tries again. A stored entry that cannot be read is a *CorruptEntryError.
	Acquire(ctx context.Context, r *Entry, now time.Time) (existing *Entry, err error)
	// Complete stores the completed entry r in place of the stored one, if that is still
	// r's: it has r's Owner (or, for an r without an owner, none). Otherwise (the lease ended
	// and another caller took the key over, or the entry is gone) it stores nothing and
	// returns an error. Completing an entry that is already r's completion succeeds.
	Complete(ctx context.Context, r *Entry) error
	// Release deletes the in-progress entry r, and only if it is still r's: in progress,
	// with r's Owner (or, for an r without an owner, none and r's lease). An entry that is
	// not r's, or no entry, is left alone and is not an error.
	Release(ctx context.Context, r *Entry) error
	// Renew stores r, the caller's in-progress entry with a later lease (InProgressExpiration
	// and Expiration), in place of the stored one if that is still r's: in progress, with r's
	// Owner (never empty). Otherwise (completed, taken over by another caller, or gone) it
	// stores nothing and returns an error wrapping ErrLeaseLost. Do renews while fn runs
	// past half its lease, and while a completion that could not be stored is retried.
	Renew(ctx context.Context, r *Entry) error
	// Format is the layout of the store's entries, which decides how Do hashes keys and
	// payloads.
	Format() Format
}

// Errors. Store failures come wrapped in *PersistenceError. An invalid option is a
// *toolkit.OptionError, which matches toolkit.ErrInvalidOption.
var (
	// ErrInProgress: another invocation holds the key and its lease has not ended. Report
	// the record as failed so that it is delivered again later.
	ErrInProgress = errors.New("idempotency: another invocation is processing this key")
	// ErrPayloadMismatch: the key was used before with a different payload.
	ErrPayloadMismatch = errors.New("idempotency: payload differs from the one first seen with this key")
	// ErrExists is returned by Store.Acquire when a live entry exists.
	ErrExists = errors.New("idempotency: entry exists")
	// ErrInconsistentState: the entry kept vanishing between the conditional write and the
	// read that followed it.
	ErrInconsistentState = errors.New("idempotency: entry changed while it was being read")
	// ErrResultTooLarge: the result does not fit in a DynamoDB item (limits.MaxDynamoDBItemBytes).
	ErrResultTooLarge = errors.New("idempotency: result too large to store")
	// ErrEmptyKey: Do was given an empty key (an SQS message without a MessageId, say).
	// Every such call would share one entry, and all but the first would be skipped as
	// replays, so Do refuses it: nothing was stored and fn did not run.
	ErrEmptyKey = errors.New("idempotency: empty key")
	// ErrNotRecorded: fn ran and succeeded, so its side effect has happened, but its
	// completion could not be stored, even after retries within the deadline. Do returns it
	// (wrapped in a *PersistenceError, Op "complete") together with fn's result. The entry
	// stays in progress, its lease renewed, while the completion is retried after Do returns,
	// so no other caller runs fn meanwhile. Do not report the input for redelivery: that
	// could apply the effect a second time.
	ErrNotRecorded = errors.New("idempotency: fn succeeded but its completion was not stored")
	// ErrLeaseLost: fn ran, but its lease ended before its completion could be stored (it
	// could not be renewed, or another call took the key over), so another call may run fn
	// too: Do returns it (wrapped in a *PersistenceError, Op "complete") instead of a success,
	// and fn's context ends with the lease (its cause is ErrLeaseLost). Store.Renew returns it
	// for an entry that is no longer the caller's. Report the input for redelivery: it will
	// replay what the other call stored, or wait for it.
	ErrLeaseLost = errors.New("idempotency: this call's lease on the key ended before its completion was stored")
)

// PersistenceError reports a failure of the store. Op is "acquire", "complete" or
// "release".
type PersistenceError struct {
	Op  string
	Key string
	Err error
}

func (e *PersistenceError) Error() string {
	return fmt.Sprintf("idempotency: %s %q: %v", e.Op, e.Key, e.Err)
}

func (e *PersistenceError) Unwrap() error { return e.Err }

// CorruptEntryError reports a stored entry that cannot be read: an attribute of the wrong
// type, a number that does not parse, an unknown status, data that is not JSON. Do fails
// closed on it (fn does not run, the error comes wrapped in a *PersistenceError): the entry
// may be another tool's, or written with other attribute names or another Format.
type CorruptEntryError struct {
	ID        string // the stored ID that was looked up
	Attribute string // the attribute's name in the store
	Err       error  // what is wrong with it
}

func (e *CorruptEntryError) Error() string {
	return fmt.Sprintf("idempotency: entry %q: attribute %q: %v", e.ID, e.Attribute, e.Err)
}

func (e *CorruptEntryError) Unwrap() error { return e.Err }

// maxAttempts is how many times Do tries to acquire when the entry keeps vanishing: once,
// and twice more, as Powertools does.
const maxAttempts = 3

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
// Every store call ends by ctx's deadline less WithStoreDeadlineMargin (100 ms), or, when ctx has
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
	var zero T
	cfg := newConfig(opts)
	if cfg.err != nil {
		return zero, cfg.err
	}
	if off, err := disabled(); err != nil || off {
		if err != nil {
			return zero, err
		}
		return fn(ctx)
	}
	if store == nil {
		return zero, optionError("Do", "nil Store")
	}
	if key == "" {
		return zero, ErrEmptyKey
	}
	var format Format
	if pe := recovered.Call("idempotency: the store's Format", func() { format = store.Format() }); pe != nil {
		return zero, pe
	}
	if !format.valid() {
		return zero, optionError("Store", fmt.Sprintf("store %T has an unknown entry format, %v", store, format))
	}
	id, err := cfg.id(format, key)
	if err != nil {
		return zero, err
	}
	var validation string
	if payload != nil {
		if validation, err = format.hash(cfg.newHash, payload); err != nil {
			return zero, fmt.Errorf("idempotency: payload: %w", err)
		}
	}

	if h := holding(ctx, store, id); h != nil {
		if validation != "" && h.validation != "" && validation != h.validation {
			return zero, ErrPayloadMismatch
		}
		return fn(ctx)
	}

	// Every store call ends by the invocation's deadline, less the margin the caller needs
	// to report; a context without a deadline stands for an invocation that ends when the
	// default lease does.
	deadline, ok := ctx.Deadline()
	if !ok {
		deadline = time.Now().Add(cfg.defaultLease)
	}
	stop := deadline.Add(-cfg.margin)
	owner := uuid.NewString()

	rec, replay, err := claim[T](ctx, &cfg, stop, store, id, validation, owner)
	if err != nil || replay != nil {
		if replay != nil {
			return *replay, nil
		}
		return zero, err
	}

	held := context.WithValue(ctx, heldKey{}, &heldEntry{store: store, id: id, validation: validation, outer: heldBy(ctx)})
	// The lease is renewed while fn runs, and fn's context ends if it cannot be.
	h := hold(ctx, &cfg, store, rec)
	held = h.bind(held)
	panicked := true
	defer func() {
		if panicked {
			h.end()
		}
	}()
	result, err := run(held, stop, store, rec, func(ctx context.Context) (result T, err error) {
		failed := true
		defer func() {
			h.pause()
			if failed { // an error or a panic: the entry is released, not renewed
				h.end()
			}
		}()
		result, err = fn(ctx)
		failed = err != nil
		return result, err
	})
	panicked = false
	if err != nil {
		h.end()
		if pe := (*PersistenceError)(nil); errors.As(err, &pe) && pe.Op == "release" && (transient(pe.Err) || errors.Is(pe.Err, context.DeadlineExceeded)) {
			h.releaseLater()
		}
		return zero, err
	}
	return result, complete(ctx, &cfg, stop, h, result)
}

// claim acquires id for this call, trying again (at most maxAttempts times) while what the
// store holds cannot be read as held or done. It returns the entry now held, or the stored
// result of an entry already completed (replay), or the error: ErrInProgress,
// ErrPayloadMismatch, a *PersistenceError.
func claim[T any](ctx context.Context, cfg *config, stop time.Time, store Store, id, validation, owner string) (rec *Entry, replay *T, err error) {
	for attempt := 1; ; attempt++ {
		now := cfg.now()
		lease := cfg.leaseEnd(ctx, now)
		expires := now.Add(cfg.expiry).Truncate(time.Second)
		rec = &Entry{
			ID:     id,
			Status: StatusInProgress,
			// Never before the lease ends: Powertools takes over an in-progress entry
			// once it expires, whatever its lease, and DynamoDB's TTL deletes it.
			Expiration:           latest(expires, lease.Truncate(time.Second)),
			InProgressExpiration: lease,
			Validation:           validation,
			Owner:                owner,
		}
		existing, err := acquire(ctx, stop, store, rec, now)
		if err == nil {
			return rec, nil, nil
		}
		if !errors.Is(err, ErrExists) {
			return nil, nil, asPersistence("acquire", id, err)
		}
		if existing == nil {
			if attempt < maxAttempts {
				continue
			}
			return nil, nil, &PersistenceError{Op: "acquire", Key: id, Err: ErrInconsistentState}
		}
		if existing.Status != StatusCompleted && existing.Status != StatusInProgress {
			return nil, nil, &PersistenceError{Op: "acquire", Key: id,
				Err: &CorruptEntryError{ID: id, Attribute: "status", Err: fmt.Errorf("unknown status %q", existing.Status)}}
		}
		if validation != "" && existing.Validation != "" && existing.Validation != validation {
			return nil, nil, ErrPayloadMismatch
		}
		switch {
		case existing.Status == StatusCompleted && existing.live(now):
			var out T
			if existing.Data != "" {
				if err := json.Unmarshal([]byte(existing.Data), &out); err != nil {
					return nil, nil, fmt.Errorf("idempotency: stored result of %q does not decode into %T: %w", id, out, err)
				}
			}
			if cfg.onReplay != nil {
				// A panic of the hook is the call's error: it never leaves Do (on Lambda
				// Managed Instances it would end every invocation the process serves).
				if pe := recovered.Call("idempotency: WithReplayHook", func() { cfg.onReplay(ctx, existing) }); pe != nil {
					return nil, nil, pe
				}
			}
			return nil, &out, nil
		case existing.Status == StatusInProgress && existing.live(now):
			return nil, nil, ErrInProgress
		}
		// The entry had expired by our clock but not by the store's condition (clocks
		// differ): try again.
		if attempt >= maxAttempts {
			return nil, nil, &PersistenceError{Op: "acquire", Key: id, Err: ErrInconsistentState}
		}
	}
}

// complete stores the completion of h's entry with result unless the options say to store
// none, expiring WithExpiry after now, as Powertools sets it when it saves the success. fn
// has run: every error is a *PersistenceError wrapping ErrNotRecorded, or ErrLeaseLost when
// the lease had ended, unrenewed, before the completion could be stored. A completion that
// fails for a transient reason, or for want of time, is retried after Do returns, under a
// renewed lease (see completeLater).
func complete[T any](ctx context.Context, cfg *config, stop time.Time, h *holder, result T) error {
	done := h.entry()
	id := done.ID
	// fn has run and its effect has happened: from here on a failure is ErrNotRecorded, and
	// the entry stays in progress so that nothing runs fn again before the lease ends.
	done.Status = StatusCompleted
	done.Expiration = cfg.now().Add(cfg.expiry).Truncate(time.Second)
	if cfg.storeResult {
		data, err := json.Marshal(result)
		if err != nil {
			h.end()
			return &PersistenceError{Op: "complete", Key: id, Err: fmt.Errorf("%w: result does not encode as JSON: %w", ErrNotRecorded, err)}
		}
		if len(data) > maxData {
			h.end()
			return &PersistenceError{Op: "complete", Key: id,
				Err: fmt.Errorf("%w: %w: %d bytes of JSON, the limit is %d (WithoutResult stores none)", ErrNotRecorded, ErrResultTooLarge, len(data), maxData)}
		}
		done.Data = string(data)
	} else {
		done.Data = outcomeData(result) // package batch's "sunk" (internal/completion)
	}
	// Save the result even if the caller's context has been cancelled, until the deadline. A
	// completion that fails, or is still not stored halfway through what is left of the
	// lease, asks for a renewal, so that its retries happen under a lease that outlives them.
	slow := time.AfterFunc(h.halfLeft(), h.kick)
	defer slow.Stop()
	err := persist(ctx, stop, "Complete", func(ctx context.Context) error {
		err := h.store.Complete(ctx, &done)
		if err != nil && transient(err) {
			h.kick()
		}
		return err
	})
	if err == nil {
		h.end()
		return nil
	}
	lost := h.lost()
	if transient(err) || errors.Is(err, context.DeadlineExceeded) {
		h.completeLater(&done)
	} else {
		h.end()
	}
	if lost {
		// Another call may hold the key and run fn: this result is not a success.
		return &PersistenceError{Op: "complete", Key: id, Err: fmt.Errorf("%w: %w", ErrLeaseLost, err)}
	}
	return &PersistenceError{Op: "complete", Key: id, Err: fmt.Errorf("%w: %w", ErrNotRecorded, err)}
}

// acquire calls store.Acquire under ctx, ended at stop.
func acquire(ctx context.Context, stop time.Time, store Store, r *Entry, now time.Time) (*Entry, error) {
	if time.Until(stop) <= 0 {
		return nil, errNoTime
	}
	ctx, cancel := context.WithDeadline(ctx, stop)
	defer cancel()
	var existing *Entry
	err := recovered.CallErr("idempotency: the store's Acquire", func() (err error) {
		existing, err = store.Acquire(ctx, r, now)
		return err
	})
	return existing, err
}

// errNoTime is the error of a store call that was not made because the deadline, less the
// margin, had passed.
var errNoTime = fmt.Errorf("no time left before the deadline, less the margin (WithStoreDeadlineMargin): %w", context.DeadlineExceeded)

// persist calls a store write that must happen although the caller's context may have been
// cancelled (fn has run): under a context that keeps ctx's values, is not cancelled with it
// and ends at stop. It retries while the error is transient, with a jittered exponential
// backoff, as long as the wait fits before stop; it returns the last error.
func persist(ctx context.Context, stop time.Time, op string, call func(context.Context) error) error {
	if time.Until(stop) <= 0 {
		return errNoTime
	}
	ctx, cancel := context.WithDeadline(context.WithoutCancel(ctx), stop)
	defer cancel()
	for attempt := 0; ; attempt++ {
		// A store's panic is its error (not transient): persist runs on Do's goroutine and on
		// the lease's timers and background completions, where a panic would end the process.
		err := recovered.CallErr("idempotency: the store's "+op, func() error { return call(ctx) })
		if err == nil || ctx.Err() != nil || !transient(err) {
			return err
		}
		wait := backoff(attempt)
		if time.Until(stop) <= wait {
			return err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
	}
}

// transient reports whether a store error may go away on its own, by the AWS SDK's rules:
// throttling, a 5xx answer, a connection error, or an error that says it is retryable.
func transient(err error) bool {
	return retry.IsErrorRetryables(retry.DefaultRetryables).IsErrorRetryable(err) == aws.TrueTernary
}

// backoff is the wait before retry attempt+1 of a store write: up to 25 ms doubled per
// attempt, at most 1 s, drawn at random so that callers throttled together spread out.
func backoff(attempt int) time.Duration {
	ceiling := min(25*time.Millisecond<<min(attempt, 6), time.Second)
	return ceiling/2 + rand.N(ceiling/2)
}

func latest(a, b time.Time) time.Time {
	if b.After(a) {
		return b
	}
	return a
}

// heldKey is the context key of the entries held by the Do calls a context runs under.
type heldKey struct{}

// heldEntry is one entry held by a Do call, and the one held by the call around it.
type heldEntry struct {
	store      Store
	id         string
	validation string
	outer      *heldEntry
}

func heldBy(ctx context.Context) *heldEntry {
	h, _ := ctx.Value(heldKey{}).(*heldEntry)
	return h
}

// holding returns the entry with this ID that a Do call around ctx holds in store, or nil.
func holding(ctx context.Context, store Store, id string) *heldEntry {
	h := heldBy(ctx)
	if h == nil || !reflect.TypeOf(store).Comparable() {
		return nil
	}
	for ; h != nil; h = h.outer {
		if h.id == id && reflect.TypeOf(h.store) == reflect.TypeOf(store) && h.store == store {
			return h
		}
	}
	return nil
}

// live reports whether the entry still holds its key at now, by the store's own condition:
// an in-progress entry with a lease until the lease's last millisecond, whatever its
// expiration (so that a short WithExpiry never frees a key that a running call holds);
// any other entry until its expiration second has passed (an in-progress entry without a
// lease, written by an old Powertools version, included). An entry without expiration never
// expires, by the condition as in Python.
func (r *Entry) live(now time.Time) bool {
	if r.Status == StatusInProgress && !r.InProgressExpiration.IsZero() {
		return now.UnixMilli() <= r.InProgressExpiration.UnixMilli()
	}
	return r.Expiration.IsZero() || now.Unix() <= r.Expiration.Unix()
}

// maxData keeps an item under DynamoDB's item size limit, leaving room for the other
// attributes.
const maxData = limits.MaxDynamoDBItemBytes - 4096

// run calls fn, and releases the entry if fn fails or panics; the release ends at stop.
func run[T any](ctx context.Context, stop time.Time, store Store, rec *Entry, fn func(context.Context) (T, error)) (result T, err error) {
	release := func() error {
		return persist(ctx, stop, "Release", func(ctx context.Context) error { return store.Release(ctx, rec) })
	}
	defer func() {
		if p := recover(); p != nil {
			// Free the key for a retry, then let the panic go on. A failed release cannot be
			// returned past a panic; the entry then holds the key only until its lease ends
			// (the function's deadline), after which a redelivery takes it over.
			_ = release()
			panic(p)
		}
	}()
	result, err = fn(ctx)
	if err != nil {
		if rerr := release(); rerr != nil {
			err = errors.Join(err, asPersistence("release", rec.ID, rerr))
		}
		var zero T
		return zero, err
	}
	return result, nil
}

func asPersistence(op, id string, err error) error {
	var pe *PersistenceError
	if errors.As(err, &pe) {
		return err
	}
	return &PersistenceError{Op: op, Key: id, Err: err}
}

// leaseEnd is when an in-progress entry stops blocking others.
func (c *config) leaseEnd(ctx context.Context, now time.Time) time.Time {
	end := now.Add(c.defaultLease)
	if d, ok := ctx.Deadline(); ok {
		end = d
	}
	if c.maxLease > 0 && end.After(now.Add(c.maxLease)) {
		end = now.Add(c.maxLease)
	}
	return end.Truncate(time.Millisecond)
}

// id is the stored ID of key: "<prefix>#<hash>", hashed as format says.
func (c *config) id(format Format, key string) (string, error) {
	h, err := format.hash(c.newHash, key)
	if err != nil {
		return "", err
	}
	return c.prefix + "#" + h, nil
}

// KafkaKey is the key of a Kafka record's redeliveries: "topic-partition-offset". It makes a
// retried batch, or a partition replayed after a partial failure, skip the records already
// handled. A producer's retry writes the same message at a new offset: for that, key on a
// business identifier from the value instead.
func KafkaKey(r *kafkaevent.Record) string {
	return r.Topic + "-" + strconv.FormatInt(int64(r.Partition), 10) + "-" + strconv.FormatInt(r.Offset, 10)
}

// SQSKey is the key of an SQS message's redeliveries: its message ID. A sender that sends the
// same thing twice makes two messages with two IDs: for that, key on a business identifier
// from the body (or use a FIFO queue's deduplication within its five minutes).
func SQSKey(m *events.SQSMessage) string { return m.MessageId }

// outcomeData is what a completion under WithoutResult stores for result: the JSON of a
// non-empty completion.Outcome (package batch's), or nothing.
func outcomeData[T any](result T) string {
	o, ok := any(result).(completion.Outcome)
	if !ok || o == "" {
		return ""
	}
	b, _ := o.MarshalJSON() // a string field: never an error
	return string(b)
}
