package sqsparse_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
	"github.com/kafkalambda/toolkit/internal/sqsparse"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

// agree decodes data with Parse and with encoding/json into events.SQSEvent and fails t unless
// both refuse it or both give the same event, field by field (nil and empty apart); or, where
// data gives a member twice (firstDuplicate), encoding/json accepts it and Parse refuses it
// there. It reports whether data was such a duplicate.
func agree(t testing.TB, name string, data []byte) (dup bool) {
	t.Helper()
	var want events.SQSEvent
	wantErr := json.Unmarshal(data, &want)
	got, err := sqsparse.Parse(data)
	splitAgrees(t, name, data, got, err)
	dupPath, dup := firstDuplicate(data)
	var e *jsonscan.Error
	if errors.As(err, &e) && strings.Contains(e.Msg, "appears twice") && (!dup || e.Path != dupPath) {
		t.Fatalf("%s: Parse refuses the payload at %s (%v); the first member given twice is at %q (found: %v)\npayload: %s",
			name, e.Path, err, dupPath, dup, show(data))
	}
	switch {
	case wantErr == nil && dup:
		if err == nil {
			t.Fatalf("%s: %s given twice (encoding/json keeps the last one), and Parse accepts the payload\npayload: %s", name, dupPath, show(data))
		}
		checkError(t, name, data, err)
		return true
	case wantErr != nil && err == nil:
		t.Fatalf("%s: encoding/json refuses the payload (%v), Parse accepts it\npayload: %s", name, wantErr, show(data))
	case wantErr == nil && err != nil:
		t.Fatalf("%s: encoding/json accepts the payload, Parse refuses it: %v\npayload: %s", name, err, show(data))
	case err != nil:
		checkError(t, name, data, err)
		return false
	}
	if got == nil {
		t.Fatalf("%s: Parse returned nil and no error", name)
	}
	if diffs := diffEvents(&want, got); len(diffs) > 0 {
		t.Fatalf("%s: Parse and encoding/json disagree:\n  %s\npayload: %s", name, strings.Join(diffs, "\n  "), show(data))
	}
	return false
}

// show quotes a payload for a failure message, cut to its first 2,000 bytes.
func show(data []byte) string {
	if len(data) > 2000 {
		return fmt.Sprintf("%q... (%d bytes)", data[:2000], len(data))
	}
	return fmt.Sprintf("%q", data)
}

// checkError checks what every error of Parse must be: an *jsonscan.Error, on one line, with a
// path and an offset within the payload.
func checkError(t testing.TB, name string, data []byte, err error) {
	t.Helper()
	e, ok := err.(*jsonscan.Error)
	if !ok {
		t.Fatalf("%s: error %T %v, want *jsonscan.Error", name, err, err)
	}
	msg := err.Error()
	if strings.ContainsAny(msg, "\n\r") || !utf8.ValidString(msg) {
		t.Fatalf("%s: error not on one line of valid UTF-8: %q", name, msg)
	}
	if e.Path == "" || e.Offset < 0 || e.Offset > len(data) {
		t.Fatalf("%s: error with path %q, offset %d (payload of %d bytes): %v", name, e.Path, e.Offset, len(data), err)
	}
}

