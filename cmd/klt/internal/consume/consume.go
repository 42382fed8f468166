package consume

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/esmevent"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/kafkaconn"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/kafkaevent/kafkaeventtest"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// consumeConfig holds the flags of "klt consume".
type consumeConfig struct {
	cluster       kafkaconn.ClusterFlags
	group         string
	fromBeginning bool
	max           int
	idle          time.Duration
	event         bool
	source        string
	arn           string
	compact       bool
}

// defaultIdleTimeout is how long "klt consume" waits for a record before it stops.
const defaultIdleTimeout = 10 * time.Second

// newConsumeFlags returns the flag set of "klt consume", storing into c.
func newConsumeFlags(c *consumeConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("consume", flag.ContinueOnError)
	c.cluster.Register(fs)
	fs.StringVar(&c.group, "group", "", "consume as a member of consumer `group`, from its committed offsets, and commit\nthe records printed (default: no group, every partition, nothing committed)")
	fs.BoolVar(&c.fromBeginning, "from-beginning", false, "start at the earliest record of each partition without a committed offset\n(default: only records produced from now on)")
	fs.IntVar(&c.max, "max", 0, "stop after `N` records (default 0: no limit)")
	fs.DurationVar(&c.idle, "timeout", defaultIdleTimeout, "stop when no record has arrived for this `duration`, counted from the start (with\n--group, from joining it) and from each record")
	fs.BoolVar(&c.event, "event", false, "print one event of Lambda's Kafka event source mapping holding the records, instead\nof JSON Lines")
	fs.StringVar(&c.source, "source", "", "eventSource of --event: msk or self-managed (default: msk when every broker is\nnamed ...kafka.REGION.amazonaws.com, else self-managed)")
	fs.StringVar(&c.arn, "arn", "", "eventSourceArn of an msk --event (default "+kafkaeventtest.DefaultMSKSourceARN+")")
	fs.BoolVar(&c.compact, "compact", false, "write the --event on one line instead of indented")
	return fs
}

// runConsume runs "klt consume [flags]".
func runConsume(ctx context.Context, c *consumeConfig, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 0 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("unexpected argument %q", args[0]))
	}
	if err := c.check(); err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	opts, brokers, err := c.cluster.Options(ctx)
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	var evOpts []kafkaeventtest.BuilderOption
	if c.event {
		if evOpts, err = c.eventOptions(brokers); err != nil {
			return base.UsageError(stderr, fs.Name(), err)
		}
	}
	cl, err := c.open(ctx, opts)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	defer cl.Close()
	got, code := c.poll(ctx, cl, stdout, stderr)
	if c.group != "" && got.n > 0 && !got.unwritten {
		if err := c.commit(ctx, cl, got.last); err != nil {
			base.Errorf(stderr, "%v", err)
			code = base.ExitFail
		}
	}
	if code != base.ExitOK {
		return code
	}
	if !c.event {
		if got.n == 0 {
			base.Errorf(stderr, "no records within --timeout %v", c.idle)
		}
		return base.ExitOK
	}
	if len(got.event) == 0 {
		base.Errorf(stderr, "no records within --timeout %v; Lambda never sends an event without one", c.idle)
		return base.ExitFail
	}
	return writeEvent(got.event, evOpts, c.compact, stdout, stderr)
}

// check checks the flags that do not depend on each other's values being reachable.
func (c *consumeConfig) check() error {
	switch {
	case c.max < 0:
		return fmt.Errorf("--max: want 0 (no limit) or more, got %d", c.max)
	case c.idle <= 0:
		return fmt.Errorf("--timeout: want a positive duration, got %v", c.idle)
	case !c.event && (c.source != "" || c.arn != "" || c.compact):
		return errors.New("--source, --arn and --compact shape the --event: use them with --event")
	}
	return nil
}

