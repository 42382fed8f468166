package jsonl

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/suggest"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// maxWarnings is how many warnings WarningLines gives before it says how many more there are.
const maxWarnings = 10

// WarningLines returns the warnings of recs, read from the input name, one line each as
// "warning: NAME:LINE: ...", up to maxWarnings, then a line that says how many more there
// are. The command prints them.
func WarningLines(name string, recs []Record) []string {
	var lines []string
	n := 0
	for _, r := range recs {
		for _, w := range r.Warnings {
			if n < maxWarnings {
				lines = append(lines, fmt.Sprintf("warning: %s:%d: %s", name, r.Line, w))
			}
			n++
		}
	}
	if n > maxWarnings {
		lines = append(lines, fmt.Sprintf("warning: %d more warnings not shown", n-maxWarnings))
	}
	return lines
}

// ReadLinesInput reads the input of a command that takes records one per line (the file in
// args, or stdin), and refuses a whole event, saying how to turn it into lines for next.
func ReadLinesInput(args []string, stdin io.Reader, takesBack, next string) (name string, data []byte, err error) {
	name = input.Name(args)
	if data, err = input.Read(args, stdin, input.LinesLimit); err != nil {
		return name, nil, err
	}
	if kind := input.EventKind(data); kind != "" {
		return name, nil, fmt.Errorf("%s is %s event, not records one per line; \"klt event decode\" prints the records of an event%s: klt event decode %s | %s",
			name, input.WithArticle(kind), takesBack, input.ShellQuote(name), next)
	}
	return name, data, nil
}

// MaxLineErrors is how many bad lines readRecords reports before it gives up.
const MaxLineErrors = 10

// ErrTooManyErrors ends the list of line errors when there are more than maxLineErrors.
var ErrTooManyErrors = errors.New("too many errors")

// errGivenTwice reports a name that appears twice in one JSON object.
var errGivenTwice = errors.New("given twice")

// LineError is a problem with one line of JSON Lines input. Its message is "FILE:LINE: what is
// wrong", the form editors and terminals turn into links.
type LineError struct {
	File string
	Line int
	Err  error
}

func (e *LineError) Error() string { return fmt.Sprintf("%s:%d: %v", e.File, e.Line, e.Err) }

func (e *LineError) Unwrap() error { return e.Err }

// Record is one decoded input line: the record, and which fields the line left to klt.
type Record struct {
	// Line is the 1-based line number in the input.
	Line int
	// Record holds every field the line gave; Offset and Timestamp are only meaningful when
	// HasOffset and HasTimestamp say the line set them.
	Record       kafkaevent.Record
	HasOffset    bool
	HasTimestamp bool
	// HasPartition says the line gave a partition: without one, a record is in partition
	// 0 for build, and goes where the partitioner puts it for "klt produce".
	HasPartition bool
	// HasTimestampType says the line gave a timestampType, possibly "" (an event without
	// one); otherwise the record gets CREATE_TIME.
	HasTimestampType bool
	// Warnings say what in the line Kafka or Lambda would never produce (a topic name Kafka
	// rejects, offsets that do not increase...): build still makes the record, since events
	// written by hand or by other tools have such things, and "klt event decode" prints them.
	Warnings []string
}

// lineFields are the names a line may use, in the order the help text lists them.
var lineFields = []string{
	"topic", "partition", "offset", "timestamp", "timestampType",
	"key", "keyBase64", "value", "valueBase64", "headers", "keySchema", "valueSchema",
}

// timestampTypes are the values of "timestampType" Kafka defines. Others, such as a typo
// ("CREATE_TMIE"), are kept with a warning: kafkaevent.Parse accepts any string, so
// "klt event decode" can print one. "" is a record whose event has no timestampType.
var timestampTypes = []string{kafkaevent.CreateTime, kafkaevent.LogAppendTime, "NO_TIMESTAMP_TYPE"}

// dataFormats are the values of a schema's "dataFormat" Lambda writes; others are kept with a
// warning, and "" is schema metadata without a dataFormat.
var dataFormats = []string{"AVRO", "PROTOBUF", "JSON"}

