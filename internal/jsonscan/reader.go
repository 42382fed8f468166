package jsonscan

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
	"strconv"
	"strings"
	"unicode/utf8"
)

// MaxDepth is the deepest nesting of arrays and objects that the toolkit's readers accept, the
// outermost container counted as 1. It is encoding/json's (its scanner's maxNestingDepth),
// which aws-lambda-go decodes events with: a payload that lambda.Start would decode is read by
// kafkaevent and sqsparse too, however deep its unknown members go, and one it refuses is
// refused here, before the stack could run out. It is the one nesting limit of the readers;
// filter refuses deeper documents before it (at the depth Lambda's filtering engine stops
// at), as a rule of matching, not of reading.
const MaxDepth = 10000

// Reader is the reader core that kafkaevent and sqsparse decode their events with: it reads
// values, objects, arrays, strings, literals and numbers from Data at Pos, validating them as
// RFC 8259 and encoding/json do, and words every syntax error as encoding/json does. What to
// build from the values is the caller's; so is the error type and the JSON path in it, which
// the caller's Failer adds.
//
// A decoder embeds a Reader and keeps its own state beside it. Methods that read a value
// expect Pos at its first byte (whitespace skipped) and leave Pos after it; on an error, Pos is
// at the offending byte.
type Reader struct {
	Data []byte
	Pos  int
	// Failer makes the errors: the caller's error type, carrying the JSON path of where the
	// caller is. Nil gives an *Error.
	Failer Failer

	scratch []byte // decoded strings, reused
}

// Failer makes a decoder's error for a fault at offset off of its input, described by msg
// (encoding/json's words for a syntax error). A decoder that embeds a Reader is its own Failer.
type Failer interface {
	Fail(off int, msg string) error
}

// Error is the toolkit's one error for input that is not what a reader wants, and where it is:
// kafkaevent's (it is kafkaevent.Error), the SQS event parser's, and a Reader's without Failer.
// Its message is "PREFIX: PATH: MSG", each of PREFIX and PATH left out when empty.
type Error struct {
	// Prefix names what read the input, and begins the message: "kafkaevent" for
	// kafkaevent.Parse and FromAWS, "SQS event" for the SQS event parser; empty for a plain
	// Reader.
	Prefix string
	// Path locates the bad value in the payload, as a JSON path such as
	// records["orders-0"][3].offset or Records[3].messageAttributes.trace.binaryValue; "$" is
	// the whole payload, and "" is no place in it. A member name that is not a plain
	// identifier is quoted: Records[0].attributes["a b"].
	Path string
	// Offset is the byte offset of the bad value in the payload, or -1 when there is no
	// payload (kafkaevent.FromAWS).
	Offset int
	// Msg says what is wrong, quoting the offending text on one line, escaped when it is not
	// printable: `want integer, got "x"`, `invalid character '}' looking for beginning of
	// value`.
	Msg string
	// Err is the underlying error, if any (a base64.CorruptInputError, say).
	Err error
}

func (e *Error) Error() string {
	s := e.Msg
	if e.Path != "" {
		s = e.Path + ": " + s
	}
	if e.Prefix != "" {
		s = e.Prefix + ": " + s
	}
	return s
}

// Unwrap returns the underlying error, if any.
func (e *Error) Unwrap() error { return e.Err }

// fail returns the caller's error for a fault at off.
func (r *Reader) fail(off int, msg string) error {
	if r.Failer == nil {
		return &Error{Offset: off, Msg: msg}
	}
	return r.Failer.Fail(off, msg)
}

// SkipWS moves Pos past whitespace.
func (r *Reader) SkipWS() { r.Pos = SkipWS(r.Data, r.Pos) }

// SyntaxErr reports invalid JSON at Pos, in encoding/json's words: what says where in the
// grammar ("after object key", "looking for beginning of value").
func (r *Reader) SyntaxErr(what string) error {
	return r.fail(r.Pos, SyntaxMessage(r.Data, r.Pos, what))
}

// SyntaxMessage words invalid JSON at d[i] as encoding/json does: "invalid character 'x' WHAT",
// or "unexpected end of JSON input WHAT" when i is at the end of d.
func SyntaxMessage(d []byte, i int, what string) string {
	if i >= len(d) {
		return "unexpected end of JSON input " + what
	}
	return "invalid character " + QuoteChar(d[i]) + " " + what
}

