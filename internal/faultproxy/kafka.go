package faultproxy

import (
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// KafkaFaults fails Produce requests to a kfake cluster with a retriable Kafka error,
// NOT_LEADER_OR_FOLLOWER on every partition of the request, as a broker answers while
// leadership moves: a producer refreshes its metadata and retries the batch, so a fault of
// N requests shows as N extra requests and records that land once.
//
// kfake's control functions see a request, not the client that sent it (its ClientID stays
// inside kfake), so the producers that must not be faulted, klt's own and the mappings'
// on-failure producer, are told apart by what their requests say: a Produce request whose
// TimeoutMillis is [ExemptProduceTimeout] (a client made with
// kgo.ProduceRequestTimeout(ExemptProduceTimeout)) is never faulted, and with
// [KafkaFaults.OnlyTopics] set, neither is one that writes to a topic outside them.
type KafkaFaults struct {
	observe func(KafkaExchange)

	mu     sync.Mutex
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
	Fault  bool     // it was answered NOT_LEADER_OR_FOLLOWER
	At     time.Time
}

type kafkaRule struct {
	topic string
	n     int
}

// NewKafkaFaults installs its control function on c's Produce requests; observe, when not
// nil, is called with every request that is not exempt, from kfake's request loop: it must
// be quick and must not call into c.
func NewKafkaFaults(c *kfake.Cluster, observe func(KafkaExchange)) *KafkaFaults {
	k := &KafkaFaults{observe: observe}
	c.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		c.KeepControl()
		return k.control(req)
	})
	return k
}

// OnlyTopics restricts faults to Produce requests that write to these topics only (the
// functions' output topics); nil lifts the restriction.
func (k *KafkaFaults) OnlyTopics(topics []string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.only = nil
	if topics != nil {
		k.only = map[string]bool{}
		for _, t := range topics {
			k.only[t] = true
		}
	}
}

// FailNext fails the next n Produce requests that write to topic ("" for any topic).
func (k *KafkaFaults) FailNext(n int, topic string) {
	if n <= 0 {
		return
	}
	k.mu.Lock()
	defer k.mu.Unlock()
	k.rules = append(k.rules, &kafkaRule{topic: topic, n: n})
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
		x.Topics = append(x.Topics, t.Topic)
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
			rp.ErrorCode = kerr.NotLeaderForPartition.Code
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