// ReadRecords reads JSON Lines from r and decodes every non-blank line into a record. name is
// the file name used in error messages. Offsets that do not increase within a partition,
// counting the offsets klt assigns itself, get a warning (see assignOffset). A UTF-8 byte
// order mark at the start of the input is skipped.
//
// Every bad line is reported, up to maxLineErrors, as a *lineError; the returned error is the
// errors.Join of them, or the read error if reading failed.
func ReadRecords(ctx context.Context, name string, r io.Reader) ([]Record, error) {
	return ReadLines(ctx, name, r, true)
}

// ReadLines is readRecords, with "topic" optional in a line unless needTopic ("klt produce
// --topic" sends every record to one topic).
func ReadLines(ctx context.Context, name string, r io.Reader, needTopic bool) ([]Record, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		recs []Record
		errs []error
		last = make(map[partitionKey]int64) // offset of each partition's latest record
	)
	for n := 1; ; n++ {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		line, readErr := readLine(br)
		if errors.Is(readErr, input.ErrTooLarge) {
			return nil, errors.Join(append(errs, &LineError{File: name, Line: n, Err: readErr})...)
		}
		if readErr != nil && readErr != io.EOF {
			return nil, fmt.Errorf("%s: %w", name, readErr)
		}
		if n == 1 {
			line = bytes.TrimPrefix(line, []byte("\uFEFF"))
		}
		if len(bytes.TrimSpace(line)) > 0 {
			rec, err := decodeLineTopic(line, needTopic)
			if err == nil {
				var warning string
				if warning, err = assignOffset(&rec, last); warning != "" {
					rec.Warnings = append(rec.Warnings, warning)
				}
			}
			if err != nil {
				if len(errs) == MaxLineErrors {
					errs = append(errs, fmt.Errorf("%s: %w; stopped at line %d", name, ErrTooManyErrors, n))
					break
				}
				errs = append(errs, &LineError{File: name, Line: n, Err: err})
			} else {
				rec.Line = n
				recs = append(recs, rec)
			}
		}
		if readErr == io.EOF {
			break
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return recs, nil
}

// errLineTooLong is the error of a line longer than maxLineBytes; errors.Is finds errTooLarge
// in it.
var errLineTooLong error = lineTooLongError{}

type lineTooLongError struct{}

func (lineTooLongError) Error() string {
	return fmt.Sprintf("longer than %d bytes (%s, klt's limit for one line of JSON Lines); klt read no further",
		input.MaxLineBytes, clitext.SizeText(input.MaxLineBytes))
}

func (lineTooLongError) Is(target error) bool { return target == input.ErrTooLarge }

// readLine returns the next line of br with its '\n', or what is left at the end of the input
// with io.EOF. A line longer than maxLineBytes is errLineTooLong, found before more than that
// is held in memory.
func readLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		frag, err := br.ReadSlice('\n')
		if len(line)+len(bytes.TrimSuffix(frag, []byte("\n"))) > input.MaxLineBytes {
			return nil, errLineTooLong
		}
		line = append(line, frag...)
		if err != bufio.ErrBufferFull {
			return line, err
		}
	}
}

// partitionKey identifies a topic partition.
type partitionKey struct {
	topic     string
	partition int32
}

// assignOffset gives rec the next offset of its partition when the line set none. When a
// line's own offset does not come after the partition's previous one it returns a warning:
// Lambda delivers a partition's records in increasing offset order, but fixtures that other
// projects wrote repeat offsets, and "klt event decode" prints them as they are. It fails
// only when there is no next offset to assign. last holds the offset of each partition's
// latest record.
func assignOffset(rec *Record, last map[partitionKey]int64) (warning string, err error) {
	r := &rec.Record
	k := partitionKey{r.Topic, r.Partition}
	prev, seen := last[k]
	switch {
	case !seen && !rec.HasOffset:
		r.Offset = 0
	case !seen:
	case !rec.HasOffset && prev == math.MaxInt64:
		return "", fmt.Errorf("no offset comes after %d, the previous record of %s; give this one its offset",
			prev, r.PartitionID())
	case !rec.HasOffset:
		r.Offset = prev + 1
	case r.Offset <= prev:
		warning = fmt.Sprintf("offset %d is not after %d, the previous record of %s; Lambda delivers a partition's records in increasing offset order",
			r.Offset, prev, r.PartitionID())
	}
	last[k] = r.Offset
	return warning, nil
}