// DepthMessage is the error text for nesting deeper than MaxDepth.
func DepthMessage() string { return "nesting exceeds " + strconv.Itoa(MaxDepth) + " levels" }

// QuoteChar quotes a byte of the input for an error message, as encoding/json does; a byte
// from 0x80 up, which is no character by itself, is written "byte 0xNN".
func QuoteChar(c byte) string {
	switch {
	case c == '\'':
		return `'\''`
	case c == '"':
		return `'"'`
	case c >= utf8.RuneSelf:
		const hex = "0123456789abcdef"
		return "byte 0x" + string([]byte{hex[c>>4], hex[c&15]})
	}
	return strconv.QuoteRune(rune(c))
}

// Name is an object member's name: the body of its string, Data[Start:End], and what it holds.
// NameBytes gives its text.
type Name struct {
	Start, End int
	Flags      StringFlags
}

// Raw returns the name as written between the quotes.
func (r *Reader) Raw(n Name) []byte { return r.Data[n.Start:n.End] }

// NameBytes returns the text of a member name: its body when it needs no decoding, else its
// decoding in a scratch buffer that the next decoding reuses.
func (r *Reader) NameBytes(n Name) []byte {
	if !n.Flags.NeedsDecoding() {
		return r.Data[n.Start:n.End]
	}
	return r.Unescape(r.Data[n.Start:n.End], n.Flags)
}

// Object reads the object at Pos, at nesting depth depth (the object itself counted), calling
// fn for each member with Pos at the member's value, whitespace skipped. fn must consume the
// value.
func (r *Reader) Object(depth int, fn func(name Name) error) error {
	if r.Pos >= len(r.Data) || r.Data[r.Pos] != '{' {
		return r.SyntaxErr("looking for beginning of object")
	}
	if depth > MaxDepth {
		return r.fail(r.Pos, DepthMessage())
	}
	r.Pos++
	r.SkipWS()
	if r.Pos < len(r.Data) && r.Data[r.Pos] == '}' {
		r.Pos++
		return nil
	}
	for {
		n, err := r.Member()
		if err != nil {
			return err
		}
		if err := fn(n); err != nil {
			return err
		}
		if more, err := r.NextMember(); !more {
			return err
		}
	}
}

// Member reads a member's name and the colon after it, leaving Pos at its value, whitespace
// skipped. It is Object's, for decoders that read the members of an object in a loop of their
// own: after '{' and the whitespace after it (and not '}'), Member; the value; NextMember.
func (r *Reader) Member() (Name, error) {
	n, next, fault := MemberAt(r.Data, r.Pos)
	r.Pos = next
	if fault != "" {
		return Name{}, r.SyntaxErr(fault)
	}
	return n, nil
}

// NextMember reads what follows a member's value: ',' (more is true, Pos at the next name) or
// the closing '}' (more is false); anything else is the syntax error.
func (r *Reader) NextMember() (more bool, err error) {
	// Compact JSON, the usual case, without another call.
	if d, i := r.Data, r.Pos; i < len(d) {
		switch d[i] {
		case '}':
			r.Pos = i + 1
			return false, nil
		case ',':
			if i+1 < len(d) && d[i+1] == '"' {
				r.Pos = i + 1
				return true, nil
			}
		}
	}
	return r.afterMember()
}

func (r *Reader) afterMember() (more bool, err error) {
	next, more, fault := AfterMember(r.Data, r.Pos)
	r.Pos = next
	if fault != "" {
		return false, r.SyntaxErr(fault)
	}
	return more, nil
}