// open connects to the cluster, checks the topic and, with --group, waits until the group has
// given klt its partitions. The caller closes the client.
func (c *consumeConfig) open(ctx context.Context, opts []producer.Option) (*kgo.Client, error) {
	diag := new(kafkaconn.ConnWatch)
	start := kgo.NewOffset().AtEnd()
	if c.fromBeginning {
		start = kgo.NewOffset().AtStart()
	}
	kopts := []kgo.Opt{kgo.ConsumeTopics(c.cluster.Topic), kgo.ConsumeResetOffset(start), kgo.FetchMaxWait(fetchMaxWait(c.idle))}
	assigned := make(chan struct{})
	if c.group != "" {
		var once sync.Once
		kopts = append(kopts, kgo.ConsumerGroup(c.group), kgo.DisableAutoCommit(),
			kgo.OnPartitionsAssigned(func(context.Context, *kgo.Client, map[string][]int32) {
				once.Do(func() { close(assigned) })
			}))
	}
	cl, err := kafkaconn.NewClient(opts, diag, kopts...)
	if err != nil {
		return nil, err
	}
	if _, err := kafkaconn.CheckTopic(ctx, cl, diag, &c.cluster); err != nil {
		cl.Close()
		return nil, err
	}
	if c.group == "" {
		return cl, nil
	}
	// The idle --timeout starts once the group has given klt its partitions: joining takes
	// seconds on a real cluster (group.initial.rebalance.delay.ms is 3s).
	t := time.NewTimer(c.cluster.ConnectTimeout)
	defer t.Stop()
	select {
	case <-assigned:
		return cl, nil
	case <-t.C:
		err = fmt.Errorf("group %q assigned no partition of %q to klt within --connect-timeout %v (do its other members hold them all?)",
			c.group, c.cluster.Topic, c.cluster.ConnectTimeout)
	case <-ctx.Done():
		err = fmt.Errorf("interrupted while joining group %q", c.group)
	}
	cl.Close()
	return nil, err
}

// consumed is what one run of "klt consume" has taken from the topic.
type consumed struct {
	event   []*kgo.Record                  // --event: the event's records
	last    map[topicPartition]*kgo.Record // the last record printed of each partition
	n       int                            // records printed
	evBytes int                            // --event: what its records take, base64 counted
	full    bool                           // --event: the next record would pass MaxPayload
	// unwritten is set when stdout failed: which records were printed is not known, so none
	// is committed.
	unwritten bool
}

// poll reads records until --max, the idle --timeout or, for an --event, a full invocation
// payload. JSON Lines are written as they come, so only each partition's last record is kept,
// for the commit; an --event holds its records, up to what one invocation payload can carry.
func (c *consumeConfig) poll(ctx context.Context, cl *kgo.Client, stdout, stderr io.Writer) (consumed, int) {
	w := bufio.NewWriter(stdout)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	got := consumed{last: map[topicPartition]*kgo.Record{}}
	for !got.full && (c.max == 0 || got.n < c.max) {
		pctx, cancel := context.WithTimeout(ctx, c.idle)
		fetches := cl.PollRecords(pctx, c.max-got.n) // 0 or less: all that are there
		cancel()
		if err := fetchError(fetches); err != nil {
			base.Errorf(stderr, "%v", err)
			return got, base.ExitFail
		}
		recs := fetches.Records()
		if len(recs) == 0 && pctx.Err() != nil {
			if ctx.Err() != nil {
				base.Errorf(stderr, "interrupted after %d records", got.n)
				return got, base.ExitFail
			}
			break
		}
		if c.event {
			got.add(recs, stderr)
			continue
		}
		for _, r := range recs {
			got.last[topicPartition{r.Topic, r.Partition}] = r
			got.n++
			er := eventRecord(r)
			if err := enc.Encode(jsonl.DecodedRecordOf(&er)); err != nil {
				base.Errorf(stderr, "%v", err)
				got.unwritten = true
				return got, base.ExitFail
			}
		}
		if err := w.Flush(); err != nil {
			base.Errorf(stderr, "%v", err)
			got.unwritten = true
			return got, base.ExitFail
		}
	}
	return got, base.ExitOK
}

