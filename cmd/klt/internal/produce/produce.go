package produce

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsonl"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/kafkaconn"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/schemajson"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kgo"
)

// produceConfig holds the flags of "klt produce".
type produceConfig struct {
	cluster kafkaconn.ClusterFlags
	timeout time.Duration
	schemas schemajson.ProduceSchemaFlags
}

// defaultProduceTimeout is how long "klt produce" waits for every record to be acknowledged.
const defaultProduceTimeout = 30 * time.Second

// newProduceFlags returns the flag set of "klt produce", storing into c.
func newProduceFlags(c *produceConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("produce", flag.ContinueOnError)
	c.cluster.Register(fs)
	c.schemas.Register(fs)
	fs.DurationVar(&c.timeout, "timeout", defaultProduceTimeout, "give up on records not acknowledged within this `duration` (they are reported\nfailed; they may still land)")
	return fs
}

// runProduce runs "klt produce [flags] [FILE]".
func runProduce(ctx context.Context, c *produceConfig, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) > 1 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("want at most one input file, got %d", len(args)))
	}
	if c.timeout <= 0 {
		return base.UsageError(stderr, fs.Name(), fmt.Errorf("--timeout: want a positive duration, got %v", c.timeout))
	}
	opts, _, err := c.cluster.Options(ctx)
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}
	ser, err := c.schemas.Serializer()
	if err != nil {
		return base.UsageError(stderr, fs.Name(), err)
	}

	// Every line is read and checked before anything is sent: a bad line at the end of the
	// input must not leave the records before it produced.
	name, data, err := jsonl.ReadLinesInput(args, stdin, "", "klt produce --topic TOPIC")
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}
	recs, err := jsonl.ReadLines(ctx, name, bytes.NewReader(data), false)
	if err == nil && len(recs) == 0 {
		err = fmt.Errorf("%s: no records", name)
	}
	if err == nil {
		err = checkProduceLines(name, recs)
	}
	if err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}

	diag := new(kafkaconn.ConnWatch)
	part := &linePartitioner{manual: make(map[*kgo.Record]bool), inner: kgo.StickyKeyPartitioner(nil)}
	// kgo counts a record's delivery timeout from its timestamp, so the producer package's
	// default would fail at once the records of a copied topic, which keep theirs: --timeout
	// bounds the wait instead.
	cl, err := kafkaconn.NewClient(opts, diag, kgo.RecordPartitioner(part), kgo.RecordDeliveryTimeout(0))
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	defer cl.Close()
	n, err := kafkaconn.CheckTopic(ctx, cl, diag, &c.cluster)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	if err := checkPartitions(name, recs, c.cluster.Topic, n); err != nil {
		base.PrintErrors(stderr, err)
		return base.ExitFail
	}

	krecs := make([]*kgo.Record, len(recs))
	var encErrs []error
	for i := range recs {
		krecs[i] = kgoRecord(&recs[i], c.cluster.Topic)
		if recs[i].HasPartition {
			part.manual[krecs[i]] = true
		}
		if ser != nil {
			if err := schemajson.Serialize(ctx, ser, &recs[i], krecs[i]); err != nil {
				encErrs = append(encErrs, fmt.Errorf("%s:%d: %w", name, recs[i].Line, err))
			}
		}
	}
	if len(encErrs) > 0 { // nothing is sent when a line cannot be encoded
		base.PrintErrors(stderr, joinLineErrors(name, encErrs))
		return base.ExitFail
	}
	pctx, cancel := context.WithTimeout(ctx, c.timeout)
	defer cancel()
	results := producer.Produce(pctx, cl, krecs...)
	failed := 0
	for i, r := range results {
		if r.Err == nil {
			continue
		}
		failed++
		if failed <= jsonl.MaxLineErrors {
			base.Errorf(stderr, "%s:%d: not produced to %s: %v", name, recs[i].Line, c.cluster.Topic, describeProduceError(r.Err, c.timeout))
		}
	}
	if failed > 0 {
		if failed > jsonl.MaxLineErrors {
			base.Errorf(stderr, "%d more records not produced", failed-jsonl.MaxLineErrors)
		}
		base.Errorf(stderr, "%d of %d records not produced", failed, len(recs))
		return base.ExitFail
	}
	return base.ExitOK
}

// describeProduceError says what err, the error of one record, means.
func describeProduceError(err error, timeout time.Duration) string {
	if errors.Is(err, producer.ErrNotAcknowledged) {
		return fmt.Sprintf("not acknowledged within --timeout %v; it may still land", timeout)
	}
	return err.Error()
}

// checkProduceLines returns an error for each record that Kafka cannot take as given: a
// timestamp before 1970 (Kafka's -1, no timestamp, is allowed: the producer stamps the time).
func checkProduceLines(name string, recs []jsonl.Record) error {
	var errs []error
	for _, r := range recs {
		if r.HasTimestamp && !r.Record.Timestamp.IsZero() && r.Record.Timestamp.UnixMilli() < 0 {
			errs = append(errs, &jsonl.LineError{File: name, Line: r.Line,
				Err: fmt.Errorf("timestamp: %d is before 1970, which Kafka cannot represent", r.Record.Timestamp.UnixMilli())})
		}
	}
	return joinLineErrors(name, errs)
}