// MemberAt reads the member name at d[i] and the colon after it. It returns the name and the
// position of the member's value, whitespace skipped; on malformed input, the position of the
// offending byte and encoding/json's words for what is wrong there (see SyntaxMessage).
func MemberAt(d []byte, i int) (n Name, next int, fault string) {
	if i >= len(d) || d[i] != '"' {
		return Name{}, i, "looking for beginning of object key string"
	}
	// StringAt, by hand: member names are short, and a call per name shows.
	var end int
	var flags StringFlags
	if j := NextSpecial(d, i+1); j < len(d) && d[j] == '"' {
		end = j + 1
	} else {
		var serr StringError
		if end, flags, serr = String(d, i); serr != StringOK {
			off, what := StringFault(d, end, serr)
			return Name{}, off, what
		}
	}
	n = Name{i + 1, end - 1, flags}
	if end+1 < len(d) && d[end] == ':' && d[end+1] > ' ' {
		return n, end + 1, "" // compact JSON
	}
	j := SkipWS(d, end)
	if j >= len(d) || d[j] != ':' {
		return Name{}, j, "after object key"
	}
	if j = SkipWS(d, j+1); j >= len(d) {
		return Name{}, j, "looking for beginning of value"
	}
	return n, j, ""
}

// AfterMember reads what follows a member's value at d[i]: ',' (more is true, and next is the
// position of the next name, whitespace skipped) or the closing '}' (more is false, next is
// after it). On anything else, it returns the position and words of the fault, as MemberAt.
func AfterMember(d []byte, i int) (next int, more bool, fault string) {
	if i+1 < len(d) && d[i] == ',' && d[i+1] == '"' {
		return i + 1, true, "" // compact JSON goes straight on to the next name
	}
	i = SkipWS(d, i)
	if i < len(d) {
		switch d[i] {
		case ',':
			return SkipWS(d, i+1), true, ""
		case '}':
			return i + 1, false, ""
		}
	}
	return i, false, "after object key:value pair"
}

// AfterElement reads what follows an array element at d[i]: ',' (more is true, and next is the
// position of the next element, whitespace skipped) or the closing ']' (more is false, next is
// after it). On anything else, it returns the position and words of the fault, as MemberAt.
func AfterElement(d []byte, i int) (next int, more bool, fault string) {
	if i+1 < len(d) && d[i] == ',' && d[i+1] > ' ' {
		return i + 1, true, "" // compact JSON
	}
	i = SkipWS(d, i)
	if i < len(d) {
		switch d[i] {
		case ',':
			if i = SkipWS(d, i+1); i >= len(d) {
				return i, false, "looking for beginning of value"
			}
			return i, true, ""
		case ']':
			return i + 1, false, ""
		}
	}
	return i, false, "after array element"
}

// Array reads the array at Pos, at nesting depth depth (the array itself counted), calling fn
// for each element with Pos at the element, whitespace skipped, and its index. fn must consume
// the element.
func (r *Reader) Array(depth int, fn func(idx int) error) error {
	if r.Pos >= len(r.Data) || r.Data[r.Pos] != '[' {
		return r.SyntaxErr("looking for beginning of array")
	}
	if depth > MaxDepth {
		return r.fail(r.Pos, DepthMessage())
	}
	r.Pos++
	r.SkipWS()
	if r.Pos < len(r.Data) && r.Data[r.Pos] == ']' {
		r.Pos++
		return nil
	}
	for idx := 0; ; idx++ {
		if r.Pos >= len(r.Data) {
			return r.SyntaxErr("looking for beginning of value")
		}
		if err := fn(idx); err != nil {
			return err
		}
		if more, err := r.NextElement(); !more {
			return err
		}
	}
}

// NextElement reads what follows an array element: ',' (more is true, Pos at the next element,
// whitespace skipped) or the closing ']' (more is false); anything else is the syntax error.
func (r *Reader) NextElement() (more bool, err error) {
	// Compact JSON, the usual case, without another call.
	if d, i := r.Data, r.Pos; i < len(d) {
		switch d[i] {
		case ']':
			r.Pos = i + 1
			return false, nil
		case ',':
			if i+1 < len(d) && d[i+1] > ' ' {
				r.Pos = i + 1
				return true, nil
			}
		}
	}
	return r.afterElement()
}

func (r *Reader) afterElement() (more bool, err error) {
	next, more, fault := AfterElement(r.Data, r.Pos)
	r.Pos = next
	if fault != "" {
		return false, r.SyntaxErr(fault)
	}
	return more, nil
}

