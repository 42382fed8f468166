package esmtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// DefaultTopic is the mapping's topic without one in the configuration.
const DefaultTopic = "topic"

// requestTimeout bounds each call esmtest makes to the cluster or the queue.
const requestTimeout = 10 * time.Second

// Kafka is an emulated Kafka event source mapping on a kfake cluster of its own, invoking a
// handler in process. NewKafka starts it; it stops when the test ends.
type Kafka struct {
	tb      testing.TB
	topic   string
	cfg     *config
	cluster *kfake.Cluster
	client  *kgo.Client // producing (franz-go's default partitioner) and reading
	manual  *kgo.Client // producing to a given partition (ProduceTo)
	mapping *esm.Kafka
	dest    esm.Destination // the on-failure destination; nil without one
	destURL string          // an SQS destination's queue
	rec     *recorder
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	runErr error             // what Run returned, once it has
	queued []OnFailureRecord // records read from an SQS destination
}

// NewKafka starts a kfake cluster with the mapping's topic (and the topic of a kafka://
// on-failure destination, and those of WithTopics), and runs on it the mapping m, invoking h
// in process; both stop when tb ends, and a mapping that stopped on an error fails tb. h is
// any lambda.Handler: a batch.KafkaFunc, lambda.NewHandler of a typed function, a fan-out
// dispatcher. NewKafka fails tb when the emulator refuses a setting.
func NewKafka(tb testing.TB, h lambda.Handler, m KafkaMapping, opts ...Option) *Kafka {
	tb.Helper()
	cfg := newConfig("Kafka", opts)
	if len(cfg.bad) > 0 {
		tb.Fatalf("esmtest: %s", strings.Join(cfg.bad, "; "))
	}
	topic, err := m.topic()
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	if cfg.partitions <= 0 {
		cfg.partitions = 1
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		tb.Fatalf("esmtest: starting kfake: %v", err)
	}
	tb.Cleanup(cluster.Close)
	client, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerLinger(0))
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	tb.Cleanup(client.Close)
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	partitions := func(t string) int32 {
		if t == topic {
			return int32(cfg.partitions)
		}
		return 1
	}
	if err := standin.CreateTopics(ctx, client, partitions, append([]string{topic, m.onFailureTopic()}, cfg.topics...)...); err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	manual, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	tb.Cleanup(manual.Close)
	k := &Kafka{tb: tb, topic: topic, cfg: cfg, cluster: cluster, client: client, manual: manual, done: make(chan struct{})}
	k.rec = newRecorder(tb, h, cfg, kafkaRefs)
	mopts, dest, destURL, err := m.kafkaOptions(ctx, cfg.sqs)
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	k.dest, k.destURL = dest, destURL
	mopts = append([]esm.KafkaOption{esm.WithFunctionARN(k.rec.arn)}, mopts...)
	if cfg.onePartition {
		mopts = append(mopts, esm.WithOnePartitionPerInvocation())
	}
	k.mapping, err = esm.NewKafka(cluster.ListenAddrs(), topic, k.rec, mopts...)
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	k.cancel = stop
	go func() {
		defer close(k.done)
		err := k.mapping.Run(rctx)
		k.mu.Lock()
		k.runErr = err
		k.mu.Unlock()
	}()
	tb.Cleanup(k.close)
	return k
}

// close stops the mapping and waits for it (at most requestTimeout); an error it stopped on
// fails the test.
func (k *Kafka) close() {
	k.cancel()
	select {
	case <-k.done:
	case <-time.After(requestTimeout):
		k.tb.Errorf("esmtest: the Kafka mapping did not stop within %v", requestTimeout)
		return
	}
	if err := k.err(); err != nil {
		k.tb.Errorf("esmtest: the Kafka mapping stopped: %v", err)
	}
}

func (k *Kafka) err() error {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.runErr
}

// Brokers returns the cluster's addresses, for a handler that produces to it.
func (k *Kafka) Brokers() []string { return k.cluster.ListenAddrs() }

