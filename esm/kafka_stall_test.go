package esm

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"runtime/pprof"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/filter"
	"github.com/kafkalambda/toolkit/kafkaevent"
)

// The stall stress test drives a Kafka mapping on kfake under load: random partition counts,
// batch sizes, windows, pollers and invocation times; function errors and partial batch
// failures; faults of the cluster (rebalances forced through heartbeats, a member lost, a
// second member joining and leaving, fetch and commit errors a client retries) and of the
// schema registry (one record in 20 cannot be encoded); filters, an on-failure topic, finite
// retries, floods that pause and resume fetching. A round ends when every record is committed. It fails when the mapping stalls: records not committed and
// no progress (invocation, record fetched, offset committed) for stallPolls poll intervals;
// then it writes every goroutine's stack (pprof, debug=2) to a file and the pollers' state to
// the log.
//
// In CI it runs stallRoundsCI short rounds (a few hundred records, no slow invocation, windows
// of at most 100 ms: seconds in all), from a seed it logs. To hunt a stall, run many long ones
// (up to 3,700 records, 1 s windows, invocations of up to 4 s):
//
//	ESM_STALL_ROUNDS=200 ESM_STALL_LONG=1 go test -race -count=1 -run TestKafkaStallStress ./esm/
//
// (ESM_STALL_SEED=N replays the rounds from seed N; ESM_STALL_DEBUG=7s also dumps the
// goroutines and the pollers' state 7 s into each round.)

const (
	stallRoundsCI = 4
	// stallPolls is how many poll intervals (kgo's FetchMaxWait, 250 ms) without progress make
	// a stall: far more than any pause the round allows (a backoff is at most 1 s, a window
	// 1 s, an invocation 4 s).
	stallPolls = 60
	pollEvery  = 250 * time.Millisecond
)

func TestKafkaStallStress(t *testing.T) {
	rounds := stallRoundsCI
	if s := os.Getenv("ESM_STALL_ROUNDS"); s != "" {
		n, err := strconv.Atoi(s)
		if err != nil {
			t.Fatalf("ESM_STALL_ROUNDS=%q: %v", s, err)
		}
		rounds = n
	}
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("ESM_STALL_SEED"); s != "" {
		n, err := strconv.ParseUint(s, 10, 64)
		if err != nil {
			t.Fatalf("ESM_STALL_SEED=%q: %v", s, err)
		}
		seed = n
	}
	long := os.Getenv("ESM_STALL_LONG") != ""
	start := time.Now()
	for i := range rounds {
		s := seed + uint64(i)
		ok := t.Run(fmt.Sprintf("seed=%d", s), func(t *testing.T) {
			stallRound(t, rand.New(rand.NewPCG(s, 0x5eed)), long)
		})
		if !ok {
			break
		}
	}
	t.Logf("%d rounds in %v", rounds, time.Since(start).Round(time.Millisecond))
}

// stallPlan is one round's random choices.
type stallPlan struct {
	partitions   int32
	records      int
	batchSize    int
	window       time.Duration
	pollers      int
	onePartition bool
	report       bool
	bisect       bool
	maxDelay     time.Duration
	errRate      float64 // an invocation fails as a whole
	partRate     float64 // an invocation reports a partial batch failure
	faults       []string
	second       bool          // a second member joins the group for a while
	filter       bool          // FilterCriteria drops a third of the records
	destination  bool          // an on-failure topic (and so 10 retries by default)
	retries      int           // MaximumRetryAttempts; -1 for the default
	slowRate     float64       // an invocation takes 1 to 2 s (a function timing out, a slow sink)
	flood        bool          // records produced at once into few partitions, more than a partition buffers (fetching paused and resumed)
	atTimestamp  bool          // AT_TIMESTAMP from the round's start, as klt local starts each phase's mappings
	perRecord    time.Duration // an invocation takes this long per record more (make demo's sink: 300 ms an order)
}

