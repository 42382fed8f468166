package stackrun

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"strconv"
	"strings"

	kltinput "github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/twmb/franz-go/pkg/kgo"
)

// A phase's records come from the user, never from klt: a file of records in klt event
// build's JSON Lines (--records, --repeat), or a generator, a template of a record's value with
// placeholders (--generate, --keys). Either way each record of a phase has a sequence number,
// 1 for its first, which fault selectors (seq=N) and the {{seq}} placeholder name.

// Input is where the records of a load come from: exactly one of Records and Generate.
type Input struct {
	// Records is a file of records in klt event build's JSON Lines ("-" is not allowed: the
	// file is read once, before the stack starts).
	Records string
	// Repeat is how many times a phase may go through the file's records: 1 (the default)
	// takes each once, N takes them N times over, 0 cycles through them as long as the load
	// asks.
	Repeat int
	// Generate is a record value with the placeholders {{seq}} (the record's number in its
	// phase) and {{key}} (its key, one of Keys keys: key-0, key-1...).
	Generate string
	// Keys is how many record keys Generate draws from, in turn.
	Keys int
	// Headers are the headers of each generated record, in order: a name and a value
	// template with Generate's placeholders (--header NAME=TEMPLATE).
	Headers HeaderFlag
}

// maxGeneratedHeaders bounds --header: Kafka has no cap, but a record's headers travel in
// every delivery of it.
const maxGeneratedHeaders = 16

// HeaderFlag is the repeatable flag --header NAME=TEMPLATE: a header of every generated record.
type HeaderFlag struct{ Headers *[][2]string }

func (f HeaderFlag) String() string {
	if f.Headers == nil {
		return ""
	}
	var parts []string
	for _, h := range *f.Headers {
		parts = append(parts, h[0]+"="+h[1])
	}
	return strings.Join(parts, " ")
}

func (f HeaderFlag) Set(s string) error {
	name, tpl, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=TEMPLATE, got %q", s)
	}
	if len(*f.Headers) == maxGeneratedHeaders {
		return fmt.Errorf("at most %d headers", maxGeneratedHeaders)
	}
	if err := checkPlaceholders("--header "+name, tpl); err != nil {
		return err
	}
	*f.Headers = append(*f.Headers, [2]string{name, tpl})
	return nil
}

// inputRecord is one record a phase produces, before Kafka gives it an offset.
type inputRecord struct {
	Seq          int // 1 for the phase's first
	Key          []byte
	Value        []byte
	Headers      []kgo.RecordHeader
	Partition    int32
	HasPartition bool
	Line         int // the line of --records it came from; 0 for a generated record
}

// recordSource makes the records of a phase.
type recordSource interface {
	// records returns a phase's n records, numbered from 1.
	records(n int) ([]inputRecord, error)
	// count is how many records a phase has when --load does not say: every record of the
	// file, Repeat times (0 when the source has no end, and --load must say).
	count() int
	// describe says what the records are, for the report's scenario.
	describe() string
}

// maxInputRecords bounds what one phase produces, the file's records repeated included: past
// it, klt local would hold more records than a laptop's memory comfortably keeps.
const maxInputRecords = 1_000_000

// newRecordSource returns the source in reads the records from.
func newRecordSource(ctx context.Context, in Input) (recordSource, error) {
	switch {
	case in.Records != "" && in.Generate != "":
		return nil, errors.New("--records and --generate: give one of them")
	case in.Records != "":
		return readRecordFile(ctx, in.Records, in.Repeat)
	case in.Generate != "":
		g, err := newGenerator(in.Generate, in.Keys)
		if err == nil && in.Headers.Headers != nil {
			g.headers = *in.Headers.Headers
		}
		return g, err
	}
	return nil, nil
}

// fileSource is the records of a file, repeated.
type fileSource struct {
	name   string
	lines  []jsonl.Record
	repeat int
}

// readRecordFile reads the JSON Lines of name, checked whole before anything runs: a bad line
// is reported as FILE:LINE, as klt produce reports it.
func readRecordFile(ctx context.Context, name string, repeat int) (*fileSource, error) {
	if repeat < 0 {
		return nil, fmt.Errorf("--repeat %d: want 0 (cycle) or more", repeat)
	}
	if name == "-" {
		return nil, errors.New("--records -: name a file (standard input is not read: the stack runs until Ctrl-C)")
	}
	data, err := kltinput.ReadFileOrStdin(name, nil, kltinput.LinesLimit)
	if err != nil {
		return nil, fmt.Errorf("--records: %w", err)
	}
	if kind := kltinput.EventKind(data); kind != "" {
		return nil, fmt.Errorf("--records %s is %s event, not records one per line; \"klt event decode %s\" prints its records", name, kltinput.WithArticle(kind), kltinput.ShellQuote(name))
	}
	lines, err := jsonl.ReadLines(ctx, name, bytes.NewReader(data), false)
	if err != nil {
		return nil, err
	}
	if len(lines) == 0 {
		return nil, fmt.Errorf("--records %s: no records", name)
	}
	for _, l := range lines {
		if l.HasPartition && l.Record.Partition < 0 {
			return nil, &jsonl.LineError{File: name, Line: l.Line, Err: fmt.Errorf("partition %d", l.Record.Partition)}
		}
	}
	return &fileSource{name: name, lines: lines, repeat: repeat}, nil
}