// ScanString checks the JSON string at Pos (its opening quote) and returns the position after
// its closing quote and what its body holds, without moving Pos. On a malformed string it
// moves Pos to the offending byte and returns the syntax error.
func (r *Reader) ScanString() (int, StringFlags, error) {
	end, flags, serr := StringAt(r.Data, r.Pos)
	if serr == StringOK {
		return end, flags, nil
	}
	off, what := StringFault(r.Data, end, serr)
	r.Pos = off
	return 0, 0, r.SyntaxErr(what)
}

// StringAt is String with a fast path for the usual string, printable ASCII without escapes,
// which it finds eight bytes at a time.
func StringAt(d []byte, i int) (end int, flags StringFlags, err StringError) {
	if j := NextSpecial(d, i+1); j < len(d) && d[j] == '"' {
		return j + 1, 0, StringOK
	}
	return String(d, i)
}

// NextSpecial returns the position of the first byte at or after i that a string's fast path
// must look at: '"', '\\', a control character or a byte from 0x80 up; len(d) when there is none.
func NextSpecial(d []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
		lows  = 0x7F7F7F7F7F7F7F7F
	)
	for ; i+8 <= len(d); i += 8 {
		x := binary.LittleEndian.Uint64(d[i:])
		t := x & lows               // the high bit of each byte cleared, so that sums carry into no neighbour
		ctl := ^(t + 0x60*ones)     // high bit set where t < 0x20
		q := t ^ 0x22*ones          // zero where t == '"'
		bs := t ^ 0x5C*ones         // zero where t == '\\'
		quote := ^((q + lows) | q)  // high bit set where q == 0
		back := ^((bs + lows) | bs) // high bit set where bs == 0
		if m := (x | ctl | quote | back) & highs; m != 0 {
			return i + bits.TrailingZeros64(m)>>3
		}
	}
	for ; i < len(d) && plain[d[i]]; i++ {
	}
	return i
}

// StringFault says where encoding/json reports a malformed string that String stopped at, at
// d[at] with err, and in what words: the byte after the backslash of a bad escape, the first
// byte that is not hexadecimal in a \u escape, the control character or the end of the input.
func StringFault(d []byte, at int, err StringError) (off int, what string) {
	switch err {
	case StringBadEscape:
		return min(at+1, len(d)), "in string escape code"
	case StringBadUnicode:
		i := at + 2
		for i < len(d) && i < at+6 && IsHex(d[i]) {
			i++
		}
		return i, `in \u hexadecimal character escape`
	}
	return at, "in string literal" // a control character, or the end of the input
}

// RawString reads the string at Pos and returns its body, the bytes between the quotes, and
// what it holds (Unescape gives its text when flags.NeedsDecoding()).
func (r *Reader) RawString() ([]byte, StringFlags, error) {
	if r.Pos >= len(r.Data) || r.Data[r.Pos] != '"' {
		return nil, 0, r.SyntaxErr("looking for beginning of string")
	}
	start := r.Pos
	end, flags, err := r.ScanString()
	if err != nil {
		return nil, 0, err
	}
	r.Pos = end
	return r.Data[start+1 : end-1], flags, nil
}

// Str reads the string at Pos and returns its text in a new string.
func (r *Reader) Str() (string, error) {
	raw, flags, err := r.RawString()
	if err != nil {
		return "", err
	}
	return r.Text(raw, flags), nil
}

// Text returns the text of a string body read by RawString as a new string.
func (r *Reader) Text(raw []byte, flags StringFlags) string {
	if flags.NeedsDecoding() {
		return string(r.Unescape(raw, flags))
	}
	return string(raw)
}

// Unescape decodes a string body checked by ScanString into a scratch buffer, which the next
// call reuses.
func (r *Reader) Unescape(raw []byte, flags StringFlags) []byte {
	r.scratch = AppendText(r.scratch[:0], raw, flags)
	return r.scratch
}

// AppendText appends the text of a string body checked by String to b: escapes decoded,
// invalid UTF-8 and lone surrogates turned into U+FFFD, as encoding/json does. flags are
// String's for the body.
func AppendText(b, raw []byte, flags StringFlags) []byte {
	if !flags.NeedsDecoding() {
		return append(b, raw...)
	}
	if flags&BadUTF8 != 0 {
		return AppendUnescaped(b, raw)
	}
	// Valid UTF-8: copy the runs between escapes whole.
	for {
		k := bytes.IndexByte(raw, '\\')
		if k < 0 {
			return append(b, raw...)
		}
		b = append(b, raw[:k]...)
		raw = raw[k:]
		n := escapeLen(raw)
		b = AppendUnescaped(b, raw[:n])
		raw = raw[n:]
	}
}

