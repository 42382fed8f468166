package codec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// ErrNull is wrapped by the error of Key or Value when the field is absent or null: a record
// without a key, or a tombstone's value. A null is never decoded to a zero value. Test for it
// with errors.Is(err, codec.ErrNull), before handing the error to package batch (which would
// take it, like every *DecodeError, as a permanent failure of the record).
var ErrNull = errors.New("codec: null")

// Record is a Kafka record whose key and value decode, on first use, to a K and a V. The raw
// record stays at hand: its fields (Topic, Offset, Headers, the raw Key and Value bytes...) are
// promoted from the embedded *kafkaevent.Record. Key and Value are safe to call from many
// goroutines: each field is decoded at most once and the result, or the error, is kept.
type Record[K, V any] struct {
	*kafkaevent.Record

	d *Deserializer[K, V]

	keyOnce   sync.Once
	key       K
	keyErr    error
	valueOnce sync.Once
	value     V
	valueErr  error
}

// Key returns the record's key decoded by the key codec. It decodes on the first call (ctx is
// the first caller's, for a registry lookup) and returns the same result afterwards. The error
// is a *DecodeError naming the record, wrapping [ErrNull] when the record has no key; see
// [DecodeError.Permanent] for which errors are permanent.
func (r *Record[K, V]) Key(ctx context.Context) (K, error) {
	r.keyOnce.Do(func() {
		r.keyErr = r.d.key.decode(ctx, &r.d.cfg, r.Record, r.Record.Key, r.KeySchema, &r.key)
	})
	return r.key, r.keyErr
}

// Value returns the record's value decoded by the value codec, as [Record.Key] does the key.
// A tombstone's value is an error wrapping [ErrNull].
func (r *Record[K, V]) Value(ctx context.Context) (V, error) {
	r.valueOnce.Do(func() {
		r.valueErr = r.d.value.decode(ctx, &r.d.cfg, r.Record, r.Record.Value, r.ValueSchema, &r.value)
	})
	return r.value, r.valueErr
}

// recordBlockLen is how many Records a Deserializer allocates at once (see recordBlock).
const recordBlockLen = 32

// recordBlock is the Records that [Deserializer.Record] hands out, one after the other, each
// once: one allocation for 32 records, not one each, which is most of what the codec layer
// costs a record over its library (a Record holds the decoded key and value). A Record kept
// alive keeps its block alive, the other 31 Records with it, as a pointer to an element of a
// slice keeps the slice; the Deserializer keeps its current block until it is used up.
type recordBlock[K, V any] struct {
	next atomic.Int32 // the index of the next Record to hand out; over recordBlockLen when used up
	recs [recordBlockLen]Record[K, V]
}

// Record wraps r: its Key and Value are decoded on first use, at most once each. Record does
// no work of its own and never fails; r must not be modified while the Record is in use.
//
// Records are allocated 32 at a time, so that a record costs no allocation of its own: a
// Record kept after its batch (in a slice, a cache) keeps in memory the 31 others of its
// block, with their raw records and what they decoded, as an element of a slice keeps the
// slice; copy out what is kept for long. Each Record is handed out once.
func (d *Deserializer[K, V]) Record(r *kafkaevent.Record) *Record[K, V] {
	b := d.block.Load()
	if b != nil {
		if i := b.next.Add(1) - 1; i < recordBlockLen {
			rec := &b.recs[i]
			rec.Record, rec.d = r, d
			return rec
		}
	}
	// Used up (or none yet): a new block, its first Record for this call. Goroutines that
	// find the block used up at once each make one; the last stored is the next to use.
	b = new(recordBlock[K, V])
	b.next.Store(1)
	d.block.Store(b)
	rec := &b.recs[0]
	rec.Record, rec.d = r, d
	return rec
}

// DecodeError is a key or value that could not be decoded: which field of which record, in
// what format, schema and wire format, and why (Err: a *WireError, ErrNull, ErrInvalidUTF8, the
// codec's error, a registry's error...).
//
// It is permanent ([DecodeError.Permanent]), so that package batch reports the record, or
// sends it to its failure sink, and goes on with the rest of the batch, except when retrying
// may help.
type DecodeError struct {
	Field     string // "key" or "value"
	Topic     string
	Partition int32
	Offset    int64
	// Format is the record's dataFormat when it has schema metadata, the codec's format
	// otherwise.
	Format string
	// SchemaID is the schema ID from the record's metadata or framing; "" when none.
	SchemaID string
	// Wire is the wire format the bytes were read in: WireNone when the record has schema
	// metadata (the event source mapping removed the framing).
	Wire Wire
	Err  error
}

// Error returns "codec: value of orders-3@42 (AVRO, schema 17, Confluent framing): ...".
func (e *DecodeError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "codec: %s of %s-%d@%d (%s", e.Field, e.Topic, e.Partition, e.Offset, e.Format)
	if e.SchemaID != "" {
		fmt.Fprintf(&b, ", schema %s", e.SchemaID)
	}
	fmt.Fprintf(&b, ", %s framing): %v", wireName(e.Wire), e.Err)
	return b.String()
}

// Unwrap returns the cause.
func (e *DecodeError) Unwrap() error { return e.Err }

// Permanent reports whether retrying the record cannot help, as package batch asks of every
// error in a record's chain (batch.IsPermanent): true, except for a registry that could not
// be reached (any registry error that does not wrap [ErrSchemaNotFound]), a cancelled
// context, [ErrNoSchema] (the function is misconfigured: its records are reported, not sunk,
// until it is fixed) and toolkit.ErrInvalidOption (likewise, for a codec of another package
// that reports one).
func (e *DecodeError) Permanent() bool { return !retriable(e.Err) }

func retriable(err error) bool {
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrNoSchema) || errors.Is(err, toolkit.ErrInvalidOption) {
		return true
	}
	var re *RegistryError
	return errors.As(err, &re) && !errors.Is(err, ErrSchemaNotFound)
}