func newStallPlan(r *rand.Rand, long bool) stallPlan {
	p := stallPlan{
		partitions:   1 + r.Int32N(8),
		records:      50 + r.IntN(300),
		batchSize:    1 + r.IntN(300),
		window:       time.Duration(r.IntN(100)) * time.Millisecond,
		pollers:      1 + r.IntN(3),
		onePartition: r.IntN(3) == 0,
		report:       r.IntN(2) == 0,
		bisect:       r.IntN(3) == 0,
		maxDelay:     time.Duration(r.IntN(40)) * time.Millisecond,
		errRate:      []float64{0, 0.05, 0.2}[r.IntN(3)],
		partRate:     []float64{0, 0.1, 0.3}[r.IntN(3)],
		second:       r.IntN(4) == 0,
	}
	if long {
		p.records = 100 + r.IntN(3000)
	}
	switch r.IntN(5) {
	case 0:
		p.batchSize = 10000
	case 1:
		p.batchSize = 500
	}
	if long && r.IntN(5) == 0 {
		p.window = time.Second
	}
	p.filter = r.IntN(3) == 0
	p.destination = r.IntN(3) == 0
	p.retries = []int{-1, -1, 0, 1, 3}[r.IntN(5)]
	p.atTimestamp = r.IntN(3) == 0
	if r.IntN(4) == 0 {
		p.perRecord = time.Duration(1+r.IntN(3)) * time.Millisecond
	}
	if long && r.IntN(4) == 0 {
		p.slowRate = 0.02
	}
	if r.IntN(4) == 0 {
		// More than a partition buffers (1,000 records with these batch sizes): fetching
		// is paused and resumed.
		p.flood = true
		p.partitions = 1
		p.batchSize = 1 + r.IntN(100)
		p.records = 1100 + r.IntN(500)
		if long {
			p.partitions = 1 + r.Int32N(2)
			p.records = 2200 + r.IntN(1500)
		}
	}
	for _, f := range []string{"rebalance", "lost", "fetch", "commit", "registry"} {
		if r.IntN(3) == 0 {
			p.faults = append(p.faults, f)
		}
	}
	return p
}

// stallFunction answers at random: a delay, then success, a function error or a partial batch
// failure; a record fails at most twice, so every round ends.
type stallFunction struct {
	plan stallPlan
	mu   sync.Mutex
	r    *rand.Rand
	fail map[string]int // "partition/offset": failures so far
}

func (f *stallFunction) Invoke(ctx context.Context, payload []byte) (Response, error) {
	ev, err := kafkaevent.Parse(payload)
	if err != nil {
		return Response{}, fmt.Errorf("the mapping sent an event kafkaevent.Parse rejects: %w", err)
	}
	f.mu.Lock()
	delay := time.Duration(0)
	if f.plan.maxDelay > 0 {
		delay = time.Duration(f.r.Int64N(int64(f.plan.maxDelay)))
	}
	if f.r.Float64() < f.plan.slowRate {
		delay = time.Second + time.Duration(f.r.Int64N(int64(time.Second)))
	}
	x := f.r.Float64()
	var recs []*kafkaevent.Record
	for r := range ev.All() {
		recs = append(recs, r)
	}
	pick := f.r.IntN(len(recs))
	f.mu.Unlock()
	delay += min(time.Duration(len(recs))*f.plan.perRecord, 2*time.Second)
	if delay > 0 {
		t := time.NewTimer(delay)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return Response{}, ctx.Err()
		}
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	may := func(rs []*kafkaevent.Record) bool {
		for _, r := range rs {
			if f.fail[fmt.Sprint(r.Partition, "/", r.Offset)] >= 2 {
				return false
			}
		}
		for _, r := range rs {
			f.fail[fmt.Sprint(r.Partition, "/", r.Offset)]++
		}
		return true
	}
	switch {
	case x < f.plan.errRate && may(recs):
		return kafkaFailed("stress: function error"), nil
	case f.plan.report && x < f.plan.errRate+f.plan.partRate:
		bad := recs[pick]
		var from []*kafkaevent.Record
		for _, r := range recs {
			if r.Partition == bad.Partition && r.Offset >= bad.Offset {
				from = append(from, r)
			}
		}
		if may(from) {
			return Response{Payload: fmt.Appendf(nil, `{"batchItemFailures":[{"itemIdentifier":{"partition":"%s-%d","offset":%d}}]}`, bad.Topic, bad.Partition, bad.Offset)}, nil
		}
	}
	return Response{Payload: []byte(`{}`)}, nil
}

