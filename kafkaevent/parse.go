package kafkaevent

import (
	"bytes"
	"math"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/jsonscan"
)

// Parse decodes the payload Lambda sends to a function behind a Kafka event source mapping,
// from Amazon MSK or from self-managed Kafka.
//
// It reads the payload in a single pass and decodes every key and value into one buffer, so
// the cost is a small number of allocations per event rather than several per record.
// Partitions come out sorted by topic, then number; records keep their delivered order.
//
// A malformed envelope (invalid JSON, an unknown eventSource, a member of the envelope given
// twice, a record whose offset is missing or given twice, or whose topic or partition is
// missing where its records key does not name them, or given twice) makes Parse fail with an
// *Error that names the JSON path. A record whose own fields are malformed (bad base64, a
// header byte out of range, a value given twice) does not: Parse returns the event and sets
// that record's Err, so one bad record can be reported as a batch item failure without losing
// the rest. The package doc lists which members may not repeat.
//
// Each key of the records object gives one [Partition], whose ID is that key; each record keeps
// its own topic and partition, and takes the key's only where it names none (see [Partition]).
//
// Parse does not keep data: the event owns copies of everything it holds.
func Parse(data []byte) (*Event, error) {
	return parse(data, false, false)
}

func parse(data []byte, noFast, noSIMD bool) (*Event, error) {
	p := parser{Reader: jsonscan.Reader{Data: data}, noFast: noFast, noSIMD: noSIMD}
	p.Failer = &p
	// The arena starts small; presize sizes it for the whole batch from the first record.
	p.arena = make([]byte, 0, min(arenaBound(len(data)), 16<<10))
	ev, err := p.event()
	if err != nil {
		return nil, err
	}
	return ev, nil
}

type parser struct {
	jsonscan.Reader

	arena   []byte
	records []Record
	headers []Header
	schemas []SchemaMetadata
	// lastSchema holds the strings of the schema metadata schemaFast read last.
	lastSchema SchemaMetadata
	strs       map[string]string
	hbuf       []byte
	hcache     [4]struct {
		name       string
		raw, value []byte
	}

	// Where the parser is, for error paths.
	partKey  string
	inPart   bool // whether partKey is set: "" is a records key too
	recIndex int
	field    string
	sub      string // a member of field: "dataFormat" in keySchemaMetadata.dataFormat
	unknown  []byte // the name of an unknown member being skipped, when field is ""

	noFast     bool   // tests only: read every record on the general path
	noSIMD     bool   // tests only: decode base64 without the vector stage
	recErr     error  // first error of the current record
	seen       uint16 // the members of the current record read so far: bit 1<<fieldKind
	keyOK      bool   // whether the current records key is "topic-N"
	topicSeen  bool   // whether the current record names its topic (not "")
	topicPlain bool   // whether the current key's topic needs no escapes in JSON
	firstRec   int    // where the first record starts
}

var utf8BOM = []byte{0xEF, 0xBB, 0xBF}

