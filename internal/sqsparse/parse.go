// Package sqsparse decodes the payload Lambda sends to a function behind an Amazon SQS event
// source mapping into aws-lambda-go's events.SQSEvent, in one pass over the bytes and several
// times faster than encoding/json. A large event's messages are read by two goroutines when
// GOMAXPROCS allows (split.go), which changes nothing in the result or the error.
//
// The result is the one encoding/json gives for the same payload, value for value: member names
// match case-insensitively, null leaves a string as it is and empties a map, slice or pointer,
// an empty list is an empty (not nil) slice, binary values are standard base64 (or arrays of
// byte numbers), invalid UTF-8 becomes U+FFFD, unknown members are skipped, and the top-level
// null is an empty event. Where encoding/json fails, Parse fails too; its error names the JSON
// path and quotes the offending text (a *jsonscan.Error, the type of kafkaevent.Error, prefixed "SQS event").
//
// The one difference: a member given twice, which encoding/json decodes twice into the same
// place so that the last one wins (or, for Records, a second array is decoded over the messages
// of the first), fails Parse. That is Records; any member of a message (messageId, body,
// attributes, eventSourceARN...) or of a message attribute (stringValue, dataType...), also
// when the two names differ only in case ("body", "Body"), since encoding/json takes both for
// the same field; and a name given twice in attributes or in messageAttributes:
//
//	SQS event: Records[3].Body: member "body" appears twice in the message
//	SQS event: Records[0].messageAttributes.trace: name appears twice in messageAttributes
//
// The invocation fails then, so no message is handled on a guess: the batch's messages go back
// to the queue, and to its dead-letter queue, if it has one, after maxReceiveCount receives.
// An unknown member given twice is read (skipped twice): Parse keeps nothing of it, so there is
// no value to choose, and SQS or Lambda may add members this package does not know yet.
//
// The differential tests and the fuzz target hold Parse to all of that.
//
//	ev, err := sqsparse.Parse(payload)
//
// batch.SQSFunc.Invoke decodes with it; fanout's workers can too, as anything that has the
// payload bytes of an SQS event and needs the event.
package sqsparse