// escapeLen returns the length of the escape at the start of raw, a checked string body,
// taking every \uXXXX escape of a run at once: a surrogate pair is two escapes that make one
// character, and which escape pairs with which depends on those before it.
func escapeLen(raw []byte) int {
	if raw[1] != 'u' {
		return 2
	}
	n := 6
	for len(raw) >= n+6 && raw[n] == '\\' && raw[n+1] == 'u' {
		n += 6
	}
	return n
}

// PlainJSON reports whether s is written in JSON as itself between quotes, with no escapes.
func PlainJSON(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < ' ' || c == '"' || c == '\\' {
			return false
		}
	}
	return true
}

// QuotedAt reports whether the JSON string at d[i] is exactly "s", nothing escaped, and returns
// the position after it. s must be PlainJSON.
func QuotedAt(d []byte, i int, s string) (int, bool) {
	if i+len(s)+2 <= len(d) && d[i] == '"' && string(d[i+1:i+1+len(s)]) == s && d[i+1+len(s)] == '"' {
		return i + len(s) + 2, true
	}
	return 0, false
}

// Quoted consumes the JSON string "s" at Pos when it is exactly s, nothing escaped. s must be
// PlainJSON.
func (r *Reader) Quoted(s string) bool {
	if next, ok := QuotedAt(r.Data, r.Pos, s); ok {
		r.Pos = next
		return true
	}
	return false
}

// Null consumes a JSON null at Pos and reports whether there was one.
func (r *Reader) Null() bool {
	if r.Pos+4 <= len(r.Data) && string(r.Data[r.Pos:r.Pos+4]) == "null" {
		r.Pos += 4
		return true
	}
	return false
}

// NullLit consumes the null at Pos, or reports the syntax error there.
func (r *Reader) NullLit() error {
	if r.Null() {
		return nil
	}
	return r.Literal("null")
}

// Literal consumes the literal lit (true, false or null) at Pos, or reports the syntax error.
func (r *Reader) Literal(lit string) error {
	start := r.Pos
	i, ok := Literal(r.Data, start, lit)
	r.Pos = i
	if ok {
		return nil
	}
	return r.SyntaxErr(LiteralFault(r.Data, start, i, lit))
}

// LiteralFault words what is wrong with the literal lit that starts at d[start], where Literal
// stopped at d[at]: "in literal true (expecting 'r')", as encoding/json says it.
func LiteralFault(d []byte, start, at int, lit string) string {
	if at < len(d) {
		return "in literal " + lit + " (expecting " + QuoteChar(lit[at-start]) + ")"
	}
	return "in literal " + lit
}

// Number consumes a JSON number per RFC 8259, or reports the syntax error.
func (r *Reader) Number() error {
	i, err := Number(r.Data, r.Pos)
	r.Pos = i
	if err != NumberOK {
		return r.SyntaxErr(err.Context())
	}
	return nil
}

// Integer reads a JSON number that is an integer within int64. On anything else it returns
// false with Pos unchanged.
func (r *Reader) Integer() (int64, bool) {
	i := r.Pos
	neg := i < len(r.Data) && r.Data[i] == '-'
	if neg {
		i++
	}
	n, next, ok := UintAt(r.Data, i)
	switch {
	case !ok:
		return 0, false
	case neg && n <= 1<<63:
		r.Pos = next
		return -int64(n), true
	case !neg && n <= math.MaxInt64:
		r.Pos = next
		return int64(n), true
	}
	return 0, false
}