// diffEvents lists the fields where got differs from want, by JSON path; nil when they are
// equal, as reflect.DeepEqual sees it (a nil slice or map is not an empty one).
func diffEvents(want, got *events.SQSEvent) []string {
	var d []string
	add := func(path string, w, g any) {
		if !reflect.DeepEqual(w, g) {
			d = append(d, fmt.Sprintf("%s: encoding/json %#v, Parse %#v", path, w, g))
		}
	}
	if (want.Records == nil) != (got.Records == nil) || len(want.Records) != len(got.Records) {
		add("Records", want.Records, got.Records)
		return d
	}
	for i := range want.Records {
		w, g := &want.Records[i], &got.Records[i]
		p := fmt.Sprintf("Records[%d].", i)
		add(p+"messageId", w.MessageId, g.MessageId)
		add(p+"receiptHandle", w.ReceiptHandle, g.ReceiptHandle)
		add(p+"body", w.Body, g.Body)
		add(p+"md5OfBody", w.Md5OfBody, g.Md5OfBody)
		add(p+"md5OfMessageAttributes", w.Md5OfMessageAttributes, g.Md5OfMessageAttributes)
		add(p+"attributes", w.Attributes, g.Attributes)
		add(p+"eventSourceARN", w.EventSourceARN, g.EventSourceARN)
		add(p+"eventSource", w.EventSource, g.EventSource)
		add(p+"awsRegion", w.AWSRegion, g.AWSRegion)
		if (w.MessageAttributes == nil) != (g.MessageAttributes == nil) || len(w.MessageAttributes) != len(g.MessageAttributes) {
			add(p+"messageAttributes", w.MessageAttributes, g.MessageAttributes)
			continue
		}
		for k, wa := range w.MessageAttributes {
			ga, ok := g.MessageAttributes[k]
			if !ok {
				d = append(d, fmt.Sprintf("%smessageAttributes[%q]: missing in Parse's", p, k))
				continue
			}
			q := fmt.Sprintf("%smessageAttributes[%q].", p, k)
			add(q+"stringValue", wa.StringValue, ga.StringValue)
			add(q+"binaryValue", wa.BinaryValue, ga.BinaryValue)
			add(q+"stringListValues", wa.StringListValues, ga.StringListValues)
			add(q+"binaryListValues", wa.BinaryListValues, ga.BinaryListValues)
			add(q+"dataType", wa.DataType, ga.DataType)
		}
	}
	if len(d) == 0 && !reflect.DeepEqual(want, got) {
		d = append(d, "the events differ where no field shows it") // a field this list misses
	}
	return d
}

// fixtureFiles returns the vendored events of other projects (testdata/fixtures, see its
// SOURCES.md).
func fixtureFiles(t testing.TB) []string {
	files, err := filepath.Glob("testdata/fixtures/*/*.json")
	if err != nil || len(files) < 10 {
		t.Fatalf("fixtures: %d files, %v", len(files), err)
	}
	return files
}

// Every vendored fixture decodes as encoding/json decodes it; the two that carry invalid
// base64 are refused by both.
func TestFixturesAgreeWithEncodingJSON(t *testing.T) {
	refused := 0
	for _, f := range fixtureFiles(t) {
		data, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		agree(t, f, data)
		if _, err := sqsparse.Parse(data); err != nil {
			refused++
			if !strings.Contains(err.Error(), `messageAttributes.testAttr.binaryValue: want standard base64, got "base64Str"`) {
				t.Errorf("%s: %v", f, err)
			}
		}
	}
	if refused != 2 {
		t.Errorf("%d fixtures refused, want the 2 with invalid base64 (SOURCES.md)", refused)
	}
}

// The benchmark's event decodes as encoding/json decodes it.
func TestGeneratedEventAgrees(t *testing.T) {
	agree(t, "sqsgen.Event(200, 200)", sqsgen.Event(200, 200))
	agree(t, "sqsgen.Event(3, 1)", sqsgen.Event(3, 1))
}

// Random events of every shape decode as encoding/json decodes them: member names in any case
// and order, escaped or folded (ſ for s); unknown members, given twice too; nulls everywhere;
// empty and null lists; byte arrays; escapes, surrogates, invalid UTF-8; whitespace; and wrong
// types and bad base64, which both must refuse. Where Records, a member or a name is given
// twice, which encoding/json reads as the last one, Parse refuses the event there.
func TestRandomEventsAgree(t *testing.T) {
	n := 3000
	if testing.Short() {
		n = 300
	}
	accepted, dups := 0, 0
	for seed := range n {
		r := rand.New(rand.NewPCG(uint64(seed), 10))
		g := &gen{r: r, bad: seed%4 == 3, dups: seed%5 == 4}
		data := g.event()
		if agree(t, fmt.Sprintf("seed %d", seed), data) {
			dups++
		} else if _, err := sqsparse.Parse(data); err == nil {
			accepted++
		}
	}
	t.Logf("of %d random events, %d valid, %d with a member twice", n, accepted, dups)
	// Every branch must be exercised: events both accept, events both refuse, and events with
	// a member twice, which only Parse refuses.
	if accepted < n/2 || accepted+dups == n || dups < n/20 {
		t.Errorf("of %d random events, %d valid, %d with a member twice", n, accepted, dups)
	}
}

