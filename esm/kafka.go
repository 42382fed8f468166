package esm

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/limits"
)

// Starting positions of a Kafka mapping, for [WithStartingPosition].
const (
	TrimHorizon = "TRIM_HORIZON" // the oldest record of each partition
	Latest      = "LATEST"       // records produced after the group first joins
	AtTimestamp = "AT_TIMESTAMP" // records from a time on (WithStartingTimestamp)
)

// Kafka is an emulated Kafka event source mapping: a consumer group on one topic that invokes
// a function with batches of records, as AWS Lambda's MSK and self-managed Kafka mappings do.
// Make one with [NewKafka] and call [Kafka.Run].
//
// # What it does
//
// The partitions the group assigns are held by pollers: one poller holds them all by default,
// and [WithPollers] spreads them over several (never more pollers than partitions), as a
// provisioned mapping's event pollers are. A poller runs up to 5 invocations at once, as AWS's
// do ("each poller can handle up to 5 concurrent invocations"), and one invocation holds
// records of one or more partitions, as on AWS ("A single Lambda payload can contain messages
// from multiple partitions"): the event's "records" object has one key per partition,
// "topic-N", in ascending order. A partition is in at most one invocation at a time, from the
// moment its records are taken into a batch until they are committed, so each partition's
// records are delivered in offset order, and no other invocation holds them meanwhile.
// [WithOnePartitionPerInvocation] makes every event hold one partition only.
//
// A batch holds up to the batch size (default 100) records in all, and its event is at most
// [limits.MaxLambdaPayloadBytes]. It is filled from the partitions that have records waiting and no records
// in an invocation, in turn: all the waiting records of one partition, then the next
// partition's, starting each batch with the partition after the one the previous batch started
// with. So when records pile up each invocation holds one partition and up to 5 run in
// parallel; when they trickle in, one invocation gathers what waits in every partition. A
// batch that is not full waits for more records for up to the batching window (default 500 ms,
// Kafka's default), counted from the arrival of its oldest record; a full batch is sent at
// once.
//
// Records that FilterCriteria rejects are never delivered; their offsets are committed with
// the next batch of their partition, or at once when no record of it is waiting. A record the
// criteria cannot decide on ([filter.Criteria.MatchKafka] returns an error) is delivered: the
// mapping fails closed and never drops a record it is not sure about.
//
// After each invocation the mapping commits, for each partition of it, the offset after the
// records that are done (succeeded, given up, or filtered out), so a restarted mapping (same
// group ID) goes on where it stopped.
//
// # Errors
//
// When the function fails (Response.Err: an error, a timeout, a crash) every record of the
// invocation failed. With ReportBatchItemFailures, a partial batch response is read per
// partition: each partition it names ("partition": "topic-N") resumes from the lowest offset
// it reports there, and its records before it are done; the partitions it does not name are
// done and committed. A response that names a partition or offset not in the event, or that is
// not valid, fails the whole batch.
//
// Failed records are retried per partition: each partition's failed records go on alone, in
// their own invocations, so one partition's failure does not hold the others back (they go on
// in the next invocations), and the retry rules below count per partition. A partition's
// records are retried up to MaximumRetryAttempts times (infinite by default; 10 when infinite
// and an on-failure destination is set, as AWS does), with a short exponential backoff between
// attempts (100 ms doubling to at most 1 s; AWS does not document one). With bisect on, a
// partition's records that the function failed are split in two and each half retried in turn;
// splitting does not use up a retry (AWS does not say whether it does; this way a single bad
// record is isolated in log2(batch size) invocations). Records older than MaximumRecordAge are
// given up before they are (re)sent. Records given up on together go to the on-failure
// destination, if any, in one on-failure record whose recordsInfo has each partition's range,
// and are then committed: the partition moves on. Without a destination and with infinite
// retries a failing partition is retried forever and never moves past its failing records, as
// on AWS; the other partitions go on.
//
// A record that [Kafka.encodeRecord] refuses (with a schema registry: a schema not found, a
// record it cannot deserialize), or whose event alone would exceed limits.MaxLambdaPayloadBytes, is given up
// alone, in its partition's offset order, with its condition. When the schema registry itself
// fails, the partition's records wait for the backoff and are tried again; a registry that
// fails every try for a minute stops Run.
type Kafka struct {
	cfg      kafkaConfig
	topic    string
	fn       Invoker
	counters Counters

	env     kafkaEnvelope
	encode  func(context.Context, *kgo.Record) ([]byte, string, error) // encodeRecord; tests put faults in front of it
	metrics metricCounts
	obsMu   sync.Mutex // one Observe call at a time

	mu      sync.Mutex
	started bool
	client  atomic.Pointer[kgo.Client]
	runCtx  context.Context
	pollers []*kafkaPoller
	parts   map[int32]*kafkaPart // the partitions assigned, each held by one poller
	fail    func(error)          // stops Run with an error
	failErr error
	kicked  time.Time // when the member was first kicked from the group since it last joined
	lag     map[int32]*partLag
}