func stallRound(t *testing.T, r *rand.Rand, long bool) {
	plan := newStallPlan(r, long)
	t.Logf("plan: %+v", plan)
	const topic = "stress"
	f := newKafkaFixture(t, topic, plan.partitions, topic+"-failures")
	fn := &stallFunction{plan: plan, r: rand.New(rand.NewPCG(r.Uint64(), 1)), fail: map[string]int{}}
	group := "stress-group"
	opts := stallOptions(t, plan, topic, group)
	stallFaults(f.cluster, rand.New(rand.NewPCG(r.Uint64(), 2)), plan, topic, group)
	pr := rand.New(rand.NewPCG(r.Uint64(), 3))      // the producer's
	secondAt, secondFor := r.IntN(20), 4+r.IntN(20) // in poll intervals
	m, err := NewKafka(f.brokers(), topic, fn, opts...)
	if err != nil {
		t.Fatal(err)
	}
	if slices.Contains(plan.faults, "registry") {
		registryFaults(m, rand.New(rand.NewPCG(r.Uint64(), 4)))
	}
	stop := runKafka(t, m)
	maps := []*Kafka{m}

	produced := make(chan error, 1)
	go func() { produced <- stallProduce(f, pr, plan, topic) }()

	if d := os.Getenv("ESM_STALL_DEBUG"); d != "" {
		at, _ := time.ParseDuration(d)
		time.AfterFunc(at, func() { t.Logf("debug dump: %s\n%s", dumpGoroutines(t), m.stallState()) })
	}
	var second *Kafka
	var stopSecond func() error

	var last string
	still := 0
	producing := true
	for tick := 0; ; tick++ {
		time.Sleep(pollEvery)
		if producing {
			select {
			case err := <-produced:
				if err != nil {
					t.Fatalf("producing: %v", err)
				}
				producing = false
			default:
			}
		}
		if plan.second && tick == secondAt {
			second, err = NewKafka(f.brokers(), topic, fn, opts...)
			if err != nil {
				t.Fatal(err)
			}
			if slices.Contains(plan.faults, "registry") {
				registryFaults(second, rand.New(rand.NewPCG(r.Uint64(), 5)))
			}
			stopSecond = runKafka(t, second)
			maps = append(maps, second)
		}
		if stopSecond != nil && tick == secondAt+secondFor {
			if err := stopSecond(); err != nil {
				t.Fatalf("second member: %v", err)
			}
			stopSecond = nil
		}
		for _, k := range maps {
			if err := k.runErr(); err != nil {
				t.Fatalf("Run stopped: %v", err)
			}
		}
		committed := f.committed(group, plan.partitions)
		hwm := stallHighWatermarks(t, f, topic, plan.partitions)
		lag, done := int64(0), !producing && stopSecond == nil
		for p, h := range hwm {
			if c := committed[p]; c < h {
				lag += h - max(c, 0)
				done = false
			}
		}
		if done {
			if err := stop(); err != nil {
				t.Fatal(err)
			}
			return
		}
		sig := fmt.Sprint(committed, hwm)
		for _, k := range maps {
			c := k.Counters()
			sig += fmt.Sprint(c.Invocations.Load(), c.In.Load(), c.Succeeded.Load(), c.DeadLettered.Load())
		}
		if sig != last {
			last, still = sig, 0
			continue
		}
		if still++; still < stallPolls {
			continue
		}
		path := dumpGoroutines(t)
		var state strings.Builder
		for i, k := range maps {
			fmt.Fprintf(&state, "mapping %d: %s\n", i, k.stallState())
		}
		t.Fatalf("stalled: lag %d (committed %v, high watermarks %v), no progress for %d poll intervals;\n%sgoroutines: %s",
			lag, committed, hwm, stallPolls, state.String(), path)
	}
}

