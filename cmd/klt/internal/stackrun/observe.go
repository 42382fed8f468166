package stackrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
	"github.com/twmb/franz-go/pkg/kfake"
)

// The observation layer: everything klt local sees of a stack, written into the ledger.
//
//   - the mappings: an esm.Observer (observation.mappings) turns each Event into steps of
//     the input records it carries (observe_mappings.go);
//   - tables and queues: the functions' AWS endpoints point at fault proxies (internal/
//     faultproxy), one listener per function, whose exchanges are read for the items written
//     and the messages sent, and the record each belongs to (observe_tables.go,
//     observe_queues.go);
//   - failure queues, dead-letter queues and on-failure destinations: a lister that reads
//     every message without deleting it (sink_queues.go);
//   - output topics: a consumer of every topic no mapping reads and klt does not produce to
//     (observe_topics.go);
//   - an external HTTP call: the local HTTP sink a template parameter points at
//     (sink_http.go).
//
// klt's own clients (its producer, its SQS client, the mappings) go to the servers directly
// and are neither observed by the proxies nor faulted.

// observationConfig is what the observation layer watches.
type observationConfig struct {
	Ledger *ledger.Ledger

	// DynamoDBEndpoint and SQSEndpoint are the local servers' own URLs ("" when the stack
	// has no table, or no queue): the proxies forward there.
	DynamoDBEndpoint, SQSEndpoint string
	// SQS is klt's own client of the local SQS server, for the lister.
	SQS *sqs.Client
	// Kafka is the local cluster, Brokers its addresses.
	Kafka   *kfake.Cluster
	Brokers []string
	// KafkaFaultTopics, when not nil, restricts the Kafka faults to Produce requests that
	// write to these topics only (the functions' output topics), so that no other producer
	// takes a fault meant for a function: a mapping's on-failure producer writes to its
	// destination topic. klt's own producer is exempt either way (ExemptProduceTimeout).
	KafkaFaultTopics []string

	// Tables maps a table's name (as the functions address it) to its logical ID.
	Tables map[string]string
	// KeyAttributes names, per table logical ID, the attributes whose value is a record's
	// topic-partition-offset (an item keyed by idempotency.KafkaKey, as a caller names it).
	// Without them, klt reads the idempotency store's key ("<prefix>#<hash of KafkaKey>")
	// from any key attribute, and any string attribute that is exactly
	// topic-partition-offset of a record klt produced.
	KeyAttributes map[string][]string
	// TableKeys names, per table logical ID, the table's key attributes (its KeySchema):
	// two writes of one record to the same key are the record applied twice, two writes to
	// two keys are two targets. Without them, a PutItem's target is its whole item.
	TableKeys map[string][]string
	// Queues maps a queue's logical ID to its URL.
	Queues map[string]string
	// List are the logical IDs of the queues to list without deleting: every queue no
	// mapping reads (failure queues, dead-letter queues, on-failure destinations).
	List []string
	// OutputTopics are the topics no mapping reads and klt does not produce to, each with
	// the function that produces to it ("" when unknown): a consumer reads them for the
	// records the functions produce.
	OutputTopics map[string]string

	// HTTPSink, when not empty, starts the local HTTP sink, under this name (the template
	// parameter its URL goes to); HTTPWork is the time it takes per request.
	HTTPSink string
	HTTPWork time.Duration
}

// observation is the running observation layer. Drive points each function's endpoints at
// it: AWS_ENDPOINT_URL_DYNAMODB = DynamoDB.URL(fn), AWS_ENDPOINT_URL_SQS = SQS.URL(fn), the
// HTTP sink's parameter = HTTP.URL(fn); and each mapping gets mappings (esm.WithObserver).
type observation struct {
	ledger *ledger.Ledger

	// DynamoDB and SQS are the proxies in front of the local servers (nil when the stack has
	// no table, or no queue): URL(fn) for a function's endpoint, FailNext for faults.
	DynamoDB, SQS *faultproxy.Proxy
	// Kafka fails the functions' Produce requests (FailNext); klt's own producer must be
	// made with kgo.ProduceRequestTimeout(faultproxy.ExemptProduceTimeout).
	Kafka *faultproxy.KafkaFaults
	// HTTP is the local HTTP sink, nil without HTTPSink.
	HTTP *httpSink

	tables *tableObserver
	queues *queueObserver
	lister *queueLister
	topics *topicObserver
	cancel context.CancelFunc
	done   []chan struct{}
}