type partLag struct {
	hwm       int64 // high watermark: offset after the last record
	committed int64 // offset the group resumes from; -1 when unknown
	next      int64 // offset of the next record to deliver; -1 when none was taken since the assignment
}

// NewKafka returns a mapping that reads topic from the Kafka cluster at brokers (host:port) and
// invokes fn. It checks the options but does not connect: [Kafka.Run] does.
func NewKafka(brokers []string, topic string, fn Invoker, opts ...KafkaOption) (*Kafka, error) {
	c := kafkaConfig{
		mappingConfig: mappingConfig{batchSize: 100, window: 500 * time.Millisecond},
		start:         TrimHorizon, retries: -1, source: kafkaevent.SourceSelfManaged, backoff: backoff, patience: registryPatience, pollers: 1,
	}
	for _, o := range opts {
		o.applyKafka(&c)
	}
	if c.name == "" {
		c.name = topic
	}
	if err := c.check(brokers, topic, fn); err != nil {
		return nil, err
	}
	if c.groupID == "" {
		c.groupID = "klt-esm-" + c.name
	}
	if !c.bootstrapSet {
		c.bootstrap = slices.Clone(brokers)
	}
	if c.functionARN == "" {
		c.functionARN = "arn:aws:lambda:us-east-1:123456789012:function:" + c.name
	}
	if c.onFailure != nil && c.retries == -1 {
		c.retries = 10 // "Lambda automatically applies a maximum of 10 retry attempts"
	}
	c.clientOpts = append([]kgo.Opt{
		kgo.SeedBrokers(brokers...),
		kgo.ConsumerGroup(c.groupID),
		kgo.ConsumeTopics(topic),
		kgo.DisableAutoCommit(),
		kgo.BlockRebalanceOnPoll(),
		// A resumed partition joins the next fetch only when the one in flight ends.
		kgo.FetchMaxWait(250 * time.Millisecond),
	}, c.clientOpts...)
	switch c.start {
	case Latest:
		c.clientOpts = append(c.clientOpts, kgo.ConsumeResetOffset(kgo.NewOffset().AtEnd()))
	case AtTimestamp:
		c.clientOpts = append(c.clientOpts, kgo.ConsumeResetOffset(kgo.NewOffset().AfterMilli(c.startAt.UnixMilli())))
	default:
		c.clientOpts = append(c.clientOpts, kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	}
	m := &Kafka{cfg: c, topic: topic, fn: fn, env: newKafkaEnvelope(c.source, c.sourceARN, c.bootstrap),
		parts: map[int32]*kafkaPart{}, lag: map[int32]*partLag{}}
	m.encode = m.encodeRecord
	return m, nil
}

// check reports every bad setting of c as a *toolkit.OptionError, joined.
func (c *kafkaConfig) check(brokers []string, topic string, fn Invoker) error {
	if len(brokers) == 0 {
		c.reject("brokers", "none")
	}
	if topic == "" {
		c.reject("topic", "empty")
	}
	if f, ok := fn.(InvokerFunc); fn == nil || ok && f == nil {
		c.reject("Invoker", "nil")
	}
	if c.start != TrimHorizon && c.start != Latest && (c.start != AtTimestamp || c.startAt.IsZero()) {
		c.reject("WithStartingPosition", "%q: want TRIM_HORIZON, LATEST, or AT_TIMESTAMP through WithStartingTimestamp", c.start)
	}
	c.checkBatching(limits.MaxKafkaBatchSize, limits.MaxBatchingWindow)
	c.checkMetrics(true)
	if c.retries < -1 || c.retries > limits.MaxRetryAttempts {
		c.reject("WithMaximumRetryAttempts", "%d: want -1 to %d", c.retries, limits.MaxRetryAttempts)
	}
	switch c.source {
	case kafkaevent.SourceMSK:
		if c.sourceARN == "" {
			c.reject("WithEventSource", "aws:kafka needs the cluster ARN")
		}
	case kafkaevent.SourceSelfManaged:
		if c.sourceARN != "" {
			c.reject("WithEventSource", "SelfManagedKafka has no eventSourceArn")
		}
	default:
		c.reject("WithEventSource", "%q: want aws:kafka or SelfManagedKafka", c.source)
	}
	if d, ok := c.onFailure.(kafkaTopicDestination); ok && (d.topic == "" || d.topic == topic) {
		c.reject("WithOnFailure", "topic %q: want a topic other than the source topic", d.topic)
	}
	return c.configErr("Kafka")
}

// Counters returns the mapping's running totals; they are updated while Run runs.
func (m *Kafka) Counters() *Counters { return &m.counters }

// PartitionLag returns, per partition of the topic, the records not yet delivered: the high
// watermark minus the offset of the next record to deliver (before the mapping has taken
// records of a partition, the offset the group would resume from). Records in an invocation,
// or waiting for a retry, are not counted. It is refreshed every 500 ms and as records are
// taken into batches; empty before Run has read the topic's partitions. Counters.Lag is the
// sum over the partitions.
func (m *Kafka) PartitionLag() map[int32]int64 {
	m.mu.Lock()
	defer m.mu.Unlock()
	out := make(map[int32]int64, len(m.lag))
	for p, l := range m.lag {
		out[p] = l.value()
	}
	return out
}

func (l *partLag) value() int64 {
	from := max(l.committed, l.next)
	if from < 0 || l.hwm < from {
		return 0
	}
	return l.hwm - from
}

// offsetLag is AWS's OffsetLag of the partition: the high watermark minus the committed
// offset, the records the group has not processed.
func (l *partLag) offsetLag() int64 {
	if l.committed < 0 || l.hwm < l.committed {
		return 0
	}
	return l.hwm - l.committed
}

// delivering records that the partition's records before next are taken (delivered, or
// filtered out or given up before delivery).
func (m *Kafka) delivering(p int32, next int64) {
	m.mu.Lock()
	if l := m.lag[p]; l != nil && next > l.next {
		l.next = next
	}
	m.mu.Unlock()
	m.sumLag()
}

// single is the length of the event holding one record of pt whose JSON is n bytes long.
func (m *Kafka) single(pt *kafkaPart, n int) int {
	sz := newKafkaSizer(&m.env)
	return sz.with(pt, true, n)
}

// observe reports e to the observer, if any, one event at a time.
func (m *Kafka) observe(e Event) { m.cfg.notify(&m.obsMu, e) }

// Run joins the group and processes records until ctx is done, then returns nil; records in
// an unfinished invocation are not committed and are delivered again by the next Run. It
// returns an error when it cannot go on: the topic does not exist, the cluster is unreachable,
// the Invoker returned an error, a commit failed (one the broker calls retriable is tried
// again for 10 s first), the on-failure destination failed, or the consumer group could not be
// joined again for a minute after the member was kicked from it. Run may be called once.
func (m *Kafka) Run(ctx context.Context) error {
	m.mu.Lock()
	if m.started {
		m.mu.Unlock()
		return fmt.Errorf("esm: kafka mapping %q: Run called twice", m.cfg.name)
	}
	m.started = true
	m.mu.Unlock()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	m.mu.Lock()
	m.runCtx = ctx
	m.fail = func(err error) {
		m.mu.Lock()
		if m.failErr == nil {
			m.failErr = err
		}
		m.mu.Unlock()
		cancel()
	}
	m.mu.Unlock()
	result := func() error {
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.failErr != nil {
			return fmt.Errorf("esm: kafka mapping %q: %w", m.cfg.name, m.failErr)
		}
		return nil
	}

	opts := append(slices.Clone(m.cfg.clientOpts),
		kgo.OnPartitionsAssigned(func(_ context.Context, cl *kgo.Client, assigned map[string][]int32) {
			m.joined()
			m.startWorkers(cl, assigned[m.topic])
		}),
		// kgo calls these in every rebalance, with nothing when nothing moves.
		kgo.OnPartitionsRevoked(func(_ context.Context, _ *kgo.Client, revoked map[string][]int32) {
			m.revokeWorkers(revoked[m.topic])
		}),
		kgo.OnPartitionsLost(func(_ context.Context, _ *kgo.Client, lost map[string][]int32) {
			m.revokeWorkers(lost[m.topic])
		}),
	)
	cl, err := kgo.NewClient(opts...)
	if err != nil {
		return fmt.Errorf("esm: kafka mapping %q: %w", m.cfg.name, err)
	}
	m.client.CompareAndSwap(nil, cl)
	defer func() {
		m.stopWorkers()
		cl.Close()
	}()

	partitions, err := m.partitions(ctx)
	if err != nil {
		if ctx.Err() != nil {
			return result()
		}
		return fmt.Errorf("esm: kafka mapping %q: %w", m.cfg.name, err)
	}
	m.mu.Lock()
	for _, p := range partitions {
		m.lag[p] = &partLag{committed: -1, next: -1}
	}
	m.mu.Unlock()

	lagDone := make(chan struct{})
	go func() { defer close(lagDone); m.refreshLag(ctx, partitions) }()
	defer func() { cancel(); <-lagDone }()

	for {
		fs := cl.PollFetches(ctx)
		if ctx.Err() != nil {
			cl.AllowRebalance()
			return result()
		}
		kicked := m.pollErrors(fs)
		if !kicked && fs.NumRecords() > 0 {
			m.joined()
		}
		fs.EachPartition(func(p kgo.FetchTopicPartition) {
			if p.Topic != m.topic {
				return
			}
			m.mu.Lock()
			pt := m.parts[p.Partition]
			if l := m.lag[p.Partition]; l != nil && p.HighWatermark > l.hwm {
				l.hwm = p.HighWatermark
			}
			m.mu.Unlock()
			if pt != nil && len(p.Records) > 0 {
				pt.poller.push(pt, p.Records)
			}
		})
		cl.AllowRebalance()
	}
}

// pollErrors handles the errors of a poll; it reports whether the member was kicked from the
// group.
func (m *Kafka) pollErrors(fs kgo.Fetches) (kicked bool) {
	for _, fe := range fs.Errors() {
		var dl *kgo.ErrDataLoss
		if errors.As(fe.Err, &dl) {
			continue // kgo resets to the new start of the partition; AWS would too
		}
		if errors.Is(fe.Err, context.Canceled) || errors.Is(fe.Err, kgo.ErrClientClosed) {
			continue
		}
		m.metrics.pollErrors.Add(1)
		var gs *kgo.ErrGroupSession
		if errors.As(fe.Err, &gs) {
			// The member was kicked from the group (its session timed out, the coordinator
			// moved) and kgo joins again: its partitions were revoked as lost, and the next
			// assignment gets them back. Only a group that cannot be joined for a while
			// stops Run.
			kicked = true
			if since := m.kickedSince(); time.Since(since) >= m.cfg.patience {
				m.failRun(fmt.Errorf("the consumer group could not be joined for %v: %w", time.Since(since).Round(time.Second), fe.Err))
			}
			continue
		}
		m.failRun(fmt.Errorf("fetching %s[%d]: %w", fe.Topic, fe.Partition, fe.Err))
	}
	return kicked
}

// kickedSince returns when the member was first kicked from the group since it last joined
// (now, when this is the first time).
func (m *Kafka) kickedSince() time.Time {
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.kicked.IsZero() {
		m.kicked = time.Now()
	}
	return m.kicked
}

// joined records that the member is in the group: it got partitions or records.
func (m *Kafka) joined() {
	m.mu.Lock()
	m.kicked = time.Time{}
	m.mu.Unlock()
}

// partitions reads the topic's partitions from the cluster's metadata.
func (m *Kafka) partitions(ctx context.Context) ([]int32, error) {
	req := kmsg.NewPtrMetadataRequest()
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(m.topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, m.client.Load())
	if err != nil {
		return nil, fmt.Errorf("reading metadata of topic %q: %w", m.topic, err)
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != m.topic {
			continue
		}
		if err := kerr.ErrorForCode(rt.ErrorCode); err != nil {
			return nil, fmt.Errorf("topic %q: %w", m.topic, err)
		}
		var ps []int32
		for _, p := range rt.Partitions {
			ps = append(ps, p.Partition)
		}
		slices.Sort(ps)
		return ps, nil
	}
	return nil, fmt.Errorf("topic %q: not in the metadata", m.topic)
}

// refreshLag reads the partitions' high watermarks (and, for partitions the group has not
// committed, where it would start) every 500 ms until ctx is done.
func (m *Kafka) refreshLag(ctx context.Context, partitions []int32) {
	t := time.NewTicker(500 * time.Millisecond)
	defer t.Stop()
	for {
		latest, err := m.listOffsets(ctx, partitions, -1)
		if err == nil {
			var earliest map[int32]int64
			switch m.cfg.start {
			case TrimHorizon:
				earliest, _ = m.listOffsets(ctx, partitions, -2)
			case AtTimestamp:
				earliest, _ = m.listOffsets(ctx, partitions, m.cfg.startAt.UnixMilli())
			}
			committed := m.client.Load().CommittedOffsets()[m.topic]
			m.mu.Lock()
			for p, l := range m.lag {
				if h, ok := latest[p]; ok && h > l.hwm {
					l.hwm = h
				}
				if l.committed >= 0 {
					continue
				}
				if eo, ok := committed[p]; ok && eo.Offset >= 0 {
					l.committed = eo.Offset
				} else if e, ok := earliest[p]; ok && e >= 0 {
					l.committed = e
				} else if m.cfg.start != TrimHorizon {
					l.committed = l.hwm // LATEST, or no record since the timestamp yet
				}
			}
			m.mu.Unlock()
			m.sumLag()
		}
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
	}
}

func (m *Kafka) listOffsets(ctx context.Context, partitions []int32, ts int64) (map[int32]int64, error) {
	req := kmsg.NewPtrListOffsetsRequest()
	t := kmsg.NewListOffsetsRequestTopic()
	t.Topic = m.topic
	for _, p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, ts, -1
		t.Partitions = append(t.Partitions, rp)
	}
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, m.client.Load())
	if err != nil {
		return nil, err
	}
	out := map[int32]int64{}
	for _, rt := range resp.Topics {
		for _, rp := range rt.Partitions {
			if kerr.ErrorForCode(rp.ErrorCode) == nil {
				out[rp.Partition] = rp.Offset
			}
		}
	}
	return out, nil
}

