package stackrun

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// topicObserver consumes the stack's output topics (those no mapping reads and klt does not
// produce to) from their start, with no consumer group, and writes each record into the
// ledger as an effect of the input record its producer.SourceHeader names. A record without
// the header is unattributed; a record that is a Kafka mapping's on-failure record (a
// kafka:// on-failure destination) is read as the lister reads one from a queue.
type topicObserver struct {
	l      *ledger.Ledger
	cl     *kgo.Client
	topics map[string]string // topic -> the function producing to it ("" unknown)
	notes

	mu       sync.Mutex
	consumed map[string]map[int32]int64 // topic -> partition -> next offset
	waitCh   chan struct{}
}

// newTopicObserver makes the consumer of topics (topic -> the function that produces to
// it, "" when unknown).
func newTopicObserver(l *ledger.Ledger, brokers []string, topics map[string]string) (*topicObserver, error) {
	names := make([]string, 0, len(topics))
	for t := range topics {
		names = append(names, t)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(brokers...), kgo.ClientID("klt-local-observer"),
		kgo.ConsumeTopics(names...), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()),
		kgo.ProduceRequestTimeout(faultproxy.ExemptProduceTimeout))
	if err != nil {
		return nil, fmt.Errorf("the output topics' consumer: %w", err)
	}
	return &topicObserver{l: l, cl: cl, topics: topics, consumed: map[string]map[int32]int64{}, waitCh: make(chan struct{})}, nil
}

// run consumes until ctx ends.
func (o *topicObserver) run(ctx context.Context) {
	for ctx.Err() == nil {
		fs := o.cl.PollFetches(ctx)
		fs.EachError(func(t string, p int32, err error) {
			if !errors.Is(err, context.Canceled) {
				o.add("consuming %s-%d: %v", t, p, err)
			}
		})
		fs.EachRecord(o.record)
		o.mu.Lock()
		close(o.waitCh)
		o.waitCh = make(chan struct{})
		o.mu.Unlock()
	}
}

func (o *topicObserver) record(r *kgo.Record) {
	o.mu.Lock()
	if o.consumed[r.Topic] == nil {
		o.consumed[r.Topic] = map[int32]int64{}
	}
	o.consumed[r.Topic][r.Partition] = r.Offset + 1
	o.mu.Unlock()
	e := ledger.Effect{Kind: ledger.EffectTopic, Resource: r.Topic, Function: o.topics[r.Topic], Op: "Produce", At: r.Timestamp, Body: capBody(r.Value),
		ID: fmt.Sprintf("%s-%d@%d", r.Topic, r.Partition, r.Offset)}
	kr := &kafkaevent.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset}
	for _, h := range r.Headers {
		kr.Headers = append(kr.Headers, kafkaevent.Header{Key: h.Key, Value: h.Value})
	}
	src, err := producer.ReadSource(kr)
	if err == nil {
		e.Record, e.Via, e.Target = ledger.RecordID{Topic: src.Topic, Partition: src.Partition, Offset: src.Offset}, ledger.ViaSourceHeader, strconv.Itoa(src.Index)
		o.l.AddEffect(e)
		return
	}
	if errors.Is(err, producer.ErrNoSource) {
		if ok, ferr := readOnFailure(o.l, e, r.Value); ok {
			if ferr != nil {
				o.add("%s-%d@%d: %v", r.Topic, r.Partition, r.Offset, ferr)
			}
			return
		}
	}
	o.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectTopic, Resource: r.Topic, At: r.Timestamp,
		Why: fmt.Sprintf("record %s-%d@%d: %v", r.Topic, r.Partition, r.Offset, err)})
}

// settle waits until the consumer has read every record the topics held when it was called.
func (o *topicObserver) settle(ctx context.Context) error {
	ends, err := o.endOffsets(ctx)
	if err != nil {
		return err
	}
	for {
		o.mu.Lock()
		done := true
		for t, ps := range ends {
			for p, end := range ps {
				done = done && o.consumed[t][p] >= end
			}
		}
		ch := o.waitCh
		o.mu.Unlock()
		if done {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("reading the output topics: %w", ctx.Err())
		case <-ch:
		}
	}
}

// endOffsets lists the topics' end offsets (of the partitions that have records).
func (o *topicObserver) endOffsets(ctx context.Context) (map[string]map[int32]int64, error) {
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	meta := kmsg.NewPtrMetadataRequest()
	for t := range o.topics {
		mt := kmsg.NewMetadataRequestTopic()
		mt.Topic = kmsg.StringPtr(t)
		meta.Topics = append(meta.Topics, mt)
	}
	mresp, err := meta.RequestWith(ctx, o.cl)
	if err != nil {
		return nil, fmt.Errorf("output topics' metadata: %w", err)
	}
	lo := kmsg.NewPtrListOffsetsRequest()
	lo.ReplicaID = -1
	for _, t := range mresp.Topics {
		if t.Topic == nil || kerr.ErrorForCode(t.ErrorCode) != nil {
			continue // not created yet: nothing to read
		}
		lt := kmsg.NewListOffsetsRequestTopic()
		lt.Topic = *t.Topic
		for _, p := range t.Partitions {
			lp := kmsg.NewListOffsetsRequestTopicPartition()
			lp.Partition, lp.Timestamp = p.Partition, -1 // -1: the end
			lt.Partitions = append(lt.Partitions, lp)
		}
		lo.Topics = append(lo.Topics, lt)
	}
	out := map[string]map[int32]int64{}
	if len(lo.Topics) == 0 {
		return out, nil
	}
	lresp, err := lo.RequestWith(ctx, o.cl)
	if err != nil {
		return nil, fmt.Errorf("output topics' end offsets: %w", err)
	}
	for _, t := range lresp.Topics {
		for _, p := range t.Partitions {
			if err := kerr.ErrorForCode(p.ErrorCode); err != nil {
				return nil, fmt.Errorf("end offset of %s-%d: %w", t.Topic, p.Partition, err)
			}
			if p.Offset > 0 {
				if out[t.Topic] == nil {
					out[t.Topic] = map[int32]int64{}
				}
				out[t.Topic][p.Partition] = p.Offset
			}
		}
	}
	return out, nil
}

func (o *topicObserver) close() { o.cl.Close() }