// observedBodies is the cap of the bodies the observers read: whole requests (a
// BatchWriteItem of 25 items of 400 KB, a SendMessageBatch of ten 1 MiB messages), as they
// pass one at a time.
const observedBodies = 32 << 20

// startObservation starts the proxies, the sink, the lister and the output-topic consumer.
// On error, what started is stopped.
func startObservation(ctx context.Context, c observationConfig) (_ *observation, err error) {
	if c.Ledger == nil {
		return nil, errors.New("observation: no ledger")
	}
	o := &observation{ledger: c.Ledger}
	defer func() {
		if err != nil {
			o.close()
		}
	}()
	if c.DynamoDBEndpoint != "" {
		o.tables = newTableObserver(c.Ledger, c.Tables, c.KeyAttributes, c.TableKeys)
		if o.DynamoDB, err = faultproxy.Start(c.DynamoDBEndpoint, faultproxy.WithObserver(o.tables.exchange), faultproxy.WithBodyCap(observedBodies)); err != nil {
			return nil, err
		}
	}
	if c.SQSEndpoint != "" {
		o.queues = newQueueObserver(c.Ledger, c.Queues)
		if o.SQS, err = faultproxy.Start(c.SQSEndpoint, faultproxy.WithObserver(o.queues.exchange), faultproxy.WithBodyCap(observedBodies)); err != nil {
			return nil, err
		}
	}
	if c.Kafka != nil {
		if o.Kafka, err = faultproxy.NewKafkaFaults(c.Kafka, nil); err != nil {
			return nil, err
		}
		if c.KafkaFaultTopics != nil {
			if err := o.Kafka.OnlyTopics(c.KafkaFaultTopics); err != nil {
				return nil, err
			}
		}
	}
	if c.HTTPSink != "" {
		if o.HTTP, err = startHTTPSink(c.Ledger, c.HTTPSink, c.HTTPWork); err != nil {
			return nil, err
		}
	}
	rctx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	o.cancel = cancel
	if len(c.List) > 0 {
		if c.SQS == nil {
			return nil, errors.New("observation: queues to list and no SQS client")
		}
		o.lister = newQueueLister(c.Ledger, c.SQS)
		for _, q := range c.List {
			u, ok := c.Queues[q]
			if !ok {
				return nil, fmt.Errorf("observation: queue %s to list has no URL", q)
			}
			o.lister.watch(u)
			o.run(rctx, func(ctx context.Context) { o.lister.run(ctx, q, u) })
		}
	}
	if len(c.OutputTopics) > 0 {
		if o.topics, err = newTopicObserver(c.Ledger, c.Brokers, c.OutputTopics); err != nil {
			return nil, err
		}
		o.run(rctx, o.topics.run)
	}
	return o, nil
}

func (o *observation) run(ctx context.Context, fn func(context.Context)) {
	done := make(chan struct{})
	o.done = append(o.done, done)
	go func() { defer close(done); fn(ctx) }()
}

// mappings is the observer of every mapping of phase ("" when serving): the events name
// their mapping.
func (o *observation) mappings(phase string) esm.Observer { return mappingObserver{o.ledger, phase} }

// settle waits until the lister has scanned every queue it lists since now and the
// output-topic consumer has read up to the topics' ends as of now, or ctx ends: what the
// accounting then reads includes every message and record that was there.
func (o *observation) settle(ctx context.Context) error {
	if o.lister != nil {
		if err := o.lister.settle(ctx); err != nil {
			return err
		}
	}
	if o.topics != nil {
		if err := o.topics.settle(ctx); err != nil {
			return err
		}
	}
	return nil
}

// problems returns what the observers could not read (a message, an exchange, a record),
// one line each: the report lists them.
func (o *observation) problems() []string {
	var out []string
	if o.tables != nil {
		out = append(out, o.tables.problems()...)
	}
	if o.queues != nil {
		out = append(out, o.queues.problems()...)
	}
	if o.lister != nil {
		out = append(out, o.lister.problems()...)
	}
	if o.topics != nil {
		out = append(out, o.topics.problems()...)
	}
	return out
}

// close stops everything the observation started.
func (o *observation) close() {
	if o.cancel != nil {
		o.cancel()
	}
	for _, d := range o.done {
		<-d
	}
	if o.topics != nil {
		o.topics.close()
	}
	if o.lister != nil {
		o.lister.restore()
	}
	for _, p := range []*faultproxy.Proxy{o.DynamoDB, o.SQS} {
		if p != nil {
			p.Close()
		}
	}
	if o.HTTP != nil {
		o.HTTP.close()
	}
	if o.Kafka != nil {
		o.Kafka.Close()
	}
}