// DecodeLine decodes one line of JSON Lines input. The line must be one JSON object using only
// the names in lineFields, each at most once; errors say which field is wrong and why.
// It sets neither Line nor an automatic offset.
func DecodeLine(line []byte) (Record, error) { return decodeLineTopic(line, true) }

// decodeLineTopic is decodeLine, with "topic" optional unless needTopic.
func decodeLineTopic(line []byte, needTopic bool) (Record, error) {
	var rec Record
	if !utf8.Valid(line) {
		return rec, errors.New("line is not valid UTF-8 (use keyBase64 or valueBase64 for binary data)")
	}
	if !json.Valid(line) {
		return rec, lineSyntaxError(line)
	}
	fields, err := SplitObject(line, "record")
	if err != nil {
		return rec, err
	}
	if fields, err = withoutDecodeError(fields); err != nil {
		return rec, err
	}
	if err := fields.check("", lineFields); err != nil {
		return rec, err
	}
	r := &rec.Record
	topic, ok := fields.get("topic")
	if !ok && needTopic {
		return rec, errors.New(`missing "topic"`)
	}
	var warning string
	if ok {
		if r.Topic, warning, err = decodeTopic(topic); err != nil {
			return rec, fieldError("topic", err)
		}
		rec.warn("topic", warning)
	}
	if raw, ok := fields.given("partition"); ok {
		rec.HasPartition = true
		n, err := decodeInt(raw, 0, math.MaxInt32)
		if err != nil {
			return rec, fieldError("partition", err)
		}
		r.Partition = int32(n)
	}
	if raw, ok := fields.given("offset"); ok {
		if r.Offset, err = decodeInt(raw, 0, math.MaxInt64); err != nil {
			return rec, fieldError("offset", err)
		}
		rec.HasOffset = true
	}
	if raw, ok := fields.given("timestamp"); ok {
		if r.Timestamp, warning, err = decodeTimestamp(raw); err != nil {
			return rec, fieldError("timestamp", err)
		}
		rec.warn("timestamp", warning)
		rec.HasTimestamp = true
	}
	if raw, ok := fields.given("timestampType"); ok {
		if r.TimestampType, warning, err = decodeEnum(raw, timestampTypes, "the types Kafka has"); err != nil {
			return rec, fieldError("timestampType", err)
		}
		rec.warn("timestampType", warning)
		rec.HasTimestampType = true
	}
	if r.Key, err = decodeBytes(fields, "key", "keyBase64", false); err != nil {
		return rec, err
	}
	if r.Value, err = decodeBytes(fields, "value", "valueBase64", true); err != nil {
		return rec, err
	}
	if raw, ok := fields.given("headers"); ok {
		if r.Headers, err = decodeHeaders(raw); err != nil {
			return rec, fieldError("headers", err)
		}
	}
	if raw, ok := fields.given("keySchema"); ok {
		if r.KeySchema, warning, err = decodeSchema(raw); err != nil {
			return rec, fieldError("keySchema", err)
		}
		rec.warn("keySchema.dataFormat", warning)
	}
	if raw, ok := fields.given("valueSchema"); ok {
		if r.ValueSchema, warning, err = decodeSchema(raw); err != nil {
			return rec, fieldError("valueSchema", err)
		}
		rec.warn("valueSchema.dataFormat", warning)
	}
	return rec, nil
}

// warn adds warning, about the field name, to rec's warnings; "" is no warning.
func (rec *Record) warn(name, warning string) {
	if warning != "" {
		rec.Warnings = append(rec.Warnings, name+": "+warning)
	}
}

// errorField is the name under which "klt event decode" prints what is wrong with a record it
// could not fully decode. It is not a field of the format: such a line is rejected.
const errorField = "error"