func (p *parser) event() (*Event, error) {
	p.recIndex = -1
	if bytes.HasPrefix(p.Data, utf8BOM) {
		return nil, p.errAt(0, "the payload starts with a UTF-8 byte order mark (EF BB BF), which JSON does not allow; remove it")
	}
	p.SkipWS()
	if p.Pos >= len(p.Data) || p.Data[p.Pos] != '{' {
		if p.Pos >= len(p.Data) {
			return nil, p.errAt(p.Pos, "want a JSON object, got nothing")
		}
		return nil, p.errAt(p.Pos, "want a JSON object, got %s", p.Got(p.Pos))
	}
	ev := &Event{}
	var (
		source     string
		sourceSeen bool
		sourceOff  int
		recordsOK  bool
		parts      []Partition
		seen       uint8 // the envelope members read so far, one bit each
	)
	err := p.Object(1, func(n jsonscan.Name) error {
		name := p.NameBytes(n)
		off := p.Pos
		var bit uint8
		switch string(name) {
		case "eventSource":
			bit = 1 << 0
		case "eventSourceArn":
			bit = 1 << 1
		case "bootstrapServers":
			bit = 1 << 2
		case "records":
			bit = 1 << 3
		}
		if seen&bit != 0 {
			// encoding/json would keep the last one; a second records object would drop
			// the first one's records. Neither is a choice Parse can make for the caller.
			p.field = string(name)
			return p.errAt(off, "member appears twice in the event")
		}
		seen |= bit
		switch string(name) {
		case "eventSource":
			p.field = "eventSource"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok {
				return p.errAt(off, "want string, got %s", p.Got(off))
			}
			source, sourceSeen, sourceOff = s, true, off
		case "eventSourceArn":
			p.field = "eventSourceArn"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok && p.Data[off] != 'n' {
				return p.errAt(off, "want string, got %s", p.Got(off))
			}
			ev.SourceARN = s
		case "bootstrapServers":
			p.field = "bootstrapServers"
			s, ok, err := p.stringOrNull()
			if err != nil {
				return err
			}
			if !ok && p.Data[off] != 'n' {
				return p.errAt(off, "want comma-separated string, got %s", p.Got(off))
			}
			ev.BootstrapServers = splitServers(s)
		case "records":
			p.field = "records"
			if p.Pos >= len(p.Data) || p.Data[p.Pos] != '{' {
				return p.errAt(off, "want object keyed \"topic-partition\", got %s", p.Got(off))
			}
			ps, err := p.partitions()
			if err != nil {
				return err
			}
			parts, recordsOK = ps, true
		default:
			p.field = topMember(string(name))
			if err := p.SkipValue(1); err != nil {
				return err
			}
		}
		p.field = ""
		return nil
	})
	if err != nil {
		return nil, err
	}
	p.SkipWS()
	if p.Pos != len(p.Data) {
		p.field = ""
		return nil, p.errAt(p.Pos, "unexpected data after the event object: %s", p.Got(p.Pos))
	}
	switch {
	case !sourceSeen:
		p.field = "eventSource"
		return nil, p.errAt(0, "missing (want %q or %q)", SourceMSK, SourceSelfManaged)
	case source == string(SourceMSK):
		ev.Source = SourceMSK
	case source == string(SourceSelfManaged), source == sourceSelfManagedOld:
		ev.Source = SourceSelfManaged
	default:
		p.field = "eventSource"
		return nil, p.errAt(sourceOff, "unknown event source %s (want %q or %q)", strconv.Quote(source), SourceMSK, SourceSelfManaged)
	}
	if !recordsOK {
		p.field = "records"
		return nil, p.errAt(0, "missing")
	}
	ev.Partitions = parts
	return ev, nil
}

func splitServers(s string) []string {
	if strings.TrimSpace(s) == "" {
		return nil
	}
	out := strings.Split(s, ",")
	n := 0
	for _, v := range out {
		if v = strings.TrimSpace(v); v != "" {
			out[n] = v
			n++
		}
	}
	if n == 0 {
		return nil
	}
	return out[:n]
}

