package esmtest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/esm"
)

// DefaultTopic is the mapping's topic without one in the configuration.
const DefaultTopic = "topic"

// requestTimeout bounds each call esmtest makes to the cluster or the queue.
const requestTimeout = 10 * time.Second

// KafkaConfig is what a Kafka mapping under test needs beyond its esm options.
type KafkaConfig struct {
	Topic      string   // the topic the mapping reads; DefaultTopic when empty
	Partitions int      // the topic's partitions; 1 when 0
	Topics     []string // more topics to create (one partition each): an esm.OnFailureKafkaTopic destination's, or one the handler produces to
	// FunctionName names the function in the ARN of its context (InvokedFunctionArn) and of
	// on-failure records; DefaultFunctionName when empty.
	FunctionName string
	// FunctionTimeout is the function's timeout: its context's deadline, after which the
	// invocation fails as "Sandbox.Timedout"; DefaultFunctionTimeout when 0.
	FunctionTimeout time.Duration
	// SQS is the client with which OnFailure reads an esm.OnFailureSQS destination.
	SQS *sqs.Client
}

// Kafka is an emulated Kafka event source mapping (esm.Kafka) on a kfake cluster of its own,
// invoking a handler in process. NewKafka starts it; it stops when the test ends.
type Kafka struct {
	tb      testing.TB
	cfg     KafkaConfig
	cluster *kfake.Cluster
	client  *kgo.Client // producing (franz-go's default partitioner) and reading
	manual  *kgo.Client // producing to a given partition (ProduceTo)
	mapping *esm.Kafka
	rec     *recorder
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	runErr error                        // what Run returned, once it has
	queued map[string][]OnFailureRecord // records read from each SQS destination, by queue URL
}

// NewKafka starts a kfake cluster with the topic (and cfg.Topics), and runs on it an
// esm.Kafka mapping with opts that invokes h in process; both stop when tb ends, and a
// mapping that stopped on an error fails tb. h is any lambda.Handler: a batch.KafkaFunc,
// lambda.NewHandler of a typed function, a fan-out dispatcher. NewKafka fails tb when esm
// refuses the options.
//
// The function's ARN is given to the mapping (esm.WithFunctionARN) before opts, which may
// override it.
func NewKafka(tb testing.TB, h lambda.Handler, cfg KafkaConfig, opts ...esm.KafkaOption) *Kafka {
	tb.Helper()
	if cfg.Topic == "" {
		cfg.Topic = DefaultTopic
	}
	if cfg.Partitions <= 0 {
		cfg.Partitions = 1
	}
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(int32(cfg.Partitions), cfg.Topic))
	if err != nil {
		tb.Fatalf("esmtest: starting kfake: %v", err)
	}
	tb.Cleanup(cluster.Close)
	for _, t := range cfg.Topics {
		if err := cluster.CreateTopic(t, 1, nil); err != nil {
			tb.Fatalf("esmtest: creating topic %s: %v", t, err)
		}
	}
	client, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerLinger(0))
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	tb.Cleanup(client.Close)
	manual, err := kgo.NewClient(kgo.SeedBrokers(cluster.ListenAddrs()...), kgo.ProducerLinger(0), kgo.RecordPartitioner(kgo.ManualPartitioner()))
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	tb.Cleanup(manual.Close)
	k := &Kafka{tb: tb, cfg: cfg, cluster: cluster, client: client, manual: manual, done: make(chan struct{}), queued: map[string][]OnFailureRecord{}}
	k.rec = newRecorder(tb, h, cfg.FunctionTimeout, cfg.FunctionName, kafkaRefs)
	opts = append([]esm.KafkaOption{esm.WithFunctionARN(k.rec.arn)}, opts...)
	k.mapping, err = esm.NewKafka(cluster.ListenAddrs(), cfg.Topic, k.rec, opts...)
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	k.cancel = cancel
	go func() {
		defer close(k.done)
		err := k.mapping.Run(ctx)
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

// Mapping returns the mapping, for its Counters.
func (k *Kafka) Mapping() *esm.Kafka { return k.mapping }

// Topic returns the topic the mapping reads.
func (k *Kafka) Topic() string { return k.cfg.Topic }

// Produce produces the records, synchronously, in order; a record without a Topic goes to
// the mapping's topic. Records are partitioned as franz-go's default producer does: by the
// hash of their key, and records without one to one partition per batch. It fails the test when a record cannot be produced.
func (k *Kafka) Produce(records ...*kgo.Record) {
	k.tb.Helper()
	for _, r := range records {
		if r.Topic == "" {
			r.Topic = k.cfg.Topic
		}
	}
	k.produce(k.client, records)
}

// ProduceTo produces the records to partition p of the mapping's topic, synchronously, in
// order. It fails the test when a record cannot be produced.
func (k *Kafka) ProduceTo(p int32, records ...*kgo.Record) {
	k.tb.Helper()
	for _, r := range records {
		r.Topic, r.Partition = k.cfg.Topic, p
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
	for _, p := range k.cluster.PartitionInfos(k.cfg.Topic) {
		if c := committed[p.Partition]; c < p.HighWatermark {
			parts = append(parts, fmt.Sprintf("%s-%d committed %d of %d", k.cfg.Topic, p.Partition, c, p.HighWatermark))
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
		for p, c := range info.Commits[k.cfg.Topic] {
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
		return nil, fmt.Errorf("esmtest: no topic %s on the cluster (KafkaConfig.Topics creates it)", topic)
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

// OnFailure returns the on-failure records the destination d has received so far: d must
// be the destination given to esm.WithOnFailure. An esm.OnFailureKafkaTopic destination is
// read from the cluster (its topic must be in KafkaConfig.Topics); an esm.OnFailureSQS one is
// received with KafkaConfig.SQS and its messages deleted, so each call returns what earlier
// calls did and what came since. It fails the test when the destination cannot be read.
func (k *Kafka) OnFailure(d esm.Destination) []OnFailureRecord {
	k.tb.Helper()
	out, err := k.onFailure(d)
	if err != nil {
		k.tb.Fatal(err)
	}
	return out
}

func (k *Kafka) onFailure(d esm.Destination) ([]OnFailureRecord, error) {
	if d == nil {
		return nil, errors.New("esmtest: OnFailure of a nil destination")
	}
	where := d.String()
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
	url, ok := strings.CutPrefix(where, "SQS queue ")
	if !ok {
		return nil, fmt.Errorf("esmtest: OnFailure cannot read %s", where)
	}
	if k.cfg.SQS == nil {
		return nil, fmt.Errorf("esmtest: OnFailure of %s needs KafkaConfig.SQS, a client of its endpoint", where)
	}
	msgs, err := receiveAll(k.cfg.SQS, url)
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
		k.queued[url] = append(k.queued[url], f)
	}
	return slices.Clone(k.queued[url]), nil
}