// Large random events, whose strings Parse makes in several chunks, agree too; so do those
// with Records or a member given twice now and then, which Parse refuses.
func TestLargeRandomEventsAgree(t *testing.T) {
	dups := 0
	for seed := range 40 {
		g := &gen{r: rand.New(rand.NewPCG(uint64(seed), 11)), many: 400, dups: seed%4 == 0}
		if agree(t, fmt.Sprintf("large event, seed %d", seed), g.event()) {
			dups++
		}
	}
	if dups == 0 {
		t.Error("no large event with a member given twice")
	}
}

// gen writes random SQS event payloads, mostly valid; with bad set, now and then a value of
// the wrong type or invalid base64; with dups set, now and then Records, a member or a name
// given twice.
type gen struct {
	r    *rand.Rand
	bad  bool
	dups bool
	many int // messages per Records array, when not 0
	b    bytes.Buffer
}

func (g *gen) event() []byte {
	g.b.Reset()
	g.ws()
	switch g.r.IntN(40) {
	case 0:
		g.b.WriteString("null")
		g.ws()
		return bytes.Clone(g.b.Bytes())
	case 1:
		g.b.WriteString("[]")
		return bytes.Clone(g.b.Bytes())
	}
	records := false
	g.object(func() int { return 1 + g.r.IntN(3) }, func(i int) {
		switch {
		case !records || g.dups && g.r.IntN(3) == 0:
			records = g.name("Records")
			g.records()
		default:
			g.unknownMember()
		}
	})
	g.ws()
	return bytes.Clone(g.b.Bytes())
}

func (g *gen) records() {
	switch g.r.IntN(20) {
	case 0:
		g.b.WriteString("null")
		return
	case 1:
		if g.bad {
			g.b.WriteString(`{"messageId":"x"}`)
			return
		}
	}
	n := g.r.IntN(4)
	if g.many > 0 {
		n = g.many/2 + g.r.IntN(g.many)
	}
	g.array(n, func(int) {
		if g.r.IntN(25) == 0 {
			g.b.WriteString("null")
			return
		}
		g.message()
	})
}

var messageMembers = []string{"messageId", "receiptHandle", "body", "md5OfBody", "md5OfMessageAttributes",
	"eventSourceARN", "eventSource", "awsRegion", "attributes", "messageAttributes"}

func (g *gen) message() {
	members := g.r.Perm(len(messageMembers))
	members = members[:len(members)-g.r.IntN(4)]
	// Now and then a member twice, or an unknown one.
	if g.dups && g.r.IntN(5) == 0 {
		members = append(members, members[g.r.IntN(len(members))])
	}
	if g.r.IntN(4) == 0 {
		members = append(members, -1)
	}
	g.r.Shuffle(len(members), func(i, j int) { members[i], members[j] = members[j], members[i] })
	g.object(func() int { return len(members) }, func(i int) {
		m := members[i]
		if m < 0 {
			g.unknownMember()
			return
		}
		name := messageMembers[m]
		g.name(name)
		switch name {
		case "attributes":
			g.attributes()
		case "messageAttributes":
			g.messageAttributes()
		default:
			g.stringOrNull()
		}
	})
}

var systemAttributes = []string{"ApproximateReceiveCount", "SentTimestamp", "SenderId", "ApproximateFirstReceiveTimestamp",
	"MessageGroupId", "SequenceNumber", "MessageDeduplicationId", "AWSTraceHeader", "DeadLetterQueueSourceArn", "sentTimestamp"}

