package codec

import (
	"errors"
	"fmt"
	"io"
	"math"
	"reflect"

	"github.com/hamba/avro/v2"
)

// Limits on an Avro value that its schema alone does not bound. hamba/avro has no recursion
// limit: a recursive schema such as a linked list lets each 2 bytes of payload make it
// recurse once more, so a 1 MB value cost it 861 MB and 5 s, and a 6 MB one overflowed the
// goroutine stack, a fatal error no recover sees (the batch is redelivered, and crashes
// again). An array of items that take no bytes (null, a record of nulls, a fixed of size
// 0) lets a few bytes claim a million items, and an array of such arrays a million times
// more.
const (
	// avroMaxDepth bounds the nesting of records, arrays and maps in a value of a recursive
	// schema, as encoding/json bounds JSON and protobuf its messages (10,000 each).
	avroMaxDepth = 10_000
	// avroMaxEmptyItems bounds the items, in all the arrays of one value, that take no
	// bytes of payload.
	avroMaxEmptyItems = 1 << 16
	// avroMaxValues bounds the records, array items and map entries of one value decoded
	// into a Go type that holds interfaces or maps (any, map[string]any), where each costs
	// the decoder a map or a boxed value, hundreds of bytes: a 1 MB array of one-boolean
	// records was 385 times its size in map[string]any, so a 6 MB one 2.4 GB. At the limit
	// a value costs about 100 MB.
	avroMaxValues = 1 << 18
)

// avroGuard is what a schema needs checked before hamba/avro decodes a value of it: nil for
// a schema that is not recursive and has no array of items that can take no bytes, whose
// values then make the decoder allocate in proportion to their size, so the common path
// pays nothing. For the others, a pre-pass walks the payload (allocating nothing) and
// refuses a value past avroMaxDepth or avroMaxEmptyItems.
type avroGuard struct {
	recursive bool
	// empty holds the arrays whose items can take no bytes.
	empty map[*avro.ArraySchema]bool
}

// newAvroGuard returns the guard that s needs, or nil.
func newAvroGuard(s avro.Schema) *avroGuard {
	a := avroAnalysis{state: map[string]int{}, empty: map[string]bool{}, g: &avroGuard{empty: map[*avro.ArraySchema]bool{}}}
	a.canBeEmpty(s)
	if !a.g.recursive && len(a.g.empty) == 0 {
		return nil
	}
	return a.g
}

// avroAnalysis finds whether a schema is recursive, and which of its arrays have items that
// can take no bytes, visiting each named type once.
type avroAnalysis struct {
	state map[string]int  // a named type's full name: 1 while its fields are visited, 2 after
	empty map[string]bool // whether a visited named type's values can take no bytes
	g     *avroGuard
}

// canBeEmpty reports whether a value of s can take no bytes of payload. A reference to a
// type whose fields are being visited (recursion) answers true, which errs on the side of
// guarding more arrays, never fewer.
func (a *avroAnalysis) canBeEmpty(s avro.Schema) bool {
	switch s := s.(type) {
	case *avro.RefSchema:
		return a.canBeEmpty(s.Schema())
	case *avro.RecordSchema:
		name := s.FullName()
		switch a.state[name] {
		case 1:
			a.g.recursive = true
			return true
		case 2:
			return a.empty[name]
		}
		a.state[name] = 1
		empty := true
		for _, f := range s.Fields() {
			if !a.canBeEmpty(f.Type()) {
				empty = false
			}
		}
		a.state[name], a.empty[name] = 2, empty
		return empty
	case *avro.ArraySchema:
		if a.canBeEmpty(s.Items()) {
			a.g.empty[s] = true
		}
		return false // a block count
	case *avro.MapSchema:
		a.canBeEmpty(s.Values())
		return false // a block count; each entry has a key
	case *avro.UnionSchema:
		for _, t := range s.Types() {
			a.canBeEmpty(t)
		}
		return false // the branch index
	case *avro.FixedSchema:
		return s.Size() == 0
	}
	return s.Type() == avro.Null
}

// noGuard is the guard of a schema that needs none, checked for avroMaxValues only.
var noGuard = &avroGuard{}

// check walks payload as a value of s, reading nothing into memory, and returns why hamba/avro
// must not decode it: nesting past avroMaxDepth, more than avroMaxEmptyItems items that take
// no bytes, more than avroMaxValues values when countValues, or a payload that is not a value
// of s at all (which the decoder would refuse too).
func (g *avroGuard) check(payload []byte, s avro.Schema, countValues bool) error {
	r := avroReaders.Get().(*avro.Reader)
	defer func() {
		r.Reset(nil)
		avroReaders.Put(r)
	}()
	r.Error = nil
	r.Reset(payload)
	w := avroWalk{r: r, g: g, values: -1}
	if countValues {
		w.values = 0
	}
	if err := w.value(s, 0); err != nil {
		return err
	}
	if r.Error != nil {
		if errors.Is(r.Error, io.EOF) {
			return fmt.Errorf("%w (%d bytes)", errAvroTruncated, len(payload))
		}
		return r.Error
	}
	return nil
}