func (m *Kafka) sumLag() {
	m.mu.Lock()
	var sum int64
	for _, l := range m.lag {
		sum += l.value()
	}
	m.mu.Unlock()
	m.counters.Lag.Store(sum)
}

func (m *Kafka) partitionID(p int32) string { return m.topic + "-" + strconv.FormatInt(int64(p), 10) }

// failRun stops Run, which returns err.
func (m *Kafka) failRun(err error) {
	m.mu.Lock()
	fail := m.fail
	m.mu.Unlock()
	fail(err)
}

// startWorkers gives each newly assigned partition to a poller: a new one while there are
// fewer than WithPollers, otherwise the one holding the fewest partitions.
func (m *Kafka) startWorkers(cl *kgo.Client, ps []int32) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.client.CompareAndSwap(nil, cl)
	for _, num := range ps {
		if m.parts[num] != nil {
			continue
		}
		var p *kafkaPoller
		if len(m.pollers) < m.cfg.pollers {
			p = newKafkaPoller(m)
			m.pollers = append(m.pollers, p)
			go p.run(m.runCtx)
		} else {
			p = m.pollers[0]
			for _, q := range m.pollers[1:] {
				if q.size() < p.size() {
					p = q
				}
			}
		}
		m.parts[num] = p.add(num)
		if l := m.lag[num]; l != nil {
			l.next = -1
		}
	}
}