func (g *gen) attributes() {
	if g.r.IntN(10) == 0 {
		g.b.WriteString("null")
		return
	}
	if g.bad && g.r.IntN(10) == 0 {
		g.b.WriteString(`["SentTimestamp"]`)
		return
	}
	names := g.r.Perm(len(systemAttributes))
	g.object(func() int { return g.r.IntN(6) }, func(i int) {
		k := names[i]
		if g.dups && i > 0 && g.r.IntN(4) == 0 {
			k = names[0]
		}
		g.str(systemAttributes[k])
		g.colon()
		g.stringOrNull()
	})
}

func (g *gen) messageAttributes() {
	if g.r.IntN(10) == 0 {
		g.b.WriteString("null")
		return
	}
	seen := map[string]bool{}
	g.object(func() int { return g.r.IntN(4) }, func(int) {
		name := g.text()
		for !g.dups && seen[name] {
			name += "a"
		}
		seen[name] = true
		g.str(name)
		g.colon()
		if g.r.IntN(10) == 0 {
			g.b.WriteString("null")
			return
		}
		g.attribute()
	})
}

var attributeMembers = []string{"stringValue", "binaryValue", "stringListValues", "binaryListValues", "dataType"}

func (g *gen) attribute() {
	members := g.r.Perm(len(attributeMembers))[:1+g.r.IntN(len(attributeMembers))]
	if g.dups && g.r.IntN(5) == 0 {
		members = append(members, members[0])
	}
	if g.r.IntN(5) == 0 {
		members = append(members, -1)
	}
	g.object(func() int { return len(members) }, func(i int) {
		if members[i] < 0 {
			g.unknownMember()
			return
		}
		name := attributeMembers[members[i]]
		g.name(name)
		switch name {
		case "stringValue", "dataType":
			g.stringOrNull()
		case "binaryValue":
			g.binary()
		case "stringListValues":
			g.list(g.stringOrNull)
		case "binaryListValues":
			g.list(g.binary)
		}
	})
}

func (g *gen) list(elem func()) {
	if g.r.IntN(8) == 0 {
		g.b.WriteString("null")
		return
	}
	g.array(g.r.IntN(4), func(int) { elem() })
}

func (g *gen) binary() {
	switch g.r.IntN(12) {
	case 0:
		g.b.WriteString("null")
	case 1, 2: // bytes as numbers, as encoding/json also reads them
		g.array(g.r.IntN(4), func(int) {
			switch g.r.IntN(8) {
			case 0:
				g.b.WriteString("null")
			case 1:
				if g.bad {
					g.b.WriteString([]string{"256", "-1", "1.5", `"1"`, "1e2"}[g.r.IntN(5)])
					return
				}
				fallthrough
			default:
				fmt.Fprint(&g.b, g.r.IntN(256))
			}
		})
	case 3:
		if g.bad {
			g.str([]string{"base64Str", "QQ", "QQ=", "Q===", "QUJD\x00"}[g.r.IntN(5)])
			return
		}
		fallthrough
	default:
		b := make([]byte, g.r.IntN(12))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		s := base64.StdEncoding.EncodeToString(b)
		if len(s) > 4 && g.r.IntN(6) == 0 {
			s = s[:4] + `\n` + s[4:] // encoding/json's base64 skips line breaks
		}
		g.rawString(s)
	}
}

// stringOrNull writes a string, or now and then null or (when bad) a value of another type.
func (g *gen) stringOrNull() {
	switch g.r.IntN(12) {
	case 0:
		g.b.WriteString("null")
	case 1:
		if g.bad {
			g.b.WriteString([]string{"42", "true", "{}", "[]", `["x"]`, "-0.5e3"}[g.r.IntN(6)])
			return
		}
		fallthrough
	default:
		g.str(g.text())
	}
}

// text returns a random string: plain, or with JSON-worthy characters, non-ASCII, invalid
// UTF-8 and surrogates (written as escapes or raw by str).
func (g *gen) text() string {
	if g.r.IntN(20) == 0 {
		return strings.Repeat("long body ", 50+g.r.IntN(200))
	}
	pieces := []string{"", "a", "orders", "1768471200000", `{"orderId":1}`, "é", "日本", "😀", "\x00", "\n", "\t",
		"\"", "\\", "/", "\x7f", "\u2028", "\ufeff", "\xff", "\xc3", "<&>", "ſ", "K", " ", "AQEB+/="}
	var b strings.Builder
	for range g.r.IntN(6) {
		b.WriteString(pieces[g.r.IntN(len(pieces))])
	}
	return b.String()
}