// partitions reads the records object: one Partition per key, in the order of the keys, then
// sorted.
func (p *parser) partitions() ([]Partition, error) {
	var parts []Partition
	err := p.Object(2, func(n jsonscan.Name) error {
		key := string(p.NameBytes(n))
		p.partKey, p.inPart = key, true
		p.recIndex = -1
		p.field = ""
		// The key gives the topic and partition of records that do not name their own; a
		// record's own fields, when present, win.
		topic, num, ok := splitPartitionKey(key)
		part := Partition{Topic: topic, Number: num, key: key}
		p.keyOK = ok
		p.topicPlain = ok && jsonscan.PlainJSON(topic)
		off := p.Pos
		if p.Pos >= len(p.Data) || p.Data[p.Pos] != '[' {
			return p.errAt(off, "want array of records, got %s", p.Got(off))
		}
		start := len(p.records)
		err := p.Array(3, func(idx int) error {
			p.recIndex = idx
			p.field = ""
			return p.record(&part)
		})
		if err != nil {
			return err
		}
		end := len(p.records)
		part.Records = p.records[start:end:end]
		if end == start {
			part.Records = nil
			if !ok {
				part.Topic, part.Number = key, -1
			}
		} else {
			part.Topic, part.Number = part.Records[0].Topic, part.Records[0].Partition
		}
		part.keyed = !isPartitionID(key, part.Topic, part.Number)
		parts = append(parts, part)
		p.partKey, p.inPart = "", false
		p.recIndex = -1
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(parts) > 1 {
		if k, dup := duplicateKey(parts); dup {
			p.partKey, p.inPart, p.recIndex, p.field = k, true, -1, ""
			return nil, p.errAt(0, "key appears twice in records")
		}
		sortPartitions(parts)
	}
	for i := range parts {
		if !parts[i].keyed {
			parts[i].key = "" // ID makes it again: an event from Parse equals one built in code
		}
	}
	return parts, nil
}

// duplicateKey returns a records key that two partitions share, if any. ps hold their keys.
func duplicateKey(ps []Partition) (string, bool) {
	if len(ps) <= 32 {
		for i := 1; i < len(ps); i++ {
			for j := range i {
				if ps[i].key == ps[j].key {
					return ps[i].key, true
				}
			}
		}
		return "", false
	}
	seen := make(map[string]struct{}, len(ps))
	for i := range ps {
		if _, ok := seen[ps[i].key]; ok {
			return ps[i].key, true
		}
		seen[ps[i].key] = struct{}{}
	}
	return "", false
}

// splitPartitionKey splits a records key "topic-N" at its last dash, with N a decimal
// partition number 0..2147483647 (leading zeros allowed, as in "mytopic-01"). It reports false
// for a key of another form.
func splitPartitionKey(key string) (string, int32, bool) {
	dash := strings.LastIndexByte(key, '-')
	if dash <= 0 || dash == len(key)-1 {
		return "", 0, false
	}
	digits := strings.TrimLeft(key[dash+1:], "0")
	if digits == "" {
		digits = "0"
	}
	n, ok := parseUint(digits, math.MaxInt32)
	if !ok {
		return "", 0, false
	}
	return key[:dash], int32(n), true
}

// isPartitionID reports whether key is "topic-N" for this topic and number, N canonical.
func isPartitionID(key, topic string, n int32) bool {
	if len(key) <= len(topic)+1 || key[:len(topic)] != topic || key[len(topic)] != '-' {
		return false
	}
	var buf [12]byte
	return key[len(topic)+1:] == string(strconv.AppendInt(buf[:0], int64(n), 10))
}

// parseUint reads a canonical decimal (no sign, no leading zeros) no greater than max.
func parseUint[S string | []byte](s S, max uint64) (uint64, bool) {
	if len(s) == 0 || len(s) > 1 && s[0] == '0' {
		return 0, false
	}
	var n uint64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		d := uint64(c - '0')
		if n > (max-d)/10 {
			return 0, false
		}
		n = n*10 + d
	}
	return n, true
}

// UnmarshalJSON implements json.Unmarshaler with Parse, so that an Event can be a handler's
// input type: lambda.Start(func(ctx context.Context, ev *kafkaevent.Event) error {...}).
// encoding/json checks the whole payload before it calls UnmarshalJSON, which costs more than
// Parse itself on a large batch; a lambda.Handler whose Invoke passes the payload bytes to Parse
// avoids that.
func (e *Event) UnmarshalJSON(data []byte) error {
	ev, err := Parse(data)
	if err != nil {
		return err
	}
	*e = *ev
	return nil
}
