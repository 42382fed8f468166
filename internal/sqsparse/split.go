package sqsparse

import (
	"errors"
	"runtime"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Splitting a large Records array between two goroutines.
//
// Parsing is most of the time of a batch whose handler does little (issue 21), and a Lambda
// function of 1,769 MB or more has two vCPUs or more. So when GOMAXPROCS allows and the array
// is large, a second goroutine skips the messages of the array's first part, which takes
// about a third of the time of parsing them, and parses the rest, while the parser reads the
// first part: both stop and start at the first message that begins at or after the same
// byte, splitAt, chosen so that they end at about the same time (at 3/5 of the array when
// skipping costs a third of parsing).
//
// Results never depend on it: the halves are joined only when both succeeded and agree on
// where the second begins; any error, on either side, and Parse reads the payload again from
// the start in one goroutine, for the error it would have given without splitting.

// splitMin is the size of the smallest Records array that Parse splits, in bytes: below it,
// the second goroutine saves less than it costs. Tests split small events (export_test.go).
const splitMin = 256 << 10

// errSplit stops the parser at the message where the second goroutine took over.
var errSplit = errors.New("sqsparse: split here")

// splitAt is the byte at whose first message at or after it the second goroutine starts, for
// a Records array starting at start; 0 when the array is not split.
func (p *parser) splitAt(start int) int {
	n := len(p.Data) - start
	if p.minSplit < 0 || n < p.minSplit || runtime.GOMAXPROCS(0) < 2 {
		return 0
	}
	return start + n/5*3
}

// half is what the second goroutine read: the messages from index first on, the first of
// which begins at from; end is where the array ended. found is false when the array ended
// before splitAt: there is nothing to join.
type half struct {
	recs        []events.SQSMessage
	first, from int
	end         int
	found       bool
	err         error
}

// secondHalf skips the messages of the Records array at data[start:] up to the first that
// begins at or after at, and parses the rest, with its own parser; top is the array's name.
func secondHalf(data []byte, top string, start, at int) (h half) {
	q := &parser{Reader: jsonscan.Reader{Data: data, Pos: start + 1}}
	q.Failer = q
	q.w = where{top: top, rec: -1, idx: -1, idx2: -1}
	q.newText(0)
	q.SkipWS()
	if q.Pos < len(q.Data) && q.Data[q.Pos] == ']' {
		return h
	}
	idx := 0
	for ; q.Pos < at; idx++ {
		if q.Pos >= len(q.Data) {
			h.err = q.SyntaxErr("looking for beginning of value")
			return h
		}
		if h.err = q.SkipValue(2); h.err != nil {
			return h
		}
		more, err := q.NextElement()
		if !more {
			h.err = err
			return h
		}
	}
	h.found, h.first, h.from = true, idx, q.Pos
	// Room for the rest at the size of the messages skipped.
	avg := max((q.Pos-start)/max(idx, 1), 1)
	recs := make([]events.SQSMessage, 0, (len(q.Data)-q.Pos)/avg+1)
	for ; ; idx++ {
		if q.Pos >= len(q.Data) {
			h.err = q.SyntaxErr("looking for beginning of value")
			return h
		}
		if len(recs) == cap(recs) {
			q.flush() // the pending strings point into recs
		}
		recs = append(recs, events.SQSMessage{})
		q.w.rec = idx
		if h.err = q.message(&recs[len(recs)-1]); h.err != nil {
			return h
		}
		q.w.rec = -1
		more, err := q.NextElement()
		if !more {
			h.err = err
			break
		}
	}
	if h.err == nil {
		q.flush()
		h.recs, h.end = recs, q.Pos
	}
	return h
}