// str writes s as a JSON string, escaping in one of several ways; invalid UTF-8 stays raw.
func (g *gen) str(s string) {
	g.b.WriteByte('"')
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			g.b.WriteByte(s[i]) // raw invalid byte: encoding/json makes it U+FFFD
		case r == '"' || r == '\\':
			g.b.WriteByte('\\')
			g.b.WriteRune(r)
		case r < 0x20:
			fmt.Fprintf(&g.b, `\u%04x`, r)
		case g.r.IntN(6) == 0 && r < 0x10000:
			fmt.Fprintf(&g.b, `\u%04X`, r)
		case g.r.IntN(6) == 0 && r >= 0x10000:
			r1, r2 := surrogates(r)
			fmt.Fprintf(&g.b, `\u%04x\u%04x`, r1, r2)
		case r == '/' && g.r.IntN(2) == 0:
			g.b.WriteString(`\/`)
		default:
			g.b.WriteString(s[i : i+size])
		}
		i += size
	}
	if g.r.IntN(30) == 0 {
		g.b.WriteString([]string{`\ud800`, `\udc00x`, `\ud83d\ud83d\ude00`, `\b\f\r`}[g.r.IntN(4)])
	}
	g.b.WriteByte('"')
}

func surrogates(r rune) (rune, rune) {
	r -= 0x10000
	return 0xd800 + r>>10, 0xdc00 + r&0x3ff
}

// rawString writes s between quotes as it is (s is valid JSON string content).
func (g *gen) rawString(s string) {
	g.b.WriteByte('"')
	g.b.WriteString(s)
	g.b.WriteByte('"')
}

// name writes a member name and its colon: as it is, or in another case, with a character
// escaped, or with ſ for s, all of which encoding/json matches, or now and then another name.
// It reports whether the name matches s.
func (g *gen) name(s string) bool {
	switch g.r.IntN(16) {
	case 0:
		s = strings.ToUpper(s)
	case 1:
		s = strings.ToLower(s)
	case 2:
		s = strings.Replace(s, "s", "ſ", 1)
	case 3:
		if s != "" {
			g.rawString(fmt.Sprintf(`\u%04x`, s[0]) + s[1:])
			g.colon()
			return true
		}
	case 4:
		g.str(s + "x") // not the member
		g.colon()
		return false
	}
	g.str(s)
	g.colon()
	return true
}

func (g *gen) colon() {
	g.ws()
	g.b.WriteByte(':')
	g.ws()
}

// unknownMember writes a member no decoder knows, with any JSON value, nested a little.
func (g *gen) unknownMember() {
	g.str([]string{"eventVersion", "x", "", "messageID2", "kafka"}[g.r.IntN(5)])
	g.colon()
	g.anyValue(0)
}

func (g *gen) anyValue(depth int) {
	k := g.r.IntN(8)
	if depth > 3 {
		k %= 5
	}
	switch k {
	case 0:
		g.b.WriteString("null")
	case 1:
		g.b.WriteString([]string{"true", "false"}[g.r.IntN(2)])
	case 2:
		g.b.WriteString([]string{"0", "-1", "3.25", "1e-7", "-0.0E+2", "12345678901234567890"}[g.r.IntN(6)])
	case 3, 4:
		g.str(g.text())
	case 5, 6:
		g.array(g.r.IntN(3), func(int) { g.anyValue(depth + 1) })
	default:
		g.object(func() int { return g.r.IntN(3) }, func(int) {
			g.str(g.text())
			g.colon()
			g.anyValue(depth + 1)
		})
	}
}

func (g *gen) object(count func() int, member func(i int)) {
	g.b.WriteByte('{')
	g.ws()
	n := count()
	for i := range n {
		if i > 0 {
			g.ws()
			g.b.WriteByte(',')
			g.ws()
		}
		member(i)
	}
	g.ws()
	g.b.WriteByte('}')
}