type avroWalk struct {
	r      *avro.Reader
	g      *avroGuard
	empty  int // items that took no bytes, so far
	values int // records, items and entries so far; -1 when they are not counted
}

var errAvroTooMany = fmt.Errorf("avro: more than %d values (records, array items, map entries), the limit of a value decoded into a type that holds interfaces or maps", avroMaxValues)

// count counts one value more, if values are counted.
func (w *avroWalk) count() error {
	if w.values >= 0 {
		if w.values++; w.values > avroMaxValues {
			return errAvroTooMany
		}
	}
	return nil
}

var errAvroTooDeep = fmt.Errorf("avro: value nested more than %d levels deep (records, arrays and maps of a recursive schema)", avroMaxDepth)

// value walks a value of s found at depth levels of nesting. It stops at the reader's first
// error, which the caller reports.
func (w *avroWalk) value(s avro.Schema, depth int) error {
	r := w.r
	switch s := s.(type) {
	case *avro.RefSchema:
		return w.value(s.Schema(), depth)
	case *avro.RecordSchema:
		if depth++; depth > avroMaxDepth {
			return errAvroTooDeep
		}
		if err := w.count(); err != nil {
			return err
		}
		for _, f := range s.Fields() {
			if err := w.value(f.Type(), depth); err != nil || r.Error != nil {
				return err
			}
		}
	case *avro.ArraySchema:
		if depth++; depth > avroMaxDepth {
			return errAvroTooDeep
		}
		return w.blocks(avroMaxItems, w.g.empty[s], func() error { return w.value(s.Items(), depth) })
	case *avro.MapSchema:
		if depth++; depth > avroMaxDepth {
			return errAvroTooDeep
		}
		// No cap on entries: each takes at least a byte (its key's length), as in hamba/avro.
		return w.blocks(math.MaxInt64, false, func() error {
			r.SkipString()
			if r.Error != nil {
				return nil
			}
			return w.value(s.Values(), depth)
		})
	case *avro.UnionSchema:
		types := s.Types()
		i := r.ReadLong()
		if r.Error != nil {
			return nil
		}
		if i < 0 || i >= int64(len(types)) {
			return fmt.Errorf("avro: union branch %d of %d", i, len(types))
		}
		return w.value(types[i], depth)
	case *avro.FixedSchema:
		r.SkipNBytes(s.Size())
	case *avro.EnumSchema:
		r.SkipInt()
	default:
		switch s.Type() {
		case avro.Null:
		case avro.Boolean:
			r.SkipBool()
		case avro.Int:
			r.SkipInt()
		case avro.Long:
			r.SkipLong()
		case avro.Float:
			r.SkipFloat()
		case avro.Double:
			r.SkipDouble()
		case avro.String, avro.Bytes:
			r.SkipString()
		default:
			return fmt.Errorf("avro: schema type %s", s.Type())
		}
	}
	return nil
}

// blocks walks the blocks of an array or map, calling item for each item, at most limit in
// all; empty says that the items can take no bytes, and count toward avroMaxEmptyItems.
func (w *avroWalk) blocks(limit int64, empty bool, item func() error) error {
	r := w.r
	total := int64(0)
	for {
		n, _ := r.ReadBlockHeader()
		if r.Error != nil || n == 0 {
			return nil
		}
		if n < 0 || n > limit-total {
			return fmt.Errorf("avro: a block of %d items, over %d in all", n, limit)
		}
		total += n
		if empty {
			if w.empty += int(n); w.empty > avroMaxEmptyItems {
				return fmt.Errorf("avro: more than %d array items that take no bytes of payload (null, a record of nulls...)", avroMaxEmptyItems)
			}
		}
		for range n {
			if err := w.count(); err != nil {
				return err
			}
			if err := item(); err != nil || r.Error != nil {
				return err
			}
		}
	}
}

// holdsDynamic reports whether values of t hold interfaces or maps, which hamba/avro fills with
// a map or a boxed value per Avro value.
func holdsDynamic(t reflect.Type, seen map[reflect.Type]bool) bool {
	if seen[t] {
		return false
	}
	seen[t] = true
	switch t.Kind() {
	case reflect.Interface, reflect.Map:
		return true
	case reflect.Pointer, reflect.Slice, reflect.Array:
		return holdsDynamic(t.Elem(), seen)
	case reflect.Struct:
		for i := range t.NumField() {
			if holdsDynamic(t.Field(i).Type, seen) {
				return true
			}
		}
	}
	return false
}