// stallProduce writes the plan's records: bursts of random size to random partitions, with
// pauses (a flood: bursts of 1,000, at once).
func stallProduce(f *kafkaFixture, pr *rand.Rand, plan stallPlan, topic string) error {
	n := 0
	for n < plan.records {
		k := min(plan.records-n, 1+pr.IntN(200))
		if plan.flood {
			k = min(plan.records-n, 1000)
		}
		recs := make([]*kgo.Record, k)
		for i := range recs {
			recs[i] = &kgo.Record{Topic: topic, Partition: pr.Int32N(plan.partitions), Value: fmt.Appendf(nil, `{"n":%d,"keep":%v}`, n+i, (n+i)%3 != 0)}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		err := f.prod.ProduceSync(ctx, recs...).FirstErr()
		cancel()
		if err != nil {
			return err
		}
		n += k
		if !plan.flood {
			time.Sleep(time.Duration(pr.IntN(50)) * time.Millisecond)
		}
	}
	return nil
}

// stallOptions are the mapping's options for plan.
func stallOptions(t *testing.T, plan stallPlan, topic, group string) []KafkaOption {
	opts := []KafkaOption{WithGroupID(group), WithBatchSize(plan.batchSize), WithBatchingWindow(plan.window), WithPollers(plan.pollers)}
	if plan.onePartition {
		opts = append(opts, WithOnePartitionPerInvocation())
	}
	if plan.report {
		opts = append(opts, WithReportBatchItemFailures())
	}
	if plan.bisect {
		opts = append(opts, WithBisectBatchOnFunctionError())
	}
	if plan.filter {
		crit, err := filter.ParseCriteria([]byte(`{"Filters":[{"Pattern":"{\"value\":{\"keep\":[true]}}"}]}`))
		if err != nil {
			t.Fatal(err)
		}
		opts = append(opts, WithFilter(crit))
	}
	if plan.destination {
		opts = append(opts, WithOnFailure(OnFailureKafkaTopic(topic+"-failures")))
	}
	if plan.retries >= 0 {
		opts = append(opts, WithMaximumRetryAttempts(plan.retries))
	}
	if plan.atTimestamp {
		opts = append(opts, WithStartingTimestamp(time.Now()))
	}
	return opts
}

// stallFaults installs the plan's cluster faults: each fires at random, on a share of the
// requests, until the round ends.
func stallFaults(c *kfake.Cluster, r *rand.Rand, plan stallPlan, topic, group string) {
	var mu sync.Mutex
	every := func(n int) func(kmsg.Request) bool {
		return func(kmsg.Request) bool {
			mu.Lock()
			defer mu.Unlock()
			return r.IntN(n) == 0
		}
	}
	for _, name := range plan.faults {
		var fl kfake.Fault
		switch name {
		case "rebalance": // the coordinator asks the member to rejoin
			fl = kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, TopLevel: true, Err: kerr.RebalanceInProgress, When: every(5)}
		case "lost": // the coordinator forgot the member: its partitions are lost
			fl = kfake.Fault{Keys: []kmsg.Key{kmsg.Heartbeat}, Group: group, TopLevel: true, Err: kerr.UnknownMemberID, When: every(15)}
		case "fetch":
			fl = kfake.Fault{Keys: []kmsg.Key{kmsg.Fetch}, Topic: topic, Err: kerr.NotLeaderForPartition, When: every(10)}
		case "commit":
			fl = kfake.Fault{Keys: []kmsg.Key{kmsg.OffsetCommit}, Group: group, Err: kerr.CoordinatorLoadInProgress, When: every(40)}
		default:
			continue // not the cluster's (registry)
		}
		fl.Count = -1
		c.Fault(fl)
	}
}

// registryFaults makes one record in 20 fail to encode, as when the schema registry does not
// answer: the partition's records wait for the backoff and are tried again.
func registryFaults(m *Kafka, r *rand.Rand) {
	var mu sync.Mutex
	encode := m.encode
	m.encode = func(ctx context.Context, rec *kgo.Record) ([]byte, string, error) {
		mu.Lock()
		fail := r.IntN(20) == 0
		mu.Unlock()
		if fail {
			return nil, "", errors.New("stress: the schema registry did not answer")
		}
		return encode(ctx, rec)
	}
}

// stallHighWatermarks reads the topic's high watermarks.
func stallHighWatermarks(t *testing.T, f *kafkaFixture, topic string, partitions int32) map[int32]int64 {
	t.Helper()
	req := kmsg.NewPtrListOffsetsRequest()
	rt := kmsg.NewListOffsetsRequestTopic()
	rt.Topic = topic
	for p := range partitions {
		rp := kmsg.NewListOffsetsRequestTopicPartition()
		rp.Partition, rp.Timestamp, rp.CurrentLeaderEpoch = p, -1, -1
		rt.Partitions = append(rt.Partitions, rp)
	}
	req.Topics = append(req.Topics, rt)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, f.prod)
	if err != nil {
		t.Fatalf("listing offsets: %v", err)
	}
	out := map[int32]int64{}
	for _, t := range resp.Topics {
		for _, p := range t.Partitions {
			out[p.Partition] = p.Offset
		}
	}
	return out
}