// withoutDecodeError returns fields without a null "error", or an error when fields has a
// non-null one: the line is a record that "klt event decode" printed with a decode error, and
// its fields hold only what could be decoded, so building it would silently change the record.
func withoutDecodeError(fields object) (object, error) {
	raw, ok := fields.get(errorField)
	if !ok {
		return fields, nil
	}
	if !isNull(raw) {
		msg := "record carries a decode error; fix or drop it"
		switch s, err := decodeString(raw); {
		case err != nil:
			msg += fmt.Sprintf(` ("error" is not a string: %v)`, err)
		case s != "":
			msg += " (" + s + ")"
		}
		return nil, errors.New(msg)
	}
	return slices.DeleteFunc(fields, func(f field) bool { return f.Name == errorField }), nil
}

// field is one name and raw value of a JSON object.
type field struct {
	Name  string
	Value json.RawMessage
}

// object is the fields of a JSON object, in input order, each name once.
type object []field

// get returns the value of the field named name, and whether there is one.
func (o object) get(name string) (json.RawMessage, bool) {
	for _, f := range o {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}

// given returns the value of the field named name, and whether the object gives one: a null
// value is the same as no field.
func (o object) given(name string) (json.RawMessage, bool) {
	raw, ok := o.get(name)
	if !ok || isNull(raw) {
		return nil, false
	}
	return raw, true
}

// check returns an error for the first field whose name is not in known; where says which
// object it is in, as for unknownField.
func (o object) check(where string, known []string) error {
	for _, f := range o {
		if !slices.Contains(known, f.Name) {
			return unknownField(f.Name, where, known)
		}
	}
	return nil
}

// SplitObject decodes data, which must hold exactly one valid JSON value, into the fields of
// the object it must be, in order. what names the object in errors ("record", "header"). A name
// given twice is an error: JSON decoders differ on which one wins, so a fixture must not depend
// on it.
func SplitObject(data []byte, what string) (object, error) {
	if data = bytes.TrimSpace(data); len(data) == 0 || data[0] != '{' {
		return nil, fmt.Errorf("want a JSON object for the %s, got %s", what, describe(data))
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	if _, err := dec.Token(); err != nil { // the opening brace
		return nil, JSONError(err)
	}
	var fields object
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, JSONError(err)
		}
		name, ok := tok.(string)
		if !ok { // cannot happen: json.Decoder gives object keys as strings
			return nil, fmt.Errorf("invalid JSON: a %s key is %T, not a string", what, tok)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, JSONError(err)
		}
		if _, ok := fields.get(name); ok {
			return nil, fmt.Errorf("%q %w", name, errGivenTwice)
		}
		fields = append(fields, field{name, raw})
	}
	return fields, nil
}

// lineSyntaxError says what is wrong with line, which is not valid JSON, and where. It tells
// the cases a user can fix without reading encoding/json's words from the decoder's typed
// results, never from the text of its errors, which changes between Go versions: a line that
// ends too soon (io.ErrUnexpectedEOF), something after the record (a second record on the
// line, most often), and a syntax error at a column (*json.SyntaxError).
func lineSyntaxError(line []byte) error {
	dec := json.NewDecoder(bytes.NewReader(line))
	var v json.RawMessage
	err := dec.Decode(&v)
	var se *json.SyntaxError
	switch {
	case err == nil:
		// One valid value, then more: it is what makes the line invalid.
		off := int(dec.InputOffset())
		rest := bytes.TrimLeft(line[off:], " \t\r\n")
		col := len(line) - len(rest) + 1
		switch {
		case len(rest) == 0: // json.Valid and the decoder disagree; say so rather than guess
			return fmt.Errorf("invalid JSON at column %d", col)
		case rest[0] == '{':
			return fmt.Errorf("invalid JSON at column %d: a second object after the record; put one record per line", col)
		}
		return fmt.Errorf("invalid JSON at column %d: %s after the record", col, strconv.QuoteRune(firstRune(rest)))
	case errors.Is(err, io.ErrUnexpectedEOF), errors.Is(err, io.EOF):
		return errors.New("invalid JSON: unexpected end of line")
	case errors.As(err, &se):
		return fmt.Errorf("invalid JSON at column %d: %w", se.Offset, err)
	}
	return JSONError(err)
}

// firstRune returns the first character of b, or the first byte as a rune when b does not
// start with valid UTF-8.
func firstRune(b []byte) rune {
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return rune(b[0])
	}
	return r
}