// Cluster returns the kfake cluster, for faults (kfake's Control functions).
func (k *Kafka) Cluster() *kfake.Cluster { return k.cluster }

// Counters returns the mapping's running totals.
func (k *Kafka) Counters() Counters { return counters(k.mapping.Counters().Snapshot()) }

// Metrics returns the metrics of the groups KafkaMapping.MetricsConfig enabled, by the names
// Lambda publishes them under (PolledEventCount, OffsetLag's MaxOffsetLag...), as CloudWatch
// would show them since the mapping started.
func (k *Kafka) Metrics() map[string]int64 { return k.mapping.Metrics() }

// Topic returns the topic the mapping reads.
func (k *Kafka) Topic() string { return k.topic }

// Produce produces the records, synchronously, in order; a record without a Topic goes to
// the mapping's topic. Records are partitioned as franz-go's default producer does: by the
// hash of their key, and records without one to one partition per batch. It fails the test when a record cannot be produced.
func (k *Kafka) Produce(records ...*kgo.Record) {
	k.tb.Helper()
	for _, r := range records {
		if r.Topic == "" {
			r.Topic = k.topic
		}
	}
	k.produce(k.client, records)
}

// ProduceTo produces the records to partition p of the mapping's topic, synchronously, in
// order. It fails the test when a record cannot be produced.
func (k *Kafka) ProduceTo(p int32, records ...*kgo.Record) {
	k.tb.Helper()
	for _, r := range records {
		r.Topic, r.Partition = k.topic, p
	}
	k.produce(k.manual, records)
}

func (k *Kafka) produce(cl *kgo.Client, records []*kgo.Record) {
	k.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	if err := cl.ProduceSync(ctx, records...).FirstErr(); err != nil {
		k.tb.Fatalf("esmtest: producing: %v", err)
	}
}

// Invocations returns the invocations that have ended, in the order they ended (partitions
// are processed in parallel; within a partition, in offset order).
func (k *Kafka) Invocations() []Invocation {
	done, _ := k.rec.invocations()
	return done
}

// Environments returns the emulated execution environments of a Lambda Managed Instances
// function (WithLMIConcurrency), in the order they were first used; nil without it.
func (k *Kafka) Environments() []Environment { return k.rec.environments() }

