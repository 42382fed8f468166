package event

import (
	"bytes"
	"context"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/esmevent"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
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
func runBuild(ctx context.Context, c *buildConfig, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs.Visit(func(f *flag.Flag) { c.serversOn = c.serversOn || f.Name == "bootstrap-servers" })
	if len(args) > 1 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	opts, err := c.builderOptions()
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}

	name, data, err := jsonl.ReadLinesInput(args, stdin, ", which build takes back", "klt event build")
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	recs, err := jsonl.ReadRecords(ctx, name, bytes.NewReader(data))
	if err == nil && len(recs) == 0 {
		err = fmt.Errorf("%s: no records; Lambda never sends an event without one", name)
	}
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	for _, w := range jsonl.WarningLines(name, recs) {
		base.Errorf(stderr, "%s", w)
	}

	ev := esmevent.BuildEvent(recs, opts)
	out, err := ev.MarshalJSON()
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if len(out) > input.MaxPayload {
		base.Errorf(stderr, "warning: the event is %d bytes, more than the %d bytes (6 MB) of a Lambda invocation payload",
			len(out), input.MaxPayload)
	}
	if !c.compact {
		out = esmevent.IndentJSON(out)
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

// builderOptions checks the flags and turns them into Builder options.
func (c *buildConfig) builderOptions() ([]kafkaeventtest.BuilderOption, error) {
	opts, err := esmevent.SourceOptions(c.source, c.arn)
	if err != nil {
		return nil, err
	}
	if c.serversOn {
		servers, err := input.SplitServers(c.servers)
		if err != nil {
			return nil, fmt.Errorf("--bootstrap-servers: %w", err)
		}
		opts = append(opts, kafkaeventtest.WithBootstrapServers(servers...))
	}
	if c.startTime != "" {
		t, err := jsonl.ParseTime(c.startTime)
		if err != nil {
			return nil, fmt.Errorf("--start-time: %w", err)
		}
		opts = append(opts, kafkaeventtest.WithStartTime(t))
	}
	return opts, nil
}

// usageBuild is the help of "klt event build", before its flags.
const usageBuild = `Build reads Kafka records as JSON Lines from FILE, or from standard input when FILE is absent
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
  klt event build --source self-managed -o self-managed.json records.jsonl
  klt event decode event.json | jq -c 'select(.partition == 0)' | klt event build -o p0.json
  echo '{"topic":"orders","key":"order-1","value":null}' | klt event build --compact
`

// cmdBuild is the command "klt event build".
var cmdBuild = base.WithFlags(&base.Command{
	UsageLine: "klt event build [flags] [FILE]",
	Short:     "make an event from records written as JSON Lines",
	Long:      usageBuild,
	Examples:  usageBuildExamples,
}, newBuildFlags, runBuild)