// JSONError reports an encoding/json error about a part of a line that json.Valid already
// accepted, which should not happen; it wraps err, for errors.As.
func JSONError(err error) error {
	return fmt.Errorf("invalid JSON: %w", err)
}

// describe names the JSON type of raw for "want X, got Y" messages; short scalars are quoted
// in full, since seeing the value helps more than its type.
func describe(raw json.RawMessage) string {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "nothing"
	}
	switch raw[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	}
	if len(raw) <= 40 {
		return string(raw)
	}
	switch raw[0] {
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	}
	return "a number"
}

// fieldError prefixes err with the name of the field it is about.
func fieldError(name string, err error) error { return fmt.Errorf("%s: %w", name, err) }

// unknownField reports a field name the format does not have, suggesting the nearest known
// name when one is close enough to be a typo. where is "" for the record, else a context such
// as "in a header".
func unknownField(name, where string, known []string) error {
	msg := fmt.Sprintf("unknown field %q", name)
	if where != "" {
		msg += " " + where
	}
	if s := nearest(name, known); s != "" {
		return fmt.Errorf("%s; did you mean %q?", msg, s)
	}
	return errors.New(msg + "; known fields: " + strings.Join(known, ", "))
}

// nearest returns the name in known closest to name, when the two differ only by case or by at
// most two edits; otherwise "".
func nearest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return k
		}
		if d := suggest.Distance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	return best
}

func isNull(raw json.RawMessage) bool { return string(bytes.TrimSpace(raw)) == "null" }

// decodeString decodes raw as a JSON string.
func decodeString(raw json.RawMessage) (string, error) {
	if r := bytes.TrimSpace(raw); len(r) == 0 || r[0] != '"' {
		return "", fmt.Errorf("want a string, got %s", describe(raw))
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return "", JSONError(err)
	}
	return s, nil
}

// decodeTopic decodes a Kafka topic name, which must not be empty. Any other name Kafka would
// reject (it takes 1 to 249 characters from [a-zA-Z0-9._-], and not "." or "..") gets a
// warning, not an error: kafkaevent.Parse accepts it, so "klt event decode" can print it, and
// fixtures written by hand have such names.
func decodeTopic(raw json.RawMessage) (topic, warning string, err error) {
	s, err := decodeString(raw)
	if err != nil {
		return "", "", err
	}
	switch {
	case s == "":
		return "", "", errors.New("must not be empty") // nor can it be in an event: Parse rejects it
	case len(s) > 249:
		return s, fmt.Sprintf("%d characters is longer than Kafka's limit of 249", len(s)), nil
	case s == "." || s == "..":
		return s, fmt.Sprintf("%q is not a topic name Kafka accepts", s), nil
	}
	for _, c := range s {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '.' || c == '_' || c == '-') {
			return s, fmt.Sprintf("%q has %q; Kafka topic names use only letters, digits, '.', '_' and '-'", s, c), nil
		}
	}
	return s, "", nil
}

// decodeInt decodes raw as a JSON integer in [lo, hi]. Exponents and fractions are rejected
// even when the value is whole: offsets are written as plain integers.
func decodeInt(raw json.RawMessage, lo, hi int64) (int64, error) {
	s := string(bytes.TrimSpace(raw))
	want := fmt.Sprintf("want an integer from %d to %d", lo, hi)
	if s == "" || !(s[0] == '-' || '0' <= s[0] && s[0] <= '9') {
		return 0, fmt.Errorf("%s, got %s", want, describe(raw))
	}
	n, err := strconv.ParseInt(s, 10, 64)
	if err != nil || n < lo || n > hi {
		return 0, fmt.Errorf("%s, got %s", want, describe(raw))
	}
	return n, nil
}

// ParseTime parses an RFC 3339 time that Kafka can hold as a record timestamp and klt can
// print: from 1970 to year 9999 in UTC, to the millisecond. It returns the time in UTC.
func ParseTime(s string) (time.Time, error) {
	t, err := time.Parse(time.RFC3339Nano, s)
	switch {
	case err != nil:
		return time.Time{}, fmt.Errorf("want an RFC 3339 time such as 2026-01-15T10:00:00.250Z, got %q", s)
	case t.Before(time.UnixMilli(0)):
		return time.Time{}, fmt.Errorf("%s is before 1970, which Kafka cannot represent", s)
	case t.UnixMilli() > maxMillis:
		return time.Time{}, fmt.Errorf("%s is after year 9999 in UTC", s)
	case t.Nanosecond()%int(time.Millisecond) != 0:
		return time.Time{}, fmt.Errorf("%s is more precise than the millisecond Kafka keeps", s)
	}
	return t.UTC(), nil
}