import (
	"bytes"
	"encoding/base64"
	"slices"
	"unicode"
	"unicode/utf8"
	"unsafe"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Parse decodes an SQS event payload, as encoding/json.Unmarshal into an events.SQSEvent would,
// but that a member given twice is an error here (see the package doc).
//
// The event holds no reference to data. The strings of neighbouring messages (but those of
// their message attributes) share allocations of about 16 to 20 KiB, so that any one of them
// keeps the others alive.
func Parse(data []byte) (*events.SQSEvent, error) {
	ev, _, err := parseSplit(data, splitMin)
	return ev, err
}

// parseSplit is Parse with a Records array of at least minSplit bytes split between two
// goroutines (split.go; never when minSplit is negative); split says whether it was.
func parseSplit(data []byte, minSplit int) (ev *events.SQSEvent, split bool, err error) {
	ev, split, err = parse(data, minSplit)
	if err != nil && split {
		// The error of the payload read in one goroutine, which is the error of its first
		// fault: what Parse says never depends on the split.
		ev, _, err = parse(data, -1)
	}
	return ev, split, err
}

// parse reads the payload once, splitting the Records array as parseSplit says.
func parse(data []byte, minSplit int) (ev *events.SQSEvent, split bool, err error) {
	ev = &events.SQSEvent{}
	p := parser{Reader: jsonscan.Reader{Data: data}, minSplit: minSplit}
	p.Failer = &p
	p.w = where{rec: -1, idx: -1, idx2: -1}
	p.newText(0)
	if err := p.event(ev); err != nil {
		return nil, p.split, err
	}
	return ev, p.split, nil
}

type parser struct {
	jsonscan.Reader
	fold []byte // folded member names, reused
	w    where

	minSplit int  // the smallest Records array split between two goroutines, in bytes; -1: none
	split    bool // the Records array was split (split.go)

	// The text of the messages read since the last flush, and where it goes: their strings
	// are made by one conversion of text (see flush). Pending fixes point into the Records
	// slice being filled, so records flushes before it grows it and when it is done.
	text  []byte
	fixes []fix
	ins   []insert
}

// fix says that a string field gets text[off:end].
type fix struct {
	dst      *string
	off, end int32
}

// insert says that a map gets the key text[koff:kend] set to text[voff:vend].
type insert struct {
	m                      map[string]string
	koff, kend, voff, vend int32
}

// flush makes the strings of the messages read since the last flush, in the order they came.
func (p *parser) flush() {
	if len(p.fixes) == 0 && len(p.ins) == 0 {
		return
	}
	// The strings are views of text's array, made without a copy: no one writes that array
	// again, as text starts a new one below (what strings.Builder does).
	s := unsafe.String(unsafe.SliceData(p.text), len(p.text))
	for _, f := range p.fixes {
		*f.dst = s[f.off:f.end]
	}
	for _, in := range p.ins {
		in.m[s[in.koff:in.kend]] = s[in.voff:in.vend]
	}
	clear(p.fixes) // no pointers kept into the event
	clear(p.ins)
	last := len(p.text)
	p.text, p.fixes, p.ins = nil, p.fixes[:0], p.ins[:0]
	p.newText(last)
}

// newText gives p.text a new array, with room for one flush of text, or for the last one's
// when that was larger (messages of large bodies flush one by one), and 1/8 more; never more
// than what is left of the payload: the text of the strings still to read is at most their
// JSON.
func (p *parser) newText(last int) {
	c := max(flushText, last)
	p.text = make([]byte, 0, min(c+c/8, len(p.Data)-p.Pos+1))
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (p *parser) event(ev *events.SQSEvent) error {
	if bytes.HasPrefix(p.Data, utf8BOM) {
		return p.errAt(0, "the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow; remove it")
	}
	p.SkipWS()
	if p.Pos >= len(p.Data) {
		return p.errAt(p.Pos, "want a JSON object, got nothing")
	}
	switch p.Data[p.Pos] {
	case 'n': // encoding/json leaves the event as it is
		if err := p.NullLit(); err != nil {
			return err
		}
	case '{':
		seen := false // whether Records has been read
		err := p.Object(1, func(n jsonscan.Name) error {
			if p.isRecords(p.NameBytes(n)) {
				p.w.top = "Records"
				if n.End-n.Start != len("Records") || string(p.Data[n.Start:n.End]) != "Records" {
					p.w.top = string(p.NameBytes(n))
				}
				if seen {
					// encoding/json would decode the second into the messages of the first.
					return p.errAt(p.Pos, `member "Records" appears twice in the event`)
				}
				seen = true
				if err := p.records(ev); err != nil {
					return err
				}
			} else {
				p.w.top = string(p.NameBytes(n))
				if err := p.SkipValue(1); err != nil {
					return err
				}
			}
			p.w.top = ""
			return nil
		})
		if err != nil {
			return err
		}
	default:
		return p.typeErr(0, "a JSON object")
	}
	p.SkipWS()
	if p.Pos != len(p.Data) {
		return p.errAt(p.Pos, "unexpected data after the event: %s", p.Got(p.Pos))
	}
	return nil
}

// records reads the Records member into ev.Records. Like encoding/json, it leaves an empty
// non-nil slice for [].
func (p *parser) records(ev *events.SQSEvent) error {
	switch p.Data[p.Pos] {
	case 'n':
		if err := p.NullLit(); err != nil {
			return err
		}
		ev.Records = nil
		return nil
	case '[':
	default:
		return p.typeErr(1, "an array of messages")
	}
	recs := ev.Records
	start := p.Pos
	sized := false
	n := 0
	at := p.splitAt(start)
	var second chan half
	if at > 0 {
		p.split = true
		second = make(chan half, 1)
		data, top := p.Data, p.w.top
		go func() { second <- secondHalf(data, top, start, at) }()
	}
	stopped := -1 // where the parser stopped for the second half
	err := p.Array(2, func(idx int) error {
		if at > 0 && p.Pos >= at {
			stopped = p.Pos
			return errSplit
		}
		if idx >= len(recs) {
			if idx < cap(recs) {
				recs = recs[:idx+1]
			} else {
				p.flush() // the pending strings point into recs
				if !sized && idx > 0 {
					// Make room for the whole batch at once, from the size of the messages
					// read so far.
					sized = true
					avg := max((p.Pos-start)/idx, 1)
					recs = slices.Grow(recs, (len(p.Data)-p.Pos)/avg+1)
				}
				recs = append(recs, events.SQSMessage{})
			}
		}
		p.w.rec = idx
		if err := p.message(&recs[idx]); err != nil {
			return err
		}
		p.w.rec = -1
		n = idx + 1
		return nil
	})
	if second != nil {
		h := <-second
		switch {
		case err == errSplit && h.err == nil && h.found && h.from == stopped && h.first == n:
			p.flush() // the pending strings point into recs
			recs = append(recs[:n], h.recs...)
			n += len(h.recs)
			p.Pos, err = h.end, nil
		case err == nil && h.err == nil && !h.found:
		case err == nil || err == errSplit:
			return p.errAt(start, "the two halves of the Records array disagree") // Parse reads it again
		}
	}
	if err != nil {
		return err
	}
	p.flush()
	if n == 0 {
		recs = []events.SQSMessage{}
	}
	ev.Records = recs[:n]
	return nil
}

// The members of a message.
const (
	fUnknown = iota
	fMessageID
	fReceiptHandle
	fBody
	fMd5OfBody
	fMd5OfMessageAttributes
	fAttributes
	fMessageAttributes
	fEventSourceARN
	fEventSource
	fAWSRegion
)

// messageFields are the names of a message's members, as aws-lambda-go tags them.
var messageFields = [...]string{
	fMessageID:              "messageId",
	fReceiptHandle:          "receiptHandle",
	fBody:                   "body",
	fMd5OfBody:              "md5OfBody",
	fMd5OfMessageAttributes: "md5OfMessageAttributes",
	fAttributes:             "attributes",
	fMessageAttributes:      "messageAttributes",
	fEventSourceARN:         "eventSourceARN",
	fEventSource:            "eventSource",
	fAWSRegion:              "awsRegion",
}

// messageField returns the member that name stands for, matched as encoding/json matches: the
// exact name, else the name folded (see fold).
func (p *parser) messageField(name []byte) int {
	switch string(name) {
	case "messageId":
		return fMessageID
	case "receiptHandle":
		return fReceiptHandle
	case "body":
		return fBody
	case "md5OfBody":
		return fMd5OfBody
	case "md5OfMessageAttributes":
		return fMd5OfMessageAttributes
	case "attributes":
		return fAttributes
	case "messageAttributes":
		return fMessageAttributes
	case "eventSourceARN":
		return fEventSourceARN
	case "eventSource":
		return fEventSource
	case "awsRegion":
		return fAWSRegion
	}
	return p.foldedField(name, messageFolded[:])
}

var messageFolded = foldAll(messageFields[:])

// message reads one element of Records into m, which is zero.
func (p *parser) message(m *events.SQSMessage) error {
	switch p.Data[p.Pos] {
	case 'n': // encoding/json leaves the message as it is
		return p.NullLit()
	case '{':
	default:
		return p.typeErr(2, "a message object")
	}
	var seen uint16 // the members read, bit 1<<f
	err := p.Object(3, func(n jsonscan.Name) error {
		name := p.NameBytes(n)
		f := p.messageField(name)
		if f == fUnknown || n.Flags.NeedsDecoding() || string(p.Data[n.Start:n.End]) != messageFields[f] {
			p.w.field = string(name)
		} else {
			p.w.field = messageFields[f]
		}
		if f != fUnknown {
			if seen&(1<<f) != 0 {
				// encoding/json would decode both into the same field, the last one
				// winning; two names that differ only in case are the same member there.
				return p.errAt(p.Pos, "member %q appears twice in the message", messageFields[f])
			}
			seen |= 1 << f
		}
		var err error
		switch f {
		case fMessageID:
			err = p.textField(&m.MessageId)
		case fReceiptHandle:
			err = p.textField(&m.ReceiptHandle)
		case fBody:
			err = p.textField(&m.Body)
		case fMd5OfBody:
			err = p.textField(&m.Md5OfBody)
		case fMd5OfMessageAttributes:
			err = p.textField(&m.Md5OfMessageAttributes)
		case fAttributes:
			err = p.attributes(&m.Attributes)
		case fMessageAttributes:
			err = p.messageAttributes(&m.MessageAttributes)
		case fEventSourceARN:
			err = p.textField(&m.EventSourceARN)
		case fEventSource:
			err = p.textField(&m.EventSource)
		case fAWSRegion:
			err = p.textField(&m.AWSRegion)
		default:
			err = p.SkipValue(3)
		}
		if err != nil {
			return err
		}
		p.w.field = ""
		return nil
	})
	if err != nil {
		return err
	}
	if len(p.text) >= flushText {
		p.flush()
	}
	return nil
}

// flushText is how much text the parser gathers, over several messages, before it makes their
// strings: one allocation for a few dozen messages rather than one each.
const flushText = 16 << 10

// textField reads a string member of a message into dst when the message is flushed; null
// leaves dst as it is.
func (p *parser) textField(dst *string) error {
	switch p.Data[p.Pos] {
	case '"':
		off, end, err := p.appendString()
		if err != nil {
			return err
		}
		p.fixes = append(p.fixes, fix{dst, int32(off), int32(end)})
		return nil
	case 'n':
		return p.NullLit()
	}
	return p.typeErr(3, "a string")
}

// strField reads a string member at nesting depth into dst; null leaves dst as it is.
func (p *parser) strField(depth int, dst *string) error {
	switch p.Data[p.Pos] {
	case '"':
		s, err := p.Str()
		if err != nil {
			return err
		}
		*dst = s
		return nil
	case 'n':
		return p.NullLit()
	}
	return p.typeErr(depth, "a string")
}

// attributes reads a message's system attributes, an object of strings, into *dst, which is
// nil; null leaves it nil. A name given twice is an error.
func (p *parser) attributes(dst *map[string]string) error {
	switch p.Data[p.Pos] {
	case 'n':
		if err := p.NullLit(); err != nil {
			return err
		}
		*dst = nil
		return nil
	case '{':
	default:
		return p.typeErr(3, "an object of strings")
	}
	m := make(map[string]string, 4) // SQS sends four, at least
	*dst = m
	first := len(p.ins) // this object's names are those of p.ins[first:]
	var names map[string]struct{}
	return p.Object(4, func(n jsonscan.Name) error {
		// The key and value are set when the message is flushed.
		p.w.key, p.w.inKey = n, true
		koff := len(p.text)
		p.text = append(p.text, p.NameBytes(n)...)
		kend := len(p.text)
		if p.repeated(&names, first, p.text[koff:kend]) {
			return p.errAt(p.Pos, "name appears twice in attributes")
		}
		in := insert{m: m, koff: int32(koff), kend: int32(kend)}
		switch p.Data[p.Pos] {
		case '"':
			voff, vend, err := p.appendString()
			if err != nil {
				return err
			}
			in.voff, in.vend = int32(voff), int32(vend)
		case 'n': // null stores ""
			if err := p.NullLit(); err != nil {
				return err
			}
		default:
			return p.typeErr(4, "a string")
		}
		p.ins = append(p.ins, in)
		p.w.inKey = false
		return nil
	})
}

// messageAttributes reads a message's attributes into *dst, which is nil; null leaves it nil.
// A name given twice is an error.
func (p *parser) messageAttributes(dst *map[string]events.SQSMessageAttribute) error {
	switch p.Data[p.Pos] {
	case 'n':
		if err := p.NullLit(); err != nil {
			return err
		}
		*dst = nil
		return nil
	case '{':
	default:
		return p.typeErr(3, "an object of message attributes")
	}
	m := make(map[string]events.SQSMessageAttribute)
	*dst = m
	return p.Object(4, func(n jsonscan.Name) error {
		key := string(p.NameBytes(n))
		p.w.key, p.w.inKey = n, true
		if _, ok := m[key]; ok {
			// encoding/json would replace the first attribute by the second.
			return p.errAt(p.Pos, "name appears twice in messageAttributes")
		}
		var a events.SQSMessageAttribute // null stores the zero attribute
		if err := p.attribute(&a); err != nil {
			return err
		}
		m[key] = a
		p.w.inKey = false
		return nil
	})
}

// repeated reports whether key is the name of one of p.ins[first:], the members of the
// attributes object being read. SQS sends a handful, so it compares them in turn; past
// repeatedScan names it keeps them in *names, so that a hostile object of many names costs
// linear time, not quadratic.
func (p *parser) repeated(names *map[string]struct{}, first int, key []byte) bool {
	ins := p.ins[first:]
	if len(ins) < repeatedScan {
		for _, in := range ins {
			if string(p.text[in.koff:in.kend]) == string(key) {
				return true
			}
		}
		return false
	}
	if *names == nil {
		*names = make(map[string]struct{}, 2*len(ins))
		for _, in := range ins {
			(*names)[string(p.text[in.koff:in.kend])] = struct{}{}
		}
	}
	if _, ok := (*names)[string(key)]; ok {
		return true
	}
	(*names)[string(key)] = struct{}{}
	return false
}

// repeatedScan is how many names of an attributes object repeated compares one by one.
const repeatedScan = 16

// The members of a message attribute.
const (
	aUnknown = iota
	aStringValue
	aBinaryValue
	aStringListValues
	aBinaryListValues
	aDataType
)

var attributeFields = [...]string{
	aStringValue:      "stringValue",
	aBinaryValue:      "binaryValue",
	aStringListValues: "stringListValues",
	aBinaryListValues: "binaryListValues",
	aDataType:         "dataType",
}

var attributeFolded = foldAll(attributeFields[:])

func (p *parser) attributeField(name []byte) int {
	switch string(name) {
	case "stringValue":
		return aStringValue
	case "binaryValue":
		return aBinaryValue
	case "stringListValues":
		return aStringListValues
	case "binaryListValues":
		return aBinaryListValues
	case "dataType":
		return aDataType
	}
	return p.foldedField(name, attributeFolded[:])
}

// attribute reads one message attribute into a (null leaves it as it is).
func (p *parser) attribute(a *events.SQSMessageAttribute) error {
	switch p.Data[p.Pos] {
	case 'n':
		return p.NullLit()
	case '{':
	default:
		return p.typeErr(4, "a message attribute object")
	}
	var seen uint8 // the members read, bit 1<<f
	return p.Object(5, func(n jsonscan.Name) error {
		name := p.NameBytes(n)
		f := p.attributeField(name)
		p.w.sub = string(name)
		if f != aUnknown && !n.Flags.NeedsDecoding() && string(p.Data[n.Start:n.End]) == attributeFields[f] {
			p.w.sub = attributeFields[f]
		}
		if f != aUnknown {
			if seen&(1<<f) != 0 {
				return p.errAt(p.Pos, "member %q appears twice in the message attribute", attributeFields[f])
			}
			seen |= 1 << f
		}
		var err error
		switch f {
		case aStringValue:
			switch p.Data[p.Pos] {
			case '"':
				var s string
				if s, err = p.Str(); err == nil {
					a.StringValue = &s
				}
			case 'n':
				if err = p.NullLit(); err == nil {
					a.StringValue = nil
				}
			default:
				err = p.typeErr(5, "a string")
			}
		case aBinaryValue:
			err = p.binary(5, &a.BinaryValue)
		case aStringListValues:
			err = readList(p, &a.StringListValues, "an array of strings", func(v *string) error { return p.strField(6, v) })
		case aBinaryListValues:
			err = readList(p, &a.BinaryListValues, "an array of base64 strings", func(v *[]byte) error { return p.binary(6, v) })
		case aDataType:
			err = p.strField(5, &a.DataType)
		default:
			err = p.SkipValue(5)
		}
		if err != nil {
			return err
		}
		p.w.sub = ""
		return nil
	})
}

// binary reads a []byte at nesting depth into *dst as encoding/json does: a standard base64
// string into a new slice, an array of byte numbers into the slice already there, null as nil.
func (p *parser) binary(depth int, dst *[]byte) error {
	switch p.Data[p.Pos] {
	case '"':
		off := p.Pos
		end, flags, err := p.ScanString()
		if err != nil {
			return err
		}
		p.Pos = end
		text := p.NameBytes(jsonscan.Name{Start: off + 1, End: end - 1, Flags: flags})
		b := make([]byte, base64.StdEncoding.DecodedLen(len(text)))
		k, err := base64.StdEncoding.Decode(b, text)
		if err != nil {
			e := p.errAt(off, "want standard base64, got %s: %v", p.Got(off), err)
			e.Err = err
			return e
		}
		*dst = b[:k]
		return nil
	case 'n':
		if err := p.NullLit(); err != nil {
			return err
		}
		*dst = nil
		return nil
	case '[':
		return p.byteArray(depth+1, dst)
	}
	return p.typeErr(depth, "a base64 string")
}

// byteArray reads an array of byte numbers (0..255) at nesting depth depth into the slice
// already in *dst, as encoding/json does; null leaves an element as it is.
func (p *parser) byteArray(depth int, dst *[]byte) error {
	b := *dst
	n := 0
	err := p.Array(depth, func(idx int) error {
		p.setIdx(idx)
		if idx >= len(b) {
			if idx < cap(b) {
				b = b[:idx+1]
			} else {
				b = append(b, 0)
			}
		}
		switch c := p.Data[p.Pos]; {
		case c == 'n':
			if err := p.NullLit(); err != nil {
				return err
			}
		case c == '-' || '0' <= c && c <= '9':
			off := p.Pos
			if err := p.Number(); err != nil {
				return err
			}
			v, ok := byteValue(p.Data[off:p.Pos])
			if !ok {
				return p.errAt(off, "want a byte number 0..255, got %s", p.Got(off))
			}
			b[idx] = v
		default:
			return p.typeErr(depth, "a byte number 0..255")
		}
		p.clearIdx()
		n = idx + 1
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		b = []byte{}
	}
	*dst = b[:n]
	return nil
}

// byteValue reads a JSON number that encoding/json stores in a byte: digits only, at most 255.
func byteValue(num []byte) (byte, bool) {
	if len(num) > 3 {
		return 0, false
	}
	v := 0
	for _, c := range num {
		if c < '0' || c > '9' {
			return 0, false
		}
		v = v*10 + int(c-'0')
	}
	return byte(v), v <= 255
}

// readList reads a list attribute (stringListValues, binaryListValues) into the slice
// already in *dst, as encoding/json does: null makes it nil, [] empty, elements reuse the
// slice's room, and each element is read by elem (which leaves it as it is on a null).
func readList[T any](p *parser, dst *[]T, want string, elem func(*T) error) error {
	switch p.Data[p.Pos] {
	case 'n':
		if err := p.NullLit(); err != nil {
			return err
		}
		*dst = nil
		return nil
	case '[':
	default:
		return p.typeErr(5, want)
	}
	l := *dst
	n := 0
	err := p.Array(6, func(idx int) error {
		p.setIdx(idx)
		if idx >= len(l) {
			if idx < cap(l) {
				l = l[:idx+1]
			} else {
				var zero T
				l = append(l, zero)
			}
		}
		if err := elem(&l[idx]); err != nil {
			return err
		}
		p.clearIdx()
		n = idx + 1
		return nil
	})
	if err != nil {
		return err
	}
	if n == 0 {
		l = []T{}
	}
	*dst = l[:n]
	return nil
}

// setIdx enters an array element: the list's, or the byte array's inside a list element.
func (p *parser) setIdx(idx int) {
	if p.w.idx < 0 {
		p.w.idx = idx
	} else {
		p.w.idx2 = idx
	}
}

// clearIdx leaves the array element entered last.
func (p *parser) clearIdx() {
	if p.w.idx2 >= 0 {
		p.w.idx2 = -1
	} else {
		p.w.idx = -1
	}
}

// isRecords reports whether name is the event's Records member, matched as encoding/json does.
func (p *parser) isRecords(name []byte) bool {
	if string(name) == "Records" {
		return true
	}
	return string(p.foldName(name)) == "RECORDS"
}

// foldedField returns the index in folded of name folded, or 0.
func (p *parser) foldedField(name []byte, folded []string) int {
	f := p.foldName(name)
	for i, s := range folded {
		if i > 0 && string(f) == s {
			return i
		}
	}
	return 0
}

// foldName folds name as encoding/json does to match member names case-insensitively: ASCII
// letters upper-cased, every other character replaced by the smallest of its simple case
// folding orbit (so "ſ", U+017F, matches "s", and "K", U+212A, matches "k").
func (p *parser) foldName(name []byte) []byte {
	p.fold = appendFolded(p.fold[:0], name)
	return p.fold
}

func appendFolded(out, in []byte) []byte {
	for i := 0; i < len(in); {
		if c := in[i]; c < utf8.RuneSelf {
			if 'a' <= c && c <= 'z' {
				c -= 'a' - 'A'
			}
			out = append(out, c)
			i++
			continue
		}
		r, n := utf8.DecodeRune(in[i:])
		out = utf8.AppendRune(out, foldRune(r))
		i += n
	}
	return out
}

func foldAll(names []string) []string {
	out := make([]string, len(names))
	for i, s := range names {
		if s != "" {
			out[i] = string(appendFolded(nil, []byte(s)))
		}
	}
	return out
}

// foldRune returns the smallest rune of r's simple case folding orbit.
func foldRune(r rune) rune {
	for {
		r2 := unicode.SimpleFold(r)
		if r2 <= r {
			return r2
		}
		r = r2
	}
}