func (s *fileSource) count() int {
	if s.repeat == 0 {
		return 0
	}
	return min(len(s.lines)*s.repeat, maxInputRecords)
}

func (s *fileSource) describe() string {
	r := ""
	switch s.repeat {
	case 0:
		r = ", cycled"
	case 1:
	default:
		r = fmt.Sprintf(", %d times over", s.repeat)
	}
	return fmt.Sprintf("%s (%d records%s)", s.name, len(s.lines), r)
}

func (s *fileSource) records(n int) ([]inputRecord, error) {
	if n > maxInputRecords {
		return nil, fmt.Errorf("%d records in one phase: klt local produces at most %d", n, maxInputRecords)
	}
	if s.repeat > 0 && n > len(s.lines)*s.repeat {
		return nil, fmt.Errorf("--load %d: --records %s has %d records and --repeat is %d, so %d records at most (--repeat 0 cycles through them)",
			n, s.name, len(s.lines), s.repeat, len(s.lines)*s.repeat)
	}
	out := make([]inputRecord, n)
	for i := range out {
		l := s.lines[i%len(s.lines)]
		r := inputRecord{Seq: i + 1, Key: l.Record.Key, Value: l.Record.Value, Line: l.Line,
			Partition: l.Record.Partition, HasPartition: l.HasPartition}
		for _, h := range l.Record.Headers {
			r.Headers = append(r.Headers, kgo.RecordHeader{Key: h.Key, Value: h.Value})
		}
		out[i] = r
	}
	return out, nil
}

// generator makes records from a value template.
type generator struct {
	template string
	headers  [][2]string // name, value template
	keys     int
	width    int // digits of the largest key number
}

// placeholderRE finds the placeholders of a template.
var placeholderRE = regexp.MustCompile(`\{\{\s*([^{}]*?)\s*\}\}`)

// checkPlaceholders refuses a placeholder other than {{seq}} and {{key}}.
func checkPlaceholders(what, tpl string) error {
	for _, m := range placeholderRE.FindAllStringSubmatch(tpl, -1) {
		if m[1] != "seq" && m[1] != "key" {
			return fmt.Errorf("%s: unknown placeholder %s: want {{seq}} (the record's number in its phase) or {{key}} (its key)", what, m[0])
		}
	}
	return nil
}

// newGenerator checks the template: its placeholders, and, when it looks like JSON (it
// starts with { or [), that the records it makes are JSON.
func newGenerator(tpl string, keys int) (*generator, error) {
	if keys < 1 {
		return nil, fmt.Errorf("--keys %d: want at least 1", keys)
	}
	if err := checkPlaceholders("--generate", tpl); err != nil {
		return nil, err
	}
	g := &generator{template: tpl, keys: keys, width: len(strconv.Itoa(keys - 1))}
	if err := checkJSONTemplate("--generate", tpl, g.key(1)); err != nil {
		return nil, err
	}
	return g, nil
}

// checkJSONTemplate checks that a template that starts like JSON makes JSON.
func checkJSONTemplate(what, tpl, key string) error {
	t := strings.TrimSpace(tpl)
	if !strings.HasPrefix(t, "{") && !strings.HasPrefix(t, "[") {
		return nil
	}
	v := expand(tpl, 1, key)
	if !json.Valid([]byte(v)) {
		var x any
		err := json.Unmarshal([]byte(v), &x)
		return fmt.Errorf("%s: the first record would be %s, which is not JSON (%v); quote the placeholders a string holds: \"{{key}}\"", what, v, err)
	}
	return nil
}

// key returns the key of record seq: key-0, key-1, ... key-(K-1), then key-0 again, zero-padded
// to one width so that keys sort as numbers do.
func (g *generator) key(seq int) string {
	return fmt.Sprintf("key-%0*d", g.width, (seq-1)%g.keys)
}

func (g *generator) count() int { return 0 }

func (g *generator) describe() string {
	return "generated from " + g.template // the scenario states the keys
}

func (g *generator) records(n int) ([]inputRecord, error) {
	if n > maxInputRecords {
		return nil, fmt.Errorf("%d records in one phase: klt local produces at most %d", n, maxInputRecords)
	}
	out := make([]inputRecord, n)
	for i := range out {
		seq := i + 1
		k := g.key(seq)
		out[i] = inputRecord{Seq: seq, Key: []byte(k), Value: []byte(expand(g.template, seq, k))}
		for _, h := range g.headers {
			out[i].Headers = append(out[i].Headers, kgo.RecordHeader{Key: h[0], Value: []byte(expand(h[1], seq, k))})
		}
	}
	return out, nil
}

// expand replaces the placeholders of tpl.
func expand(tpl string, seq int, key string) string {
	return placeholderRE.ReplaceAllStringFunc(tpl, func(m string) string {
		switch strings.TrimSpace(m[2 : len(m)-2]) {
		case "seq":
			return strconv.Itoa(seq)
		case "key":
			return key
		}
		return m
	})
}