// maxMillis is the last millisecond of year 9999, the latest timestamp klt accepts: RFC 3339
// has four-digit years.
var maxMillis = time.Date(9999, 12, 31, 23, 59, 59, 999e6, time.UTC).UnixMilli()

// decodeTimestamp decodes a record timestamp: epoch milliseconds as a JSON integer (-1 for
// "no timestamp", which is the zero time), or an RFC 3339 string with at most millisecond
// precision from 1970 to year 9999. Kafka has no timestamps before 1970; an integer before it
// (or after year 9999) gets a warning, since kafkaevent.Parse accepts any and
// "klt event decode" prints such a time as an integer.
func decodeTimestamp(raw json.RawMessage) (t time.Time, warning string, err error) {
	if r := bytes.TrimSpace(raw); len(r) > 0 && r[0] == '"' {
		s, err := decodeString(raw)
		if err != nil {
			return time.Time{}, "", err
		}
		t, err := ParseTime(s)
		return t, "", err
	}
	ms, err := decodeInt(raw, math.MinInt64, math.MaxInt64)
	if err != nil {
		return time.Time{}, "", fmt.Errorf("want epoch milliseconds (an integer; -1 for none) or an RFC 3339 string, got %s", describe(raw))
	}
	switch {
	case ms == -1:
		return time.Time{}, "", nil
	case ms < 0:
		warning = fmt.Sprintf("%d is before 1970, which Kafka cannot represent", ms)
	case ms > maxMillis:
		warning = fmt.Sprintf("%d is after year 9999", ms)
	}
	return time.UnixMilli(ms).UTC(), warning, nil
}

// decodeEnum decodes raw as a string that should be "" or one of known, which what names in
// the warning a string that is not.
func decodeEnum(raw json.RawMessage, known []string, what string) (s, warning string, err error) {
	if s, err = decodeString(raw); err != nil {
		return "", "", err
	}
	if s != "" && !slices.Contains(known, s) {
		warning = fmt.Sprintf("%q is not one of %s, %s", s, strings.Join(known, ", "), what)
		if n := nearest(s, known); n != "" {
			warning += fmt.Sprintf("; did you mean %q?", n)
		}
	}
	return s, warning, nil
}

// decodeBytes decodes the key or the value of a line, or a header value, from its text field (textName) or its
// base64 field (b64Name), at most one of which may be given. Absent or null gives nil. When
// jsonOK, the text field may also be a JSON object or array, which becomes its compact JSON text.
func decodeBytes(o object, textName, b64Name string, jsonOK bool) ([]byte, error) {
	text, hasText := o.get(textName)
	b64, hasB64 := o.get(b64Name)
	switch {
	case hasText && hasB64:
		return nil, fmt.Errorf("both %q and %q given; use one", textName, b64Name)
	case hasB64:
		if isNull(b64) {
			return nil, nil
		}
		b, err := decodeBase64(b64)
		if err != nil {
			return nil, fieldError(b64Name, err)
		}
		return b, nil
	case !hasText || isNull(text):
		return nil, nil
	}
	switch bytes.TrimSpace(text)[0] {
	case '"':
		s, err := decodeString(text)
		if err != nil {
			return nil, fieldError(textName, err)
		}
		return []byte(s), nil
	case '{', '[':
		if jsonOK {
			var buf bytes.Buffer
			if err := json.Compact(&buf, text); err != nil {
				return nil, fieldError(textName, JSONError(err))
			}
			return buf.Bytes(), nil
		}
	}
	want := "a string or null"
	if jsonOK {
		want = "a string, an object, an array or null"
	}
	err := fmt.Errorf("%s: want %s, got %s", textName, want, describe(text))
	if t := string(bytes.TrimSpace(text)); len(t) <= 40 && t[0] != '{' && t[0] != '[' {
		err = fmt.Errorf("%w; for the text %s write %q", err, t, t)
	}
	return nil, err
}

