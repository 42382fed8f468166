package main

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
)

// buildConfig holds the flags of "klt event build".
type buildConfig struct {
	source    string
	arn       string
	servers   string
	serversOn bool // --bootstrap-servers was given, possibly empty
	startTime string
	compact   bool
	output    string
}

// newBuildFlags returns the flag set of "klt event build", storing into c.
func newBuildFlags(c *buildConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("event build", flag.ContinueOnError)
	fs.StringVar(&c.source, "source", "msk", "event source: msk (eventSource aws:kafka) or self-managed (SelfManagedKafka)")
	fs.StringVar(&c.arn, "arn", "", "eventSourceArn of an msk event (default "+kafkaeventtest.DefaultMSKSourceARN+")")
	fs.StringVar(&c.servers, "bootstrap-servers", "", "comma-separated `host:port` list for bootstrapServers; \"\" leaves the field out\n(default: two made-up brokers of the source's kind)")
	fs.StringVar(&c.startTime, "start-time", "", "RFC 3339 `time` of the first record whose line has no timestamp; each record\nadds 1 ms (default 2026-01-15T10:00:00Z, so fixtures are the same on every run)")
	fs.BoolVar(&c.compact, "compact", false, "write the event on one line instead of indented")
	fs.StringVar(&c.output, "o", "", "write the event to `FILE` instead of stdout; nothing is written when input is bad")
	return fs
}

// runBuild runs "klt event build [flags] [FILE]".
func runBuild(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c buildConfig
	fs := newBuildFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	fs.Visit(func(f *flag.Flag) { c.serversOn = c.serversOn || f.Name == "bootstrap-servers" })
	if len(args) > 1 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	opts, err := c.builderOptions()
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}

	name, data, err := readLinesInput(args, stdin, ", which build takes back", "klt event build")
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	recs, err := readRecords(ctx, name, bytes.NewReader(data))
	if err == nil && len(recs) == 0 {
		err = fmt.Errorf("%s: no records; Lambda never sends an event without one", name)
	}
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	printWarnings(stderr, name, recs)

	ev := buildEvent(recs, opts)
	out, err := ev.MarshalJSON()
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if len(out) > base.MaxPayload {
		base.Errorf(stderr, "warning: the event is %d bytes, more than the %d bytes (6 MB) of a Lambda invocation payload",
			len(out), base.MaxPayload)
	}
	if !c.compact {
		out = indentJSON(out)
	}
	out = append(out, '\n')

	if c.output == "" {
		_, err = stdout.Write(out)
	} else {
		err = os.WriteFile(c.output, out, 0o644)
	}
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	return base.ExitOK
}

// maxWarnings is how many warnings printWarnings prints before it says how many more there are.
const maxWarnings = 10

// printWarnings prints the warnings of recs, read from the input name, as
// "klt: warning: NAME:LINE: ...", up to maxWarnings.
func printWarnings(stderr io.Writer, name string, recs []lineRecord) {
	n := 0
	for _, r := range recs {
		for _, w := range r.Warnings {
			if n < maxWarnings {
				base.Errorf(stderr, "warning: %s:%d: %s", name, r.Line, w)
			}
			n++
		}
	}
	if n > maxWarnings {
		base.Errorf(stderr, "warning: %d more warnings not shown", n-maxWarnings)
	}
}

// readLinesInput reads the input of a command that takes records one per line (the file in
// args, or stdin), and refuses a whole event, saying how to turn it into lines for next.
func readLinesInput(args []string, stdin io.Reader, takesBack, next string) (name string, data []byte, err error) {
	name = base.InputName(args)
	if data, err = base.ReadInput(args, stdin, base.LinesLimit); err != nil {
		return name, nil, err
	}
	if kind := base.EventKind(data); kind != "" {
		return name, nil, fmt.Errorf("%s is %s event, not records one per line; \"klt event decode\" prints the records of an event%s: klt event decode %s | %s",
			name, base.WithArticle(kind), takesBack, base.ShellQuote(name), next)
	}
	return name, data, nil
}

