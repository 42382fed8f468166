package producer

// Consume, transform, produce: the source header and SourceKey. ProduceOnce (once.go)
// produces under it, and its doc says how the pieces fit and what window remains.

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit/kafkaevent"
)

// SourceHeader is the name of the header that says which input record a record was produced
// for, and which of that input's outputs it is. Its value is
//
//	<topic>/<partition>/<offset>/<index>
//
// the input's topic, partition and offset, and the record's position among the records
// produced for that input, counted from 0, all numbers in decimal without sign or leading
// zeros: "orders/3/1042/0". A Kafka topic name cannot contain "/", so the value splits one
// way only. [SetSource] writes it, [ReadSource] and [SourceKey] read it back.
//
// The identity is one header rather than three so that a record has all of it or none of it.
// It is not the headers kafkasink.Sink adds to a dead letter record (kafkalambda-source-topic
// and so on): those describe a failure, and a dead letter record of a transformed record
// carries both.
const SourceHeader = "kafkalambda-source"

// Source is the identity that [SourceHeader] carries: an input record's position, and the
// position of one output among that input's outputs.
type Source struct {
	Topic     string
	Partition int32
	Offset    int64
	Index     int // the output's position among the input's outputs, from 0
}

// String returns the header value, "topic/partition/offset/index".
func (s Source) String() string {
	return s.Topic + "/" + strconv.FormatInt(int64(s.Partition), 10) + "/" +
		strconv.FormatInt(s.Offset, 10) + "/" + strconv.Itoa(s.Index)
}

// check reports what makes s unfit for the header: a topic Kafka would refuse (empty, longer
// than 249 bytes, or with a byte other than ASCII letters, digits, '.', '_' and '-'), or a
// negative number.
func (s Source) check() error {
	switch {
	case s.Topic == "":
		return errors.New("the topic is empty")
	case len(s.Topic) > maxTopic:
		return fmt.Errorf("the topic is %d bytes long, more than Kafka's %d", len(s.Topic), maxTopic)
	case s.Partition < 0:
		return fmt.Errorf("the partition %d is negative", s.Partition)
	case s.Offset < 0:
		return fmt.Errorf("the offset %d is negative", s.Offset)
	case s.Index < 0:
		return fmt.Errorf("the index %d is negative", s.Index)
	}
	for i := 0; i < len(s.Topic); i++ {
		if !topicByte(s.Topic[i]) {
			_, n := utf8.DecodeRuneInString(s.Topic[i:])
			return fmt.Errorf("the topic %s has %s at byte %d, which Kafka does not allow in a topic name",
				quote(s.Topic), quote(s.Topic[i:i+n]), i)
		}
	}
	return nil
}

// maxTopic is the longest topic name Kafka accepts.
const maxTopic = 249

func topicByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-'
}

// Errors of the source header.
var (
	// ErrNoSource: the record has no SourceHeader.
	ErrNoSource = errors.New("producer: no " + SourceHeader + " header")
	// ErrMalformedSource: the SourceHeader cannot be read (or, for SetSource, the input's
	// identity cannot be written in it).
	ErrMalformedSource = errors.New("producer: malformed " + SourceHeader + " header")
)

// SourceError is the error of [ReadSource] and [SourceKey] for a record without a readable
// [SourceHeader], and of [SetSource] for an input record whose identity cannot be written in
// one. Err wraps ErrNoSource or ErrMalformedSource and says what is wrong.
type SourceError struct {
	// The record that carries (or lacks) the header: for SetSource, the input record.
	Topic     string
	Partition int32
	Offset    int64
	Err       error
}

func (e *SourceError) Error() string {
	return fmt.Sprintf("producer: record %s-%d at offset %d: %v", e.Topic, e.Partition, e.Offset, e.Err)
}

func (e *SourceError) Unwrap() error { return e.Err }