func (g *gen) array(n int, elem func(i int)) {
	g.b.WriteByte('[')
	g.ws()
	for i := range n {
		if i > 0 {
			g.ws()
			g.b.WriteByte(',')
			g.ws()
		}
		elem(i)
	}
	g.ws()
	g.b.WriteByte(']')
}

// ws writes JSON whitespace, usually none.
func (g *gen) ws() {
	if g.r.IntN(8) == 0 {
		g.b.WriteString([]string{" ", "\n", "\t", "\r\n  "}[g.r.IntN(4)])
	}
}

// edgeCases are hand-picked payloads where encoding/json's rules are easy to get wrong; the
// fuzz target starts from them too.
var edgeCases = map[string]string{
	"top null":            `null`,
	"top null with space": " \n null \t",
	"empty object":        `{}`,
	"Records null":        `{"Records":null}`,
	"Records empty":       `{"Records":[]}`,
	// Members given twice, which encoding/json reads as the last one: Parse refuses them.
	"Records twice":                   `{"Records":[{"messageId":"a","body":"x"},{"messageId":"b"}],"Records":[{"messageId":"c"}]}`,
	"Records three times":             `{"Records":[{"messageId":"a"},{"messageId":"b"},{"body":"c"}],"Records":[{}],"Records":[{},null,{"awsRegion":"r"}]}`,
	"Records then empty":              `{"Records":[{"messageId":"a"}],"Records":[]}`,
	"Records then null":               `{"Records":[{"messageId":"a"}],"Records":null}`,
	"Records null then array":         `{"Records":null,"Records":[{"messageId":"a"}]}`,
	"Records and records":             `{"Records":[],"records":[{"messageId":"a"}]}`,
	"Records, escaped":                `{"Records":[],"\u0052ecords":[]}`,
	"body and Body":                   `{"Records":[{"body":"x","Body":"y"}]}`,
	"messageId twice":                 `{"Records":[{"messageId":"a","receiptHandle":"h","messageId":"b"}]}`,
	"messageId folded":                `{"Records":[{"messageId":"a","meſſageId":"b"}]}`,
	"second message":                  `{"Records":[{"body":"x"},{"md5OfBody":"a","md5OfBody":"a"}]}`,
	"each member twice":               `{"Records":[{"receiptHandle":"a","md5OfMessageAttributes":"b","eventSourceARN":"c","eventSource":"d","awsRegion":"e","AWSREGION":"f"}]}`,
	"attributes twice":                `{"Records":[{"attributes":{"a":"1"},"attributes":{"b":"2"}}]}`,
	"attributes null then object":     `{"Records":[{"attributes":null,"attributes":{"b":"2"}}]}`,
	"messageAttributes twice":         `{"Records":[{"messageAttributes":{},"messageAttributes":{"m":{"dataType":"String"}}}]}`,
	"attribute member twice":          `{"Records":[{"messageAttributes":{"m":{"dataType":"String","DataType":"Number"}}}]}`,
	"list member twice":               `{"Records":[{"messageAttributes":{"m":{"binaryListValues":[],"binaryListValues":null}}}]}`,
	"many attribute names, one twice": `{"Records":[{"attributes":{` + manyNames(40, "n0") + `}}]}`,
	"many attribute names":            `{"Records":[{"attributes":{` + manyNames(3000, "") + `},"messageAttributes":{"m":{"stringValue":"a"}}}]}`,
	"deep, then body twice":           `{"Records":[{"x":` + strings.Repeat("[", 9990) + strings.Repeat("]", 9990) + `,"body":"a","body":"b"}]}`,
	"messages, one body twice":        `{"Records":[` + strings.Repeat(`{"body":"a","messageId":"m"},`, 2000) + `{"body":"a","body":"b"}]}`,
	"unknown members twice":           `{"x":1,"Records":[{"x":1,"x":2,"messageAttributes":{"m":{"y":[],"y":{}}}}],"x":3}`,
	"message null":                    `{"Records":[null,{"messageId":"a"},null]}`,
	"lower-case records":              `{"records":[{"MESSAGEID":"a","Body":"b","eventsourcearn":"arn","EventSource":"s"}]}`,
	"long s folds to s":               `{"Recordſ":[{"meſſageId":"a","attributeſ":{"k":"v"}}]}`,
	"Kelvin sign is not k":            `{"Records":[{"\u212aey":"x"}]}`,
	"escaped member name":             `{"\u0052ecords":[{"b\u006fdy":"x","messageAttributes":{"a":{"d\u0061taType":"String"}}}]}`,
	"string null keeps value":         `{"Records":[{"body":"x","body":null}]}`,
	"member three times":              `{"Records":[{"body":"x","body":"y","body":null}]}`,
	"attributes then null":            `{"Records":[{"attributes":{"a":"1","b":"2"},"attributes":null}]}`,
	"attributes empty":                `{"Records":[{"attributes":{},"messageAttributes":{}}]}`,
	"attribute value null":            `{"Records":[{"attributes":{"a":null},"messageAttributes":{"m":null}}]}`,
	"key twice in attributes":         `{"Records":[{"attributes":{"a":"1","a":"2","a":null}}]}`,
	"message attribute replaced":      `{"Records":[{"messageAttributes":{"m":{"stringValue":"a"},"m":{"dataType":"String"}}}]}`,
	"stringValue null":                `{"Records":[{"messageAttributes":{"m":{"stringValue":"a","stringValue":null}}}]}`,
	"stringValue empty":               `{"Records":[{"messageAttributes":{"m":{"stringValue":""}}}]}`,
	"lists empty and null":            `{"Records":[{"messageAttributes":{"m":{"stringListValues":[],"binaryListValues":null},"n":{"stringListValues":null,"binaryListValues":[]}}}]}`,
	"list nulls":                      `{"Records":[{"messageAttributes":{"m":{"stringListValues":["a",null,"b"],"binaryListValues":["QQ==",null,[1,2]]}}}]}`,
	"list twice, revived":             `{"Records":[{"messageAttributes":{"m":{"stringListValues":["a","b","c"],"stringListValues":["x"],"stringListValues":["y",null,null]}}}]}`,
	"binary empty":                    `{"Records":[{"messageAttributes":{"m":{"binaryValue":""}}}]}`,
	"binary as numbers":               `{"Records":[{"messageAttributes":{"m":{"binaryValue":[0,255,null,7]}}}]}`,
	"binary numbers over base64":      `{"Records":[{"messageAttributes":{"m":{"binaryValue":"AAECAwQF","binaryValue":[9,null,null]}}}]}`,
	"binary numbers empty":            `{"Records":[{"messageAttributes":{"m":{"binaryValue":[]}}}]}`,
	"base64 with line breaks":         `{"Records":[{"messageAttributes":{"m":{"binaryValue":"QUJD\r\nREVG"}}}]}`,
	"base64 unpadded":                 `{"Records":[{"messageAttributes":{"m":{"binaryValue":"QUI"}}}]}`,
	"base64 bad":                      `{"Records":[{"messageAttributes":{"m":{"binaryValue":"base64Str"}}}]}`,
	"base64 url alphabet":             `{"Records":[{"messageAttributes":{"m":{"binaryValue":"-_-_"}}}]}`,
	"byte 256":                        `{"Records":[{"messageAttributes":{"m":{"binaryValue":[256]}}}]}`,
	"byte -0":                         `{"Records":[{"messageAttributes":{"m":{"binaryValue":[-0]}}}]}`,
	"byte 1.0":                        `{"Records":[{"messageAttributes":{"m":{"binaryValue":[1.0]}}}]}`,
	"byte 1e0":                        `{"Records":[{"messageAttributes":{"m":{"binaryValue":[1e0]}}}]}`,
	"byte string":                     `{"Records":[{"messageAttributes":{"m":{"binaryValue":["1"]}}}]}`,
	"number body":                     `{"Records":[{"body":42}]}`,
	"object body":                     `{"Records":[{"body":{"a":1}}]}`,
	"bool region":                     `{"Records":[{"awsRegion":true}]}`,
	"array message":                   `{"Records":[["messageId"]]}`,
	"string message":                  `{"Records":["m"]}`,
	"Records object":                  `{"Records":{"0":{}}}`,
	"top array":                       `[]`,
	"top string":                      `"Records"`,
	"top number":                      `0`,
	"empty":                           ``,
	"spaces only":                     `   `,
	"trailing data":                   `{"Records":[]} {}`,
	"trailing comma":                  `{"Records":[],}`,
	"BOM":                             "\ufeff{\"Records\":[]}",
	"unterminated":                    `{"Records":[{"body":"x`,
	"control in string":               "{\"Records\":[{\"body\":\"a\tb\"}]}",
	"bad escape":                      `{"Records":[{"body":"a\qb"}]}`,
	"bad unicode escape":              `{"Records":[{"body":"\u12G4"}]}`,
	"escapes":                         `{"Records":[{"body":"\"\\\/\b\f\n\r\t\u0000\u00e9\u2028\ud83d\ude00"}]}`,
	"lone surrogates":                 `{"Records":[{"body":"\ud800 \udc00 \ud800\u0041 \ud83d\ud83d\ude00 \ud800"}]}`,
	"invalid UTF-8":                   "{\"Records\":[{\"body\":\"a\xffb\xc3\",\"attributes\":{\"k\xff\":\"v\xe2\x82\"}}]}",
	"invalid UTF-8 with escape":       "{\"Records\":[{\"body\":\"\\n\xff\\u00e9\"}]}",
	"non-ASCII":                       `{"Records":[{"body":"café 日本 😀","messageId":"ünïcode"}]}`,
	"unknown members":                 `{"eventVersion":1,"Records":[{"x":{"y":[1,{"z":null}]},"body":"b","messageAttributes":{"m":{"x":[],"dataType":"String"}}}],"z":"q"}`,
	"unknown deep":                    `{"Records":[{"x":` + strings.Repeat("[", 500) + strings.Repeat("]", 500) + `}]}`,
	"whitespace":                      " {\n\t\"Records\" :\r\n [ { \"body\" : \"x\" , \"attributes\" : { \"a\" : \"b\" } } ] } ",
	"number key message":              `{"Records":[{"1":"x"}]}`,
	"leading zero":                    `{"Records":[{"x":01}]}`,
	"nul literal":                     `{"Records":[{"body":nul}]}`,
	"NaN":                             `{"Records":[{"x":NaN}]}`,
	"single quotes":                   `{'Records':[]}`,
	"missing colon":                   `{"Records" []}`,
	"missing comma":                   `{"Records":[{"body":"x" "messageId":"y"}]}`,
}