// dumpGoroutines writes every goroutine's stack to a file that outlives the test, and returns
// its path.
func dumpGoroutines(t *testing.T) string {
	fh, err := os.CreateTemp("", "esm-stall-*.txt")
	if err != nil {
		t.Errorf("goroutine dump: %v", err)
		return ""
	}
	defer fh.Close()
	if err := pprof.Lookup("goroutine").WriteTo(fh, 2); err != nil {
		t.Errorf("goroutine dump: %v", err)
	}
	return fh.Name()
}

// runErr is the error Run stopped with, if it did.
func (m *Kafka) runErr() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.failErr
}

// stallState describes the pollers: per partition what waits, what is taken, what is paused.
func (m *Kafka) stallState() string {
	m.mu.Lock()
	pollers := append([]*kafkaPoller(nil), m.pollers...)
	lag := map[int32]partLag{}
	for p, l := range m.lag {
		lag[p] = *l
	}
	m.mu.Unlock()
	var b strings.Builder
	fmt.Fprintf(&b, "lag %+v\n", lag)
	if cl := m.client.Load(); cl != nil {
		fmt.Fprintf(&b, "  kgo paused: %v\n", cl.PauseFetchPartitions(nil))
	}
	for i, p := range pollers {
		p.mu.Lock()
		fmt.Fprintf(&b, "  poller %d: running %d, pending %d\n", i, p.running, len(p.pending))
		for _, pt := range p.parts {
			fmt.Fprintf(&b, "    %s: inbox %d queue %d span %d buffered %d paused %v inflight %v revoked %v\n",
				pt.id, len(pt.inbox), len(pt.queue), len(pt.span), pt.buffered, pt.paused, pt.inflight, pt.revoked.Load())
		}
		p.mu.Unlock()
	}
	return b.String()
}

// holdObserver blocks the mapping's report that invocation 1 succeeded, which the attempt makes
// after it committed its records and before it ends, until another invocation started or wait
// passed; early is set when one started meanwhile.
type holdObserver struct {
	m     *Kafka
	wait  time.Duration
	early atomic.Bool
}

func (o *holdObserver) Observe(e Event) {
	if e.Kind != Succeeded || e.Invocation != 1 {
		return
	}
	deadline := time.Now().Add(o.wait)
	for time.Now().Before(deadline) {
		if o.m.Counters().Invocations.Load() > 1 {
			o.early.Store(true)
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// TestKafkaPartitionHeldUntilItsAttemptEnds: a partition is in at most one attempt at a time,
// from the moment its records are taken until the attempt that holds them has ended, not only
// until they are committed. Before, an attempt that had committed its whole span but not yet
// ended (here: held in its report of the success) left the partition free in take() while
// inflight still marked it; the next batch was taken into a second attempt, the first then
// cleared inflight under it, and a retry of the second's records ran beside it: two commits
// cut the partition's span at once (the stress test's panic "slice bounds out of range"
// in commitDone), or an invocation of the partition ran while another held it.
//
// The observer holds the first attempt for up to 2 s: on the fixed code no invocation starts
// meanwhile, whatever the load; on the old one the second started within milliseconds.
func TestKafkaPartitionHeldUntilItsAttemptEnds(t *testing.T) {
	t.Parallel()
	f := newKafkaFixture(t, "held", 1)
	f.produceN(0, 2)
	fn := newKafkaFunction(t, nil)
	obs := &holdObserver{wait: 2 * time.Second}
	m, err := NewKafka(f.brokers(), f.topic, fn, WithGroupID("g"), WithBatchSize(1), WithBatchingWindow(0), WithObserver(obs))
	if err != nil {
		t.Fatal(err)
	}
	obs.m = m
	runKafka(t, m)
	kafkaWaitFor(t, 30*time.Second, "both records committed", func() bool { return f.committed("g", 1)[0] == 2 })
	if obs.early.Load() {
		t.Error("the second invocation of the partition started while the attempt holding it had not ended")
	}
}