// checkPartitions returns an error for each record whose line names a partition that topic,
// with n partitions, does not have.
func checkPartitions(name string, recs []jsonl.Record, topic string, n int) error {
	var errs []error
	for _, r := range recs {
		if r.HasPartition && int(r.Record.Partition) >= n {
			errs = append(errs, &jsonl.LineError{File: name, Line: r.Line,
				Err: fmt.Errorf("partition %d: topic %q has %d partitions, 0 to %d", r.Record.Partition, topic, n, n-1)})
		}
	}
	return joinLineErrors(name, errs)
}

// joinLineErrors joins up to maxLineErrors of errs, and says how many more there are.
func joinLineErrors(name string, errs []error) error {
	if len(errs) > jsonl.MaxLineErrors {
		errs = append(errs[:jsonl.MaxLineErrors], fmt.Errorf("%s: %w; %d more bad lines", name, jsonl.ErrTooManyErrors, len(errs)-jsonl.MaxLineErrors))
	}
	return errors.Join(errs...)
}

// kgoRecord returns the record to produce for lr, to topic. The line's offset, timestampType
// and schema metadata are not sent: Kafka assigns offsets, the topic's configuration decides
// the timestamp type, and schema metadata is what the event source mapping adds.
func kgoRecord(lr *jsonl.Record, topic string) *kgo.Record {
	r := &lr.Record
	kr := &kgo.Record{Topic: topic, Key: r.Key, Value: r.Value}
	if lr.HasPartition {
		kr.Partition = r.Partition
	}
	if lr.HasTimestamp && !r.Timestamp.IsZero() {
		kr.Timestamp = r.Timestamp
	}
	if len(r.Headers) > 0 {
		kr.Headers = make([]kgo.RecordHeader, len(r.Headers))
		for i, h := range r.Headers {
			kr.Headers[i] = kgo.RecordHeader{Key: h.Key, Value: h.Value}
		}
	}
	return kr
}

// linePartitioner sends the records whose line names a partition to that partition, and the
// others where inner puts them.
type linePartitioner struct {
	// manual holds the records whose line names a partition. It is filled before producing
	// and only read afterwards, from kgo's goroutines.
	manual map[*kgo.Record]bool
	inner  kgo.Partitioner
}

func (p *linePartitioner) ForTopic(topic string) kgo.TopicPartitioner {
	return &lineTopicPartitioner{manual: p.manual, inner: p.inner.ForTopic(topic)}
}

type lineTopicPartitioner struct {
	manual map[*kgo.Record]bool
	inner  kgo.TopicPartitioner
}

func (p *lineTopicPartitioner) RequiresConsistency(r *kgo.Record) bool {
	return p.manual[r] || p.inner.RequiresConsistency(r)
}

func (p *lineTopicPartitioner) Partition(r *kgo.Record, n int) int {
	if p.manual[r] {
		return int(r.Partition)
	}
	return p.inner.Partition(r, n)
}

// OnNewBatch lets a sticky inner partitioner move on to another partition, as it would alone.
func (p *lineTopicPartitioner) OnNewBatch() {
	if o, ok := p.inner.(kgo.TopicPartitionerOnNewBatch); ok {
		o.OnNewBatch()
	}
}

// usageProduce is the help of "klt produce", before its flags.
const usageProduce = `Produce sends records to a Kafka topic, Amazon MSK (IAM or SCRAM) or any other cluster. It
reads them as JSON Lines from FILE, or from standard input when FILE is absent or "-", in the
format of "klt event build" ("klt help event build" describes it), and produces them through
the toolkit's producer package: idempotent, acknowledged by all in-sync replicas, and waited
for until each is acknowledged or has failed.

  {"key":"order-1","value":{"id":1},"headers":{"content-type":"application/json"}}

Every record goes to --topic, whatever its line's "topic" says (a line may leave it out), so
"klt consume --topic a | klt produce --topic b" copies a topic. A line with a "partition"
goes to that partition; one without goes where a Java client would put it: murmur2 of the key,
or a partition picked for keyless records. "key", "value", "headers" (order and repeated names
kept, binary values as valueBase64) and "timestamp" are sent; "offset", "timestampType" and
the schema fields, which "klt consume" prints, are not: Kafka assigns offsets.

The whole input is checked first: a bad line, or a partition the topic does not have, is
reported as "klt: FILE:LINE: ..." and nothing is sent. A record that fails is reported as
"klt: FILE:LINE: not produced to TOPIC: why", and produce exits with status 1 after every
record has been acknowledged or has failed, within --timeout. Input is at most 64 MB, and a line
at most 12 MB (an 8 MB value, the most Amazon MSK takes, as valueBase64); past either, produce
stops reading, says so and sends nothing.
` + kafkaconn.UsageClusterFlags

// usageProduceExamples ends the help of "klt produce".
const usageProduceExamples = `
Examples:

  echo '{"key":"o-1","value":{"id":1}}' | klt produce --brokers localhost:9092 --no-tls --topic o
  export KAFKA_BOOTSTRAP_SERVERS=b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098
  klt produce --iam --topic orders < records.jsonl
  klt consume --topic orders --from-beginning | klt produce --topic orders-copy
`

// Cmd is the command "klt produce".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt produce --topic TOPIC [flags] [FILE]",
	Short:     "send records written as JSON Lines to a Kafka topic (Amazon MSK IAM too)",
	Long:      usageProduce,
	Examples:  usageProduceExamples,
}, newProduceFlags, runProduce)