// add adds recs to the --event, until the next would take it past the largest payload of an
// invocation.
func (got *consumed) add(recs []*kgo.Record, stderr io.Writer) {
	for _, r := range recs {
		size := eventRecordSize(r)
		if got.evBytes+size > input.MaxPayload && len(got.event) > 0 {
			// A Lambda invocation could not carry more: stop here, as the mapping ends a
			// batch, rather than hold all a topic has in memory.
			got.full = true
			base.Errorf(stderr, "stopped after %d records: the next would take the event past the %d bytes (6 MB) of a Lambda invocation payload", got.n, input.MaxPayload)
			return
		}
		got.evBytes += size
		got.event = append(got.event, r)
		got.last[topicPartition{r.Topic, r.Partition}] = r
		got.n++
	}
}

// commit commits, for the --group, the offsets after the last record printed of each
// partition.
func (c *consumeConfig) commit(ctx context.Context, cl *kgo.Client, last map[topicPartition]*kgo.Record) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), c.cluster.ConnectTimeout)
	defer cancel()
	// CommitRecords commits, per partition, the offset after the highest record given.
	lasts := make([]*kgo.Record, 0, len(last))
	for _, r := range last {
		lasts = append(lasts, r)
	}
	if err := cl.CommitRecords(cctx, lasts...); err != nil {
		return fmt.Errorf("committing the offsets of group %q: %v (the next consume of the group prints these records again)", c.group, err)
	}
	return nil
}

// fetchMaxWait returns how long a fetch may wait at the broker for records, given the idle
// --timeout: kgo sends no other fetch to a broker while one waits there (5s by default), so a
// partition whose start offset was resolved meanwhile, as happens when a group assigns
// partitions with and without committed offsets, would be fetched only after the wait, past a
// shorter --timeout.
func fetchMaxWait(idle time.Duration) time.Duration {
	return min(max(idle/4, 100*time.Millisecond), time.Second)
}

// fetchError returns the first error of fetches that is not the end of a poll's context.
func fetchError(fetches kgo.Fetches) error {
	var first error
	fetches.EachError(func(topic string, partition int32, err error) {
		if first != nil || errors.Is(err, context.DeadlineExceeded) || errors.Is(err, context.Canceled) {
			return
		}
		if topic == "" {
			first = err
		} else {
			first = fmt.Errorf("%s-%d: %w", topic, partition, err)
		}
	})
	return first
}

// eventOptions returns the Builder options of the --event: its source, ARN and bootstrap
// servers, brokers.
func (c *consumeConfig) eventOptions(brokers []string) ([]kafkaeventtest.BuilderOption, error) {
	source := c.source
	if source == "" {
		source = "self-managed"
		if AllMSK(brokers) {
			source = "msk"
		}
	}
	opts, err := esmevent.SourceOptions(source, c.arn)
	if err != nil {
		return nil, err
	}
	return append(opts, kafkaeventtest.WithBootstrapServers(brokers...)), nil
}

// AllMSK reports whether every broker is named as Amazon MSK names its brokers
// (b-1.NAME.ID.c2.kafka.REGION.amazonaws.com, or kafka-serverless for MSK Serverless).
func AllMSK(brokers []string) bool {
	for _, b := range brokers {
		host, _, err := net.SplitHostPort(b)
		if err != nil {
			host = b
		}
		host = strings.ToLower(strings.TrimSuffix(host, "."))
		if !strings.HasSuffix(host, ".amazonaws.com") || !strings.Contains(host, ".kafka") {
			return false
		}
	}
	return len(brokers) > 0
}