// stopWorkers stops every poller and waits for them.
func (m *Kafka) stopWorkers() {
	m.mu.Lock()
	pollers := m.pollers
	m.pollers = nil
	clear(m.parts)
	m.mu.Unlock()
	for _, p := range pollers {
		close(p.stop)
	}
	for _, p := range pollers {
		<-p.done
	}
}

// revokeWorkers stops holding the partitions ps, waiting for their invocations under way.
func (m *Kafka) revokeWorkers(ps []int32) {
	m.mu.Lock()
	byPoller := map[*kafkaPoller][]int32{}
	for _, num := range ps {
		if pt := m.parts[num]; pt != nil {
			byPoller[pt.poller] = append(byPoller[pt.poller], num)
			delete(m.parts, num)
		}
	}
	m.mu.Unlock()
	for p, nums := range byPoller {
		p.revoke(nums)
	}
}

// commit commits offsets, the offset after the records done of each partition; the commit is
// not canceled with Run's context, so that records the function finished are not delivered
// again. An error the broker calls retriable (the coordinator loading or moving, a timeout) is
// tried again after the backoff, until the commit's 10 s are over.
func (m *Kafka) commit(ctx context.Context, offsets map[int32]kgo.EpochOffset) error {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 10*time.Second)
	defer cancel()
	var cerr error
	for try := 1; ; try++ {
		cerr = m.commitOnce(ctx, offsets)
		if cerr == nil || !kerr.IsRetriable(cerr) || ctx.Err() != nil {
			break
		}
		t := time.NewTimer(m.cfg.backoff(try))
		select {
		case <-t.C:
		case <-ctx.Done():
		}
		t.Stop()
	}
	if cerr != nil {
		m.metrics.commitErrors.Add(1)
		return fmt.Errorf("committing offsets %v: %w", offsets, cerr)
	}
	m.mu.Lock()
	for p, eo := range offsets {
		if l := m.lag[p]; l != nil {
			l.committed = eo.Offset
		}
	}
	m.mu.Unlock()
	m.sumLag()
	return nil
}

// commitOnce sends one commit of offsets; its error is the request's, or a partition's.
func (m *Kafka) commitOnce(ctx context.Context, offsets map[int32]kgo.EpochOffset) error {
	var cerr error
	m.client.Load().CommitOffsetsSync(ctx, map[string]map[int32]kgo.EpochOffset{m.topic: offsets}, func(_ *kgo.Client, _ *kmsg.OffsetCommitRequest, resp *kmsg.OffsetCommitResponse, err error) {
		if err != nil {
			cerr = err
			return
		}
		for _, t := range resp.Topics {
			for _, rp := range t.Partitions {
				if err := kerr.ErrorForCode(rp.ErrorCode); err != nil {
					cerr = fmt.Errorf("%s: %w", m.partitionID(rp.Partition), err)
				}
			}
		}
	})
	return cerr
}