// sourceOptions checks --source and --arn and turns them into Builder options.
func sourceOptions(source, arn string) ([]kafkaeventtest.BuilderOption, error) {
	switch source {
	case "msk":
		opts := []kafkaeventtest.BuilderOption{kafkaeventtest.WithSource(kafkaevent.SourceMSK)}
		if arn != "" {
			if !strings.HasPrefix(arn, "arn:") {
				return nil, fmt.Errorf("--arn: want an ARN such as arn:aws:kafka:REGION:ACCOUNT:cluster/NAME/UUID, got %q", arn)
			}
			opts = append(opts, kafkaeventtest.WithSourceARN(arn))
		}
		return opts, nil
	case "self-managed":
		if arn != "" {
			return nil, errors.New("--arn: a self-managed Kafka event has no eventSourceArn; use --source msk")
		}
		return []kafkaeventtest.BuilderOption{kafkaeventtest.WithSource(kafkaevent.SourceSelfManaged)}, nil
	}
	return nil, fmt.Errorf("--source: want msk or self-managed, got %q", source)
}

// builderOptions checks the flags and turns them into Builder options.
func (c *buildConfig) builderOptions() ([]kafkaeventtest.BuilderOption, error) {
	opts, err := sourceOptions(c.source, c.arn)
	if err != nil {
		return nil, err
	}
	if c.serversOn {
		servers, err := base.SplitServers(c.servers)
		if err != nil {
			return nil, fmt.Errorf("--bootstrap-servers: %w", err)
		}
		opts = append(opts, kafkaeventtest.WithBootstrapServers(servers...))
	}
	if c.startTime != "" {
		t, err := parseTime(c.startTime)
		if err != nil {
			return nil, fmt.Errorf("--start-time: %w", err)
		}
		opts = append(opts, kafkaeventtest.WithStartTime(t))
	}
	return opts, nil
}

// buildEvent makes the event of recs. Every record has its offset (readRecords assigned the
// missing ones); records without a timestamp get the Builder's automatic one.
func buildEvent(recs []lineRecord, opts []kafkaeventtest.BuilderOption) *kafkaevent.Event {
	b := kafkaeventtest.NewBuilder(opts...)
	for i := range recs {
		lr := &recs[i]
		r := &lr.Record
		ro := []kafkaeventtest.RecordOption{kafkaeventtest.WithKey(r.Key), kafkaeventtest.WithOffset(r.Offset)}
		if lr.HasTimestamp {
			ro = append(ro, kafkaeventtest.WithTimestamp(r.Timestamp))
		}
		if lr.HasTimestampType {
			ro = append(ro, kafkaeventtest.WithTimestampType(r.TimestampType))
		}
		for _, h := range r.Headers {
			ro = append(ro, kafkaeventtest.WithHeader(h.Key, h.Value))
		}
		if s := r.KeySchema; s != nil {
			ro = append(ro, kafkaeventtest.WithKeySchema(s.DataFormat, s.SchemaID))
		}
		if s := r.ValueSchema; s != nil {
			ro = append(ro, kafkaeventtest.WithValueSchema(s.DataFormat, s.SchemaID))
		}
		b.Add(r.Topic, r.Partition, r.Value, ro...)
	}
	return b.Event()
}

// indentJSON returns compact JSON src indented by two spaces per level, like json.Indent,
// except that an object or array stays on one line when it holds no object or array, or when
// its compact text is at most inlineWidth bytes. A header is a one-member object holding an
// array of byte numbers; one number per line would bury the rest of the event. src must be
// valid compact JSON, as MarshalJSON writes it.
func indentJSON(src []byte) []byte {
	dst := make([]byte, 0, len(src)+len(src)/4)
	depth := 0
	newline := func() {
		dst = append(dst, '\n')
		for range depth {
			dst = append(dst, ' ', ' ')
		}
	}
	for i := 0; i < len(src); i++ {
		switch c := src[i]; c {
		case '"':
			end := stringEnd(src, i)
			dst = append(dst, src[i:end]...)
			i = end - 1
		case '{', '[':
			if end, ok := inlineEnd(src, i); ok {
				dst = append(dst, src[i:end]...)
				i = end - 1
				continue
			}
			dst = append(dst, c)
			depth++
			newline()
		case '}', ']':
			depth--
			newline()
			dst = append(dst, c)
		case ',':
			dst = append(dst, c)
			newline()
		case ':':
			dst = append(dst, ':', ' ')
		default:
			dst = append(dst, c)
		}
	}
	return dst
}

// inlineWidth is the longest compact text of an object or array holding others that
// indentJSON keeps on one line.
const inlineWidth = 80