// WaitIdle waits until the mapping is idle: every record of its topic committed (succeeded,
// filtered, or given up on: sent to the on-failure destination, or dropped without one) and
// no invocation under way. It returns an error saying what is left when that does not
// happen within timeout, and at once when the mapping stopped on an error. Records the
// mapping never reads (produced before a LATEST group joined) are never committed: WaitIdle
// then times out.
func (k *Kafka) WaitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := k.err(); err != nil {
			return fmt.Errorf("esmtest: the Kafka mapping stopped: %w", err)
		}
		left, err := k.left()
		if err != nil {
			return err
		}
		if left == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("esmtest: the Kafka mapping is not idle after %v: %s", timeout, left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// left says what keeps the mapping from being idle; "" when it is.
func (k *Kafka) left() (string, error) {
	committed, err := k.committed()
	if err != nil {
		return "", err
	}
	var parts []string
	for _, p := range k.cluster.PartitionInfos(k.topic) {
		if c := committed[p.Partition]; c < p.HighWatermark {
			parts = append(parts, fmt.Sprintf("%s-%d committed %d of %d", k.topic, p.Partition, c, p.HighWatermark))
		}
	}
	if _, n := k.rec.invocations(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d invocation(s) under way", n))
	}
	slices.Sort(parts)
	return strings.Join(parts, ", "), nil
}

// Committed returns the offset committed for each partition of the topic (the next offset
// the group reads; a partition without a commit is left out). It fails the test when the
// cluster cannot tell.
func (k *Kafka) Committed() map[int32]int64 {
	k.tb.Helper()
	c, err := k.committed()
	if err != nil {
		k.tb.Fatal(err)
	}
	return c
}

// committed reads the committed offsets of every group of the cluster on the topic: the
// cluster is the mapping's own, so its groups are the mapping's (whatever its group ID).
func (k *Kafka) committed() (map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	resp, err := kmsg.NewPtrListGroupsRequest().RequestWith(ctx, k.client)
	if err != nil {
		return nil, fmt.Errorf("esmtest: listing the groups: %w", err)
	}
	if err := kerr.ErrorForCode(resp.ErrorCode); err != nil {
		return nil, fmt.Errorf("esmtest: listing the groups: %w", err)
	}
	out := map[int32]int64{}
	for _, g := range resp.Groups {
		info := k.cluster.GroupInfo(g.Group)
		if info == nil {
			continue
		}
		for p, c := range info.Commits[k.topic] {
			if c.Offset > out[p] {
				out[p] = c.Offset
			}
		}
	}
	return out, nil
}

// Records returns every record of topic on the cluster (each partition in offset order),
// such as what the handler produced. It fails the test when they cannot be read.
func (k *Kafka) Records(topic string) []*kgo.Record {
	k.tb.Helper()
	recs, err := k.records(topic)
	if err != nil {
		k.tb.Fatal(err)
	}
	return recs
}

func (k *Kafka) records(topic string) ([]*kgo.Record, error) {
	want := int64(0)
	infos := k.cluster.PartitionInfos(topic)
	if infos == nil {
		return nil, fmt.Errorf("esmtest: no topic %s on the cluster (WithTopics creates it)", topic)
	}
	for _, p := range infos {
		want += p.HighWatermark - p.LogStartOffset
	}
	if want == 0 {
		return nil, nil
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(k.cluster.ListenAddrs()...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		return nil, err
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	var out []*kgo.Record
	for int64(len(out)) < want {
		fs := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("esmtest: reading %s: %d records of %d: %w", topic, len(out), want, err)
		}
		if err := fs.Err0(); err != nil {
			return nil, fmt.Errorf("esmtest: reading %s: %w", topic, err)
		}
		out = append(out, fs.Records()...)
	}
	slices.SortStableFunc(out, func(a, b *kgo.Record) int {
		if a.Partition != b.Partition {
			return int(a.Partition - b.Partition)
		}
		return int(a.Offset - b.Offset)
	})
	return out, nil
}

// OnFailure returns the on-failure records the mapping's destination
// (DestinationConfig.OnFailure) has received so far, none without one. A kafka:// destination
// is read from the cluster; an SQS one is received with WithSQS's client and its messages
// deleted, so each call returns what earlier calls did and what came since. It fails the test
// when the destination cannot be read.
func (k *Kafka) OnFailure() []OnFailureRecord {
	k.tb.Helper()
	out, err := k.onFailure()
	if err != nil {
		k.tb.Fatal(err)
	}
	return out
}

func (k *Kafka) onFailure() ([]OnFailureRecord, error) {
	if k.dest == nil {
		return nil, nil
	}
	where := k.dest.String()
	if topic, ok := strings.CutPrefix(where, "kafka://"); ok {
		recs, err := k.records(topic)
		if err != nil {
			return nil, err
		}
		var out []OnFailureRecord
		for _, r := range recs {
			f, err := parseOnFailure(r.Value, r.Key)
			if err != nil {
				return nil, fmt.Errorf("esmtest: %s offset %d: %w", where, r.Offset, err)
			}
			out = append(out, f)
		}
		return out, nil
	}
	msgs, err := receiveAll(k.cfg.sqs, k.destURL)
	if err != nil {
		return nil, err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, m := range msgs {
		f, err := parseOnFailure([]byte(m), nil)
		if err != nil {
			return nil, fmt.Errorf("esmtest: %s: %w", where, err)
		}
		k.queued = append(k.queued, f)
	}
	return slices.Clone(k.queued), nil
}