// manyNames returns n members "n0":"v", "n1":"v"... of an object, and one more named last
// when last is not "".
func manyNames(n int, last string) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `"n%d":"v",`, i)
	}
	if last != "" {
		fmt.Fprintf(&b, `%q:"w",`, last)
	}
	return strings.TrimSuffix(b.String(), ",")
}

// Hand-picked cases where encoding/json's rules are easy to get wrong.
func TestEdgeCasesAgree(t *testing.T) {
	cases := edgeCases
	names := make([]string, 0, len(cases))
	for name := range cases {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		agree(t, name, []byte(cases[name]))
	}
}

// Nesting: encoding/json accepts 10,000 levels and refuses 10,001; so does Parse, counting the
// levels of the event around an unknown member.
func TestDepthLimitAgrees(t *testing.T) {
	for _, n := range []int{9996, 9997, 9998, 10000} {
		// The unknown member's value sits at depth 3 (object, Records, message).
		data := `{"Records":[{"x":` + strings.Repeat("[", n) + strings.Repeat("]", n) + `}]}`
		agree(t, fmt.Sprintf("%d arrays in a message", n), []byte(data))
	}
	for _, n := range []int{9999, 10000} {
		data := `{"x":` + strings.Repeat(`{"a":`, n) + "1" + strings.Repeat("}", n) + `}`
		agree(t, fmt.Sprintf("%d objects at the top", n), []byte(data))
	}
}