// decodeBase64 decodes raw as a JSON string of standard, padded base64, the encoding Lambda uses.
func decodeBase64(raw json.RawMessage) ([]byte, error) {
	s, err := decodeString(raw)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.Strict().DecodeString(s)
	if err != nil {
		return nil, fmt.Errorf("want standard padded base64: %w", err)
	}
	return b, nil
}

// headerFields are the names a header in the array form may use.
var headerFields = []string{"key", "value", "valueBase64"}

// decodeHeaders decodes "headers": an array of {"key":K,"value":TEXT} or
// {"key":K,"valueBase64":B64} objects, which keeps order and repeated names, or an object
// {"K":TEXT,...} for the common case. A null or absent value is a null header value.
func decodeHeaders(raw json.RawMessage) ([]kafkaevent.Header, error) {
	switch bytes.TrimSpace(raw)[0] {
	case '{':
		fields, err := SplitObject(raw, "headers")
		if errors.Is(err, errGivenTwice) {
			return nil, fmt.Errorf("%w; repeated header names need the array form", err)
		}
		if err != nil {
			return nil, err
		}
		hs := make([]kafkaevent.Header, 0, len(fields))
		for _, f := range fields {
			h := kafkaevent.Header{Key: f.Name}
			if !isNull(f.Value) {
				s, err := decodeString(f.Value)
				if err != nil {
					return nil, fmt.Errorf("%q: %w (use the array form with valueBase64 for binary values)", f.Name, err)
				}
				h.Value = []byte(s)
			}
			hs = append(hs, h)
		}
		return hs, nil
	case '[':
	default:
		return nil, fmt.Errorf(`want an array of {"key":...,"value":...} objects or an object of names to values, got %s`, describe(raw))
	}
	var elems []json.RawMessage
	if err := json.Unmarshal(raw, &elems); err != nil {
		return nil, JSONError(err)
	}
	hs := make([]kafkaevent.Header, 0, len(elems))
	for i, elem := range elems {
		h, err := decodeHeader(elem)
		if err != nil {
			return nil, fmt.Errorf("[%d]: %w", i, err)
		}
		hs = append(hs, h)
	}
	return hs, nil
}

// decodeHeader decodes one element of the array form of "headers".
func decodeHeader(raw json.RawMessage) (kafkaevent.Header, error) {
	var h kafkaevent.Header
	fields, err := SplitObject(raw, "header")
	if err != nil {
		return h, err
	}
	if err := fields.check("in a header", headerFields); err != nil {
		return h, err
	}
	key, ok := fields.get("key")
	if !ok {
		return h, errors.New(`missing "key"`)
	}
	if h.Key, err = decodeString(key); err != nil {
		return h, fieldError("key", err)
	}
	h.Value, err = decodeBytes(fields, "value", "valueBase64", false)
	return h, err
}

// schemaFields are the names of a keySchema or valueSchema object.
var schemaFields = []string{"dataFormat", "schemaId"}

// decodeSchema decodes {"dataFormat":"AVRO","schemaId":"1"}. Either may be left out, null or
// "": events from schema registries that do not give an id (Powertools' Protobuf fixtures, for
// one) have metadata without it. A dataFormat Lambda does not write gets a warning.
func decodeSchema(raw json.RawMessage) (m *kafkaevent.SchemaMetadata, warning string, err error) {
	fields, err := SplitObject(raw, "schema")
	if err != nil {
		return nil, "", err
	}
	if err := fields.check("in a schema", schemaFields); err != nil {
		return nil, "", err
	}
	var s kafkaevent.SchemaMetadata
	if format, ok := fields.given("dataFormat"); ok {
		if s.DataFormat, warning, err = decodeEnum(format, dataFormats, "the formats Lambda writes"); err != nil {
			return nil, "", fieldError("dataFormat", err)
		}
	}
	if id, ok := fields.given("schemaId"); ok {
		if s.SchemaID, err = decodeString(id); err != nil {
			return nil, "", fieldError("schemaId", err)
		}
	}
	return &s, warning, nil
}
