package faultproxy

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaFaults fails Produce requests to a kfake cluster with a retriable Kafka error,
// NOT_ENOUGH_REPLICAS on every partition of the request, as a broker answers an acks=all
// produce while its followers lag: a producer retries the batch, so a fault of N requests
// shows as N extra requests and records that land once. (franz-go refreshes its metadata
// before each retry, at most every MetadataMinAge, 5 s by default: each fault delays a
// function's produce by up to that.)
//
// kfake's control functions see a request, not the client that sent it (its ClientID stays
// inside kfake), so the producers that must not be faulted, klt's own and the mappings'
// on-failure producer, are told apart by what their requests say: a Produce request whose
// TimeoutMillis is [ExemptProduceTimeout] (a client made with
// kgo.ProduceRequestTimeout(ExemptProduceTimeout)) is never faulted, and with
// [KafkaFaults.OnlyTopics] set, neither is one that writes to a topic outside them.
type KafkaFaults struct {
	observe func(KafkaExchange)
	cl      *kgo.Client // for the topics' IDs

	mu     sync.Mutex
	ids    map[[16]byte]string // topic ID -> name: Produce v13 names topics by ID only
	rules  []*kafkaRule
	only   map[string]bool
	calls  int
	faults int
}

// ExemptProduceTimeout is the produce request timeout that marks a client's Produce
// requests as never to be faulted: klt's own producer uses it. It is 1 ms under franz-go's
// 10 s default, so that nothing else has it by chance.
const ExemptProduceTimeout = 9999 * time.Millisecond

// KafkaExchange is one Produce request KafkaFaults saw (exempt ones are not reported).
type KafkaExchange struct {
	Topics []string // the topics it writes to
	Fault  bool     // it was answered NOT_ENOUGH_REPLICAS
	At     time.Time
}

type kafkaRule struct {
	topic string
	n     int
}

// NewKafkaFaults installs its control function on c's Produce requests; observe, when not
// nil, is called with every request that is not exempt, from kfake's request loop: it must
// be quick and must not call into c. Close releases its client.
func NewKafkaFaults(c *kfake.Cluster, observe func(KafkaExchange)) (*KafkaFaults, error) {
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.ClientID("klt-faultproxy"))
	if err != nil {
		return nil, fmt.Errorf("faultproxy: a client of the cluster: %w", err)
	}
	k := &KafkaFaults{observe: observe, cl: cl, ids: map[[16]byte]string{}}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return k.control(req)
	})
	return k, nil
}

// Close closes the client KafkaFaults reads topic IDs with; the control function stays
// (with no rules left it fails nothing).
func (k *KafkaFaults) Close() { k.cl.Close() }

// learnIDs reads the IDs of the cluster's topics: a Produce request of version 13 or later
// names its topics by ID, and the control function, which runs inside kfake's loop, cannot
// ask the cluster itself.
func (k *KafkaFaults) learnIDs() error {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := kmsg.NewPtrMetadataRequest().RequestWith(ctx, k.cl) // nil Topics: all of them
	if err != nil {
		return fmt.Errorf("faultproxy: the topics' IDs: %w", err)
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, t := range resp.Topics {
		if t.Topic != nil && t.TopicID != ([16]byte{}) {
			k.ids[t.TopicID] = *t.Topic
		}
	}
	return nil
}

// name returns a produced topic's name, from its ID when the request gives only that.
func (k *KafkaFaults) name(topic string, id [16]byte) string {
	if topic != "" {
		return topic
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	if n, ok := k.ids[id]; ok {
		return n
	}
	return fmt.Sprintf("topic ID %x", id)
}

// OnlyTopics restricts faults to Produce requests that write to these topics only (the
// functions' output topics, which must exist); nil lifts the restriction.
func (k *KafkaFaults) OnlyTopics(topics []string) error {
	if err := k.learnIDs(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.only = nil
	if topics != nil {
		k.only = map[string]bool{}
		for _, t := range topics {
			k.only[t] = true
		}
	}
	return nil
}

// FailNext fails the next n Produce requests that write to topic ("" for any topic; a topic
// must exist).
func (k *KafkaFaults) FailNext(n int, topic string) error {
	if n <= 0 {
		return nil
	}
	if err := k.learnIDs(); err != nil {
		return err
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rules = append(k.rules, &kafkaRule{topic: topic, n: n})
	return nil
}

// Pending returns how many faults the rules have left.
func (k *KafkaFaults) Pending() int {
	k.mu.Lock()
	defer k.mu.Unlock()
	n := 0
	for _, r := range k.rules {
		n += r.n
	}
	return n
}

// Calls returns how many Produce requests that are not exempt KafkaFaults has seen, and
// how many of them it failed.
func (k *KafkaFaults) Calls() (calls, faults int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	return k.calls, k.faults
}

func (k *KafkaFaults) control(req kmsg.Request) (kmsg.Response, error, bool) {
	pr, ok := req.(*kmsg.ProduceRequest)
	if !ok || time.Duration(pr.TimeoutMillis)*time.Millisecond == ExemptProduceTimeout {
		return nil, nil, false
	}
	x := KafkaExchange{At: time.Now()}
	for _, t := range pr.Topics {
		x.Topics = append(x.Topics, k.name(t.Topic, t.TopicID))
	}
	x.Fault = k.take(x.Topics)
	if k.observe != nil {
		k.observe(x)
	}
	if !x.Fault {
		return nil, nil, false
	}
	resp := pr.ResponseKind().(*kmsg.ProduceResponse)
	for _, t := range pr.Topics {
		rt := kmsg.NewProduceResponseTopic()
		rt.Topic, rt.TopicID = t.Topic, t.TopicID
		for _, p := range t.Partitions {
			rp := kmsg.NewProduceResponseTopicPartition()
			rp.Partition = p.Partition
			rp.ErrorCode = kerr.NotEnoughReplicas.Code
			rp.BaseOffset, rp.LogAppendTime, rp.LogStartOffset = -1, -1, -1
			rt.Partitions = append(rt.Partitions, rp)
		}
		resp.Topics = append(resp.Topics, rt)
	}
	return resp, nil, true
}

// take counts a request to topics and reports whether a rule fails it.
func (k *KafkaFaults) take(topics []string) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.calls++
	if k.only != nil {
		for _, t := range topics {
			if !k.only[t] {
				return false
			}
		}
	}
	for i, r := range k.rules {
		match := r.topic == ""
		for _, t := range topics {
			match = match || t == r.topic
		}
		if match {
			r.n--
			if r.n == 0 {
				k.rules = append(k.rules[:i:i], k.rules[i+1:]...)
			}
			k.faults++
			return true
		}
	}
	return false
}