// eventRecord returns r as the event source mapping delivers it.
func eventRecord(r *kgo.Record) kafkaevent.Record {
	er := kafkaevent.Record{
		Topic:         r.Topic,
		Partition:     r.Partition,
		Offset:        r.Offset,
		TimestampType: kafkaevent.CreateTime,
		Key:           r.Key,
		Value:         r.Value,
		Headers:       make([]kafkaevent.Header, len(r.Headers)),
	}
	if ms := r.Timestamp.UnixMilli(); ms != -1 {
		er.Timestamp = time.UnixMilli(ms).UTC()
	}
	switch r.Attrs.TimestampType() {
	case 1:
		er.TimestampType = kafkaevent.LogAppendTime
	case -1:
		er.TimestampType = "NO_TIMESTAMP_TYPE"
	}
	for i, h := range r.Headers {
		er.Headers[i] = kafkaevent.Header{Key: h.Key, Value: h.Value}
	}
	return er
}

type topicPartition struct {
	topic     string
	partition int32
}

// eventRecordSize is about what r takes in an event: its key, value and header values in
// base64 (4 bytes for 3), header values as arrays of byte numbers (up to 4 bytes each), and
// 200 bytes for the names and numbers around them.
func eventRecordSize(r *kgo.Record) int {
	n := 200 + len(r.Topic) + (len(r.Key)+len(r.Value)+2)/3*4
	for _, h := range r.Headers {
		n += 16 + len(h.Key) + 4*len(h.Value)
	}
	return n
}

// writeEvent writes the event of recs, made with opts, on stdout.
func writeEvent(recs []*kgo.Record, opts []kafkaeventtest.BuilderOption, compact bool, stdout, stderr io.Writer) int {
	lrs := make([]jsonl.Record, len(recs))
	for i, r := range recs {
		lrs[i] = jsonl.Record{Record: eventRecord(r), HasOffset: true, HasTimestamp: true, HasTimestampType: true}
	}
	out, err := esmevent.BuildEvent(lrs, opts).MarshalJSON()
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if len(out) > input.MaxPayload {
		base.Errorf(stderr, "warning: the event is %d bytes, more than the %d bytes (6 MB) of a Lambda invocation payload; --max makes it smaller",
			len(out), input.MaxPayload)
	}
	if !compact {
		out = esmevent.IndentJSON(out)
	}
	if _, err := stdout.Write(append(out, '\n')); err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	return base.ExitOK
}

// usageConsume is the help of "klt consume", before its flags.
const usageConsume = `Consume reads records from a Kafka topic, Amazon MSK (IAM or SCRAM) or any other cluster, and
prints them as JSON Lines, one record per line, exactly as "klt event decode" prints the
records of an event ("klt help event decode" describes the fields). "klt produce" takes the
lines back, so "klt consume --topic a --from-beginning | klt produce --topic b" copies a topic.

With --event it prints instead one event of Lambda's Kafka event source mapping holding the
records, as the mapping would deliver them: records under "topic-partition" keys in offset
order, keys and values in base64, headers as arrays of byte numbers, timestamps in epoch
milliseconds with their timestampType, eventSource aws:kafka (with an eventSourceArn) or
SelfManagedKafka, and the brokers as bootstrapServers. That is a fixture captured from a real
cluster, for "sam local invoke -e", for tests, and for "klt filter test".

Consume stops after --max records, or when no record has arrived for --timeout, and exits 0
(with a note on standard error when there were none). An --event also stops before the
record that would take it past 6 MB, the largest payload of a Lambda invocation, with a note
on standard error; JSON Lines are written as they arrive, and nothing of them is kept. With
--group it commits the offsets of the records it printed when it stops, so the next run of
the group goes on from there. An --event needs at least one record: without one consume
exits with status 1.
` + kafkaconn.UsageClusterFlags

// usageConsumeExamples ends the help of "klt consume".
const usageConsumeExamples = `
Examples:

  klt consume --brokers localhost:9092 --no-tls --topic orders --from-beginning --max 10
  klt consume --iam --topic orders --from-beginning --max 3 --event > testdata/orders-event.json
  klt consume --topic orders --group debug --timeout 5s | jq -r .value
`

// Cmd is the command "klt consume".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt consume --topic TOPIC [flags]",
	Short:     "print records of a Kafka topic as JSON Lines, or as one event (--event)",
	Long:      usageConsume,
	Examples:  usageConsumeExamples,
}, newConsumeFlags, runConsume)