// SetSource writes the identity of src, the input record, and index, the position of rec
// among the records produced for src (from 0), in rec's [SourceHeader], replacing any it has
// (a transform that copies its input's headers, itself the output of another transform,
// names its own input). A record's index must not depend on anything but the input, so that
// a retried transform gives each output the index it had the first time: the header is what
// a downstream consumer dedups on (see [SourceKey]).
//
// It fails with a *SourceError wrapping ErrMalformedSource, and leaves rec as it was, when src
// is not a record Kafka could have delivered (an empty topic, a topic with a character Kafka
// refuses, a negative partition or offset) or index is negative.
func SetSource(rec *kgo.Record, src *kafkaevent.Record, index int) error {
	s := Source{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset, Index: index}
	if err := s.check(); err != nil {
		return &SourceError{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset,
			Err: fmt.Errorf("%w: cannot name the input: %w", ErrMalformedSource, err)}
	}
	hs := rec.Headers[:0:0]
	for _, h := range rec.Headers {
		if h.Key != SourceHeader {
			hs = append(hs, h)
		}
	}
	rec.Headers = append(hs, kgo.RecordHeader{Key: SourceHeader, Value: []byte(s.String())})
	return nil
}

// ReadSource reads r's [SourceHeader]. It fails with a *SourceError wrapping ErrNoSource when
// r has none, or ErrMalformedSource when the header is there twice, or its value is not
// exactly "topic/partition/offset/index" as SetSource writes it (a topic Kafka allows, and
// numbers in range, in decimal, without sign or leading zeros): a value that another writer
// spelled differently for the same input would otherwise be a different key.
func ReadSource(r *kafkaevent.Record) (Source, error) {
	vals := r.HeaderValues(SourceHeader)
	fail := func(err error) (Source, error) {
		return Source{}, &SourceError{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Err: err}
	}
	switch len(vals) {
	case 0:
		return fail(ErrNoSource)
	case 1:
	default:
		return fail(fmt.Errorf("%w: given %d times", ErrMalformedSource, len(vals)))
	}
	s, err := parseSource(vals[0])
	if err != nil {
		return fail(fmt.Errorf("%w %s: %w", ErrMalformedSource, quote(string(vals[0])), err))
	}
	return s, nil
}

// parseSource reads a header value; its errors say what is wrong, not where.
func parseSource(v []byte) (Source, error) {
	if v == nil {
		return Source{}, errors.New("the value is null")
	}
	f := strings.Split(string(v), "/")
	if len(f) != 4 {
		return Source{}, fmt.Errorf("want topic/partition/offset/index, got %d fields", len(f))
	}
	var s Source
	s.Topic = f[0]
	p, err := decimal(f[1], "partition", 32)
	if err != nil {
		return Source{}, err
	}
	if s.Offset, err = decimal(f[2], "offset", 64); err != nil {
		return Source{}, err
	}
	i, err := decimal(f[3], "index", strconv.IntSize)
	if err != nil {
		return Source{}, err
	}
	s.Partition, s.Index = int32(p), int(i)
	if err := s.check(); err != nil {
		return Source{}, err
	}
	return s, nil
}

// decimal reads a number from 0 to the largest signed integer of bits bits, written as
// strconv writes it.
func decimal(f, what string, bits int) (int64, error) {
	n, err := strconv.ParseInt(f, 10, bits)
	if err != nil || n < 0 || strconv.FormatInt(n, 10) != f {
		return 0, fmt.Errorf("the %s %s is not a decimal number from 0 to %d without sign or leading zeros",
			what, quote(f), uint64(1)<<(bits-1)-1)
	}
	return n, nil
}

// quote quotes s for an error message on one line, cut after 64 bytes.
func quote(s string) string {
	if len(s) <= 64 {
		return strconv.Quote(s)
	}
	cut := 64
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return strconv.Quote(s[:cut]) + "..."
}

// SourceKey is the idempotency key of a record produced by a transform: its [SourceHeader]'s
// value, "topic/partition/offset/index", so that every copy of one output (a transform that
// ran twice for the same input produced it twice, at two offsets) has the same key, and two
// outputs of one input have two keys. It is made for batch.WithIdempotencyKey:
//
//	batch.KafkaHandler(apply, batch.WithIdempotency(store), batch.WithIdempotencyKey(producer.SourceKey))
//
// A record without the header fails with a *SourceError wrapping ErrNoSource, one with a
// malformed header with ErrMalformedSource: SourceKey does not fall back to the record's own
// offset, which would let a duplicate through unnoticed. Under batch.WithIdempotencyKey such
// a record fails permanently, its handler not called. A topic that also receives records
// from writers that set no header needs a key function of its own that decides, for those,
// what makes two records the same.
func SourceKey(r *kafkaevent.Record) (string, error) {
	s, err := ReadSource(r)
	if err != nil {
		return "", err
	}
	return s.String(), nil
}