// inlineEnd reports whether indentJSON keeps the object or array starting at src[i] on one
// line, and if so the index just past its end. It stops scanning as soon as the answer is no.
func inlineEnd(src []byte, i int) (int, bool) {
	depth, nested := 0, false
	for j := i; j < len(src); j++ {
		if nested && j-i >= inlineWidth {
			return 0, false
		}
		switch src[j] {
		case '"':
			j = stringEnd(src, j) - 1
		case '{', '[':
			depth++
			nested = nested || depth > 1
		case '}', ']':
			depth--
			if depth == 0 {
				return j + 1, true
			}
		}
	}
	return 0, false
}

// stringEnd returns the index just past the JSON string that starts at src[i], a quote.
func stringEnd(src []byte, i int) int {
	for j := i + 1; j < len(src); j++ {
		switch src[j] {
		case '\\':
			j++
		case '"':
			return j + 1
		}
	}
	return len(src)
}

// usageBuild is the help of "klt event build", before its flags.
const usageBuild = `Usage: klt event build [flags] [FILE]

Build reads Kafka records as JSON Lines from FILE, or from standard input when FILE is absent
or "-", and writes one event in the wire format of Lambda's Kafka event source mapping: the
payload a function receives, for tests and for "sam local invoke -e". Partitions are sorted by
topic, then number; the records of a partition keep their input order.

Each non-blank line is one JSON object, one record:

  {"topic":"orders","partition":0,"key":"order-1","value":{"id":1,"total":9.5}}

Fields ("topic" is required; null is the same as leaving a field out):

  topic          Kafka topic name, not empty
  partition      integer from 0 to 2147483647; default 0
  offset         integer, 0 or more; default: the previous offset of the partition + 1,
                 or 0 for its first record. Offsets should increase within a partition.
  timestamp      epoch milliseconds (-1 for none), or an RFC 3339 string such as
                 "2026-01-15T10:00:00.250Z"; default: --start-time plus 1 ms for every
                 record before this one
  timestampType  CREATE_TIME (default), LOG_APPEND_TIME or NO_TIMESTAMP_TYPE; "" for
                 none, as in events that other tools write without one
  key            the key as text; absent or null for no key, "" for an empty one
  keyBase64      the key as standard base64, for binary keys (instead of "key")
  value          the value as text, or a JSON object or array, which is written as its
                 compact JSON text; absent or null for a tombstone
  valueBase64    the value as standard base64 (instead of "value")
  headers        an array that keeps order and repeated names:
                   [{"key":"trace","value":"abc"}, {"key":"bin","valueBase64":"AP8="}]
                 or an object, for text values: {"trace":"abc","tenant":"t1"}.
                 A null value is a header with a null value.
  keySchema      {"dataFormat":"AVRO","schemaId":"1"}, the keySchemaMetadata of an event
                 source mapping with a schema registry; dataFormat is AVRO, PROTOBUF or JSON.
                 Either may be left out (registries without ids write no schemaId).
  valueSchema    the same, for valueSchemaMetadata

Input is checked strictly: a line with an unknown or repeated field, bad JSON, bad base64, an
out-of-range number, or both "key" and "keyBase64" is an error. Build reports each bad line
as "klt: FILE:LINE: what is wrong", writes no event and exits with status 1. Given a whole
event instead of records, it says to use "klt event decode". Input is at most 64 MB, and a line
at most 12 MB; past either, build stops reading and says so.

What events in the wild have but Kafka would not write (offsets that do not increase, a
topic name Kafka rejects, a timestampType or dataFormat it does not have, a time before 1970)
is built as given, with a "klt: warning: FILE:LINE: ..." on standard error.

The lines "klt event decode" prints are input in this format that gives every field, so
"klt event decode event.json | klt event build" makes the same records again, whatever the
event; pass the event's --source, --arn and --bootstrap-servers for the same envelope. A line
that carries decode's "error" (a record decode found malformed) is rejected: fix the record
or drop it.
`

// usageBuildExamples ends the help of "klt event build".
const usageBuildExamples = `
Examples:

  klt event build < records.jsonl > event.json && klt event decode event.json
  klt event build --source self-managed -o testdata/orders.json orders.jsonl
  klt event decode event.json | jq -c 'select(.partition == 0)' | klt event build -o p0.json
  echo '{"topic":"orders","key":"order-1","value":null}' | klt event build --compact
`

// buildFlags returns the flags of "klt event build", for its help.
func buildFlags() *flag.FlagSet { return newBuildFlags(new(buildConfig)) }
