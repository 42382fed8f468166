package idempotency

import (
	"context"
	"crypto/md5"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// Status is the state of an idempotency record.
type Status string

// The statuses Powertools writes; records of either side are read by the other.
const (
	StatusInProgress Status = "INPROGRESS"
	StatusCompleted  Status = "COMPLETED"
)

// Record is one idempotency record, as stored.
type Record struct {
	// ID is the stored key: "<prefix>#<hash of the key>".
	ID     string
	Status Status
	// Expiration is when the record stops counting (the table's TTL attribute), to the second.
	Expiration time.Time
	// InProgressExpiration is when an in-progress record's lease ends, to the millisecond.
	InProgressExpiration time.Time
	// Data is the stored result as JSON text; empty for an in-progress record, or when the
	// result was not stored (WithoutResult).
	Data string
	// Validation is the hash of the payload that must not change for this key, if any.
	Validation string
}

// Store keeps idempotency records. NewDynamoDBStore returns the one for DynamoDB; a Store
// must be safe for concurrent use.
type Store interface {
	// Acquire writes r, an in-progress record, unless a live record with the same ID exists:
	// a completed record not yet expired, or an in-progress one whose lease has not ended.
	// Then it returns that record and ErrExists. A nil existing record with ErrExists means
	// the record vanished before it could be read; Do tries again.
	Acquire(ctx context.Context, r *Record, now time.Time) (existing *Record, err error)
	// Complete stores the completed record r.
	Complete(ctx context.Context, r *Record) error
	// Release deletes the in-progress record r, and only if it is still r's: the same ID,
	// in progress, with the same lease.
	Release(ctx context.Context, r *Record) error
}

// Errors. Store failures come wrapped in *PersistenceError.
var (
	// ErrInProgress: another invocation holds the key and its lease has not ended. Report
	// the record as failed so that it is delivered again later.
	ErrInProgress = errors.New("idempotency: another invocation is processing this key")
	// ErrPayloadMismatch: the key was used before with a different payload.
	ErrPayloadMismatch = errors.New("idempotency: payload differs from the one first seen with this key")
	// ErrExists is returned by Store.Acquire when a live record exists.
	ErrExists = errors.New("idempotency: record exists")
	// ErrInconsistentState: the record kept vanishing between the conditional write and the
	// read that followed it.
	ErrInconsistentState = errors.New("idempotency: record changed while it was being read")
	// ErrResultTooLarge: the result does not fit in a DynamoDB item (400 KB).
	ErrResultTooLarge = errors.New("idempotency: result too large to store")
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

// Option configures Do.
type Option func(*config)

type config struct {
	prefix        string
	expiry        time.Duration
	maxLease      time.Duration
	defaultLease  time.Duration
	newHash       func() hash.Hash
	onReplay      func(ctx context.Context, r *Record)
	storeResult   bool
	now           func() time.Time
	disabledCheck bool
}

// DisabledEnv is the environment variable that turns idempotency off, as in Powertools: when
// it is set to a true value, Do just calls fn.
const DisabledEnv = "POWERTOOLS_IDEMPOTENCY_DISABLED"

// WithKeyPrefix sets the prefix of stored keys. The default is the function name
// (AWS_LAMBDA_FUNCTION_NAME), or "idempotency" outside Lambda. Records are found again only
// under the same prefix: to share records with a Python function, use the prefix Powertools
// gives it (its key_prefix, or by default "<function name>.<module>.<function>").
func WithKeyPrefix(p string) Option { return func(c *config) { c.prefix = p } }

// WithExpiry sets how long a completed record is replayed (default 1 hour).
func WithExpiry(d time.Duration) Option { return func(c *config) { c.expiry = d } }

// WithMaxLease caps how long an in-progress record blocks other callers. By default the
// lease ends at the context's deadline (the Lambda timeout), so that a function that crashes
// or times out frees the key when it could no longer be running.
func WithMaxLease(d time.Duration) Option { return func(c *config) { c.maxLease = d } }

// WithDefaultLease sets the lease when the context has no deadline (default 5 minutes).
func WithDefaultLease(d time.Duration) Option { return func(c *config) { c.defaultLease = d } }

// WithHash sets the hash of keys and payloads (default MD5, as Powertools; any other breaks
// compatibility with functions that use the default).
func WithHash(h func() hash.Hash) Option { return func(c *config) { c.newHash = h } }

// WithReplayHook calls hook when Do returns a stored result instead of calling fn.
func WithReplayHook(hook func(ctx context.Context, r *Record)) Option {
	return func(c *config) { c.onReplay = hook }
}

// WithoutResult stores no result: a replay returns the zero value of T. Use it when the
// side effect matters and the result does not, or when results may exceed an item's size.
func WithoutResult() Option { return func(c *config) { c.storeResult = false } }

// withClock is for tests.
func withClock(now func() time.Time) Option { return func(c *config) { c.now = now } }

func newConfig(opts []Option) config {
	prefix := os.Getenv("AWS_LAMBDA_FUNCTION_NAME")
	if prefix == "" {
		prefix = "idempotency"
	}
	c := config{
		prefix:        prefix,
		expiry:        time.Hour,
		defaultLease:  5 * time.Minute,
		newHash:       md5.New,
		storeResult:   true,
		now:           time.Now,
		disabledCheck: true,
	}
	for _, o := range opts {
		o(&c)
	}
	return c
}

// disabled reports whether the kill switch is on.
func disabled() bool {
	v := os.Getenv(DisabledEnv)
	if v == "" {
		return false
	}
	b, err := strconv.ParseBool(strings.TrimSpace(v))
	return err == nil && b
}

// maxAttempts is how many times Do tries to acquire when the record keeps vanishing: once,
// and twice more, as Powertools does.
const maxAttempts = 3

// Do runs fn once per key. The first call for a key writes an in-progress record, runs fn,
// and stores its result; later calls with the same key return the stored result without
// running fn, until the record expires. While the first call runs, others get ErrInProgress.
//
// key is what makes two calls the same: KafkaKey or SQSKey for redeliveries of one record, or
// a business key from the payload (an order ID) when a producer may send the same thing
// twice. The stored ID is "<prefix>#<hash>" where the hash is computed as Powertools for
// Python computes it, so a Python function selecting the same key shares the record.
//
// payload, when not nil, is the part of the input that must not change for the same key: its
// hash is stored, and a later call whose payload hashes differently gets ErrPayloadMismatch.
//
// If fn fails or panics, the in-progress record is deleted (so a retry runs fn again) and the
// error is returned or the panic goes on. If the store fails before fn runs, fn does not run
// and the error is a *PersistenceError (fail closed).
func Do[T any](ctx context.Context, store Store, key string, payload any, fn func(context.Context) (T, error), opts ...Option) (T, error) {
	var zero T
	cfg := newConfig(opts)
	if cfg.disabledCheck && disabled() {
		return fn(ctx)
	}
	id, err := cfg.id(key)
	if err != nil {
		return zero, err
	}
	var validation string
	if payload != nil {
		if validation, err = cfg.hash(payload); err != nil {
			return zero, fmt.Errorf("idempotency: payload: %w", err)
		}
	}

	var rec *Record
	for attempt := 1; ; attempt++ {
		now := cfg.now()
		rec = &Record{
			ID:                   id,
			Status:               StatusInProgress,
			Expiration:           now.Add(cfg.expiry).Truncate(time.Second),
			InProgressExpiration: cfg.leaseEnd(ctx, now),
			Validation:           validation,
		}
		existing, err := store.Acquire(ctx, rec, now)
		if err == nil {
			break
		}
		if !errors.Is(err, ErrExists) {
			return zero, asPersistence("acquire", id, err)
		}
		if existing == nil {
			if attempt < maxAttempts {
				continue
			}
			return zero, &PersistenceError{Op: "acquire", Key: id, Err: ErrInconsistentState}
		}
		if validation != "" && existing.Validation != "" && existing.Validation != validation {
			return zero, ErrPayloadMismatch
		}
		switch {
		case existing.Status == StatusCompleted && existing.live(now):
			var out T
			if existing.Data != "" {
				if err := json.Unmarshal([]byte(existing.Data), &out); err != nil {
					return zero, fmt.Errorf("idempotency: stored result of %q does not decode into %T: %w", id, out, err)
				}
			}
			if cfg.onReplay != nil {
				cfg.onReplay(ctx, existing)
			}
			return out, nil
		case existing.Status == StatusInProgress && existing.live(now):
			return zero, ErrInProgress
		}
		// The record had expired by our clock but not by the store's condition (clocks
		// differ): try again.
		if attempt >= maxAttempts {
			return zero, &PersistenceError{Op: "acquire", Key: id, Err: ErrInconsistentState}
		}
	}

	result, err := run(ctx, store, rec, fn)
	if err != nil {
		return zero, err
	}
	done := *rec
	done.Status = StatusCompleted
	done.InProgressExpiration = time.Time{}
	if cfg.storeResult {
		data, err := json.Marshal(result)
		if err != nil {
			return result, &PersistenceError{Op: "complete", Key: id, Err: fmt.Errorf("result does not encode as JSON: %w", err)}
		}
		if len(data) > maxData {
			return result, &PersistenceError{Op: "complete", Key: id,
				Err: fmt.Errorf("%w: %d bytes of JSON, the limit is %d (WithoutResult stores none)", ErrResultTooLarge, len(data), maxData)}
		}
		done.Data = string(data)
	}
	// fn has run: save its result even if the caller's context ends now.
	if err := store.Complete(context.WithoutCancel(ctx), &done); err != nil {
		return result, asPersistence("complete", id, err)
	}
	return result, nil
}

// live reports whether the record still holds its key at now, by the store's own condition
// (and Powertools' checks): a record expires after its expiration second, and an in-progress
// lease after its last millisecond. An in-progress record without a lease (written by an old
// Powertools version) holds until the record expires.
func (r *Record) live(now time.Time) bool {
	if !r.Expiration.IsZero() && now.Unix() > r.Expiration.Unix() {
		return false // a record without expiration never expires, by the condition as in Python
	}
	if r.Status == StatusInProgress && !r.InProgressExpiration.IsZero() {
		return now.UnixMilli() <= r.InProgressExpiration.UnixMilli()
	}
	return true
}

// maxData keeps an item under DynamoDB's 400 KB limit, leaving room for the other attributes.
const maxData = 400*1024 - 4096

// run calls fn, and releases the record if fn fails or panics.
func run[T any](ctx context.Context, store Store, rec *Record, fn func(context.Context) (T, error)) (result T, err error) {
	defer func() {
		if p := recover(); p != nil {
			// Free the key for a retry, then let the panic go on.
			_ = store.Release(context.WithoutCancel(ctx), rec)
			panic(p)
		}
	}()
	result, err = fn(ctx)
	if err != nil {
		if rerr := store.Release(context.WithoutCancel(ctx), rec); rerr != nil {
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

// leaseEnd is when an in-progress record stops blocking others.
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

func (c *config) id(key string) (string, error) {
	h, err := c.hash(key)
	if err != nil {
		return "", err
	}
	return c.prefix + "#" + h, nil
}

// hash is Powertools' hash of a value: the hex digest of its json.dumps(sort_keys=True) text.
func (c *config) hash(v any) (string, error) {
	text, err := pythonJSON(v)
	if err != nil {
		return "", err
	}
	h := c.newHash()
	h.Write(text)
	return hex.EncodeToString(h.Sum(nil)), nil
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