// UintAt reads the JSON number at d[i:] when it is a non-negative integer below 2^64, and
// returns it with the position after it.
func UintAt(d []byte, i int) (n uint64, next int, ok bool) {
	start := i
	// Offsets and epoch-millisecond timestamps run to 13 digits and more on every record:
	// take up to eight digits per step (see digits8). Sixteen digits cannot overflow.
	for i+8 <= len(d) && i-start < 16 {
		k, v := digits8(binary.LittleEndian.Uint64(d[i:]))
		n = n*pow10[k] + v
		i += k
		if k < 8 {
			break
		}
	}
	for i < len(d) && d[i] >= '0' && d[i] <= '9' {
		if n > (math.MaxUint64-9)/10 {
			return 0, 0, false
		}
		n = n*10 + uint64(d[i]-'0')
		i++
	}
	if i == start || i-start > 1 && d[start] == '0' {
		return 0, 0, false
	}
	if i < len(d) && (d[i] == '.' || d[i] == 'e' || d[i] == 'E') {
		return 0, 0, false
	}
	return n, i, true
}

var pow10 = [9]uint64{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000, 100000000}

// digits8 reads the ASCII digits at the start of x, eight bytes loaded little-endian: it
// returns how many there are (0 to 8) and their value. Branch-free: the digits are found with
// byte-wise arithmetic and combined with three multiplications (pairs, then quads, then the
// two quads), as in Lemire's "parse eight digits".
func digits8(x uint64) (int, uint64) {
	const (
		ones   = 0x0101010101010101
		zeros  = 0x30 * ones
		highs  = 0xF0 * ones
		lows   = 0x0F * ones
		plus6s = 0x06 * ones
	)
	// A byte is a digit when its high nibble is 3 and its low nibble plus 6 stays below 16.
	notDigit := (x&highs ^ zeros) | ((x&lows + plus6s) & highs)
	k := bits.TrailingZeros64(notDigit) / 8 // 8 when every byte is a digit
	if k == 0 {
		return 0, 0
	}
	// Shift the k digits to the top, so that the bytes below are zeros: leading zero digits.
	v := (x - zeros) << (64 - 8*uint(k))
	v = v*10 + v>>8
	v = ((v&0x000000FF000000FF)*(100+1000000<<32) + (v>>16&0x000000FF000000FF)*(1+10000<<32)) >> 32
	return k, v
}

// SkipValue consumes one JSON value at nesting depth depth (the containers around it),
// validating it.
func (r *Reader) SkipValue(depth int) error {
	r.SkipWS()
	if r.Pos >= len(r.Data) {
		return r.SyntaxErr("looking for beginning of value")
	}
	switch c := r.Data[r.Pos]; {
	case c == '{':
		return r.Object(depth+1, func(Name) error { return r.SkipValue(depth + 1) })
	case c == '[':
		return r.Array(depth+1, func(int) error { return r.SkipValue(depth + 1) })
	case c == '"':
		end, _, err := r.ScanString()
		if err != nil {
			return err
		}
		r.Pos = end
		return nil
	case c == 't':
		return r.Literal("true")
	case c == 'f':
		return r.Literal("false")
	case c == 'n':
		return r.Literal("null")
	case c == '-' || c >= '0' && c <= '9':
		return r.Number()
	}
	return r.SyntaxErr("looking for beginning of value")
}

// CheckValue validates the JSON value at Pos, at nesting depth depth, without consuming it,
// so that a type error on text that is not even JSON is reported as the syntax error it is.
func (r *Reader) CheckValue(depth int) error {
	save := r.Pos
	err := r.SkipValue(depth)
	if err == nil {
		r.Pos = save
	}
	return err
}

// Got describes the JSON text at off for an error message: the value there, or up to 40 bytes
// of it, on one line, quoted and escaped when it holds anything but printable text; "nothing"
// at the end of the input.
func (r *Reader) Got(off int) string {
	end := off
	q := Reader{Data: r.Data, Pos: off}
	if q.SkipValue(0) == nil {
		end = q.Pos // a valid value: all of it
	} else {
		for end < len(r.Data) && end-off < 40 {
			if c := r.Data[end]; (c == ',' || c == '}' || c == ']') && end > off {
				break
			}
			end++
		}
	}
	cut := false
	if end-off > 40 {
		end, cut = off+40, true
		for end > off && !utf8.RuneStart(r.Data[end]) {
			end-- // do not split a character
		}
	}
	s := strings.TrimSpace(string(r.Data[off:end]))
	if s == "" {
		return "nothing"
	}
	s = QuoteText(s)
	if cut {
		s += "..."
	}
	return s
}
