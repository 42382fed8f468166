package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/internal/esm"
	"github.com/kafkalambda/toolkit/internal/lambdaemu"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ordersAPIParam is the template parameter klt local serves its local orders API to.
const ordersAPIParam = "OrdersApiUrl"

// localConfig is the command line of klt local.
type localConfig struct {
	template     string
	loads        countFlag // pipeline (its first function) -> records; "" = every pipeline
	partitions   countFlag // topic -> partitions; "" = every topic
	rate         float64
	keys         int
	work         time.Duration
	faults       int
	report       string
	logs         string
	phaseTimeout time.Duration
	params       paramsFlag
}

// paramsFlag is a repeatable flag of NAME=VALUE template parameter values.
type paramsFlag map[string]string

func (f paramsFlag) String() string {
	var parts []string
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func (f paramsFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	f[name] = value
	return nil
}

// countFlag is a repeatable flag of N or NAME=N values.
type countFlag map[string]int

func (f countFlag) String() string {
	var parts []string
	for k, v := range f {
		if k == "" {
			parts = append(parts, strconv.Itoa(v))
		} else {
			parts = append(parts, k+"="+strconv.Itoa(v))
		}
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

func (f countFlag) Set(s string) error {
	name, num, ok := strings.Cut(s, "=")
	if !ok {
		name, num = "", s
	}
	n, err := strconv.Atoi(num)
	if err != nil || n < 1 {
		return fmt.Errorf("want N or NAME=N with N a whole number from 1, got %q", s)
	}
	f[name] = n
	return nil
}

// get returns the value for name, else the value for every name, else def.
func (f countFlag) get(name string, def int) int {
	if n, ok := f[name]; ok {
		return n
	}
	if n, ok := f[""]; ok {
		return n
	}
	return def
}

func newLocalFlags(c *localConfig) *flag.FlagSet {
	c.loads, c.partitions, c.params = countFlag{}, countFlag{}, paramsFlag{}
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.StringVar(&c.template, "template", "template.yaml", "the SAM `FILE` of the stack")
	fs.Var(c.loads, "load", "produce `N` records for each pipeline (PIPELINE=N: the one starting at that function), report")
	fs.Var(c.partitions, "partitions", "the partitions of every topic (`N`), or TOPIC=N (repeatable; default 1)")
	fs.Float64Var(&c.rate, "rate", 0, "produce the load at `R` records per second (0: as fast as Kafka takes them)")
	fs.IntVar(&c.keys, "keys", 100, "spread the load over `K` record keys (customers)")
	fs.DurationVar(&c.work, "work", 0, "how long the local orders API takes per order (`D`, e.g. 300ms)")
	fs.IntVar(&c.faults, "faults", 0, "then run every pipeline at once on `N` records with three faults (0: none)")
	fs.StringVar(&c.report, "report", "", "write report.json, report.html and report.svg to `DIR`")
	fs.StringVar(&c.logs, "logs", "", "write the functions' logs to `DIR`/<Function>.log (default: DIR/logs of --report, or a temp dir)")
	fs.Var(c.params, "parameter-overrides", "give the template parameter NAME the value VALUE (`NAME=VALUE`, repeatable)")
	fs.DurationVar(&c.phaseTimeout, "phase-timeout", 5*time.Minute, "give up on a phase's records after `D`: those not accounted for are lost")
	return fs
}

// runLocal runs "klt local".
func runLocal(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c localConfig
	fs := newLocalFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	if len(args) != 0 {
		return base.UsageError(stderr, "local", fmt.Errorf("unexpected argument %q", args[0]))
	}
	if c.keys < 1 || c.rate < 0 || c.work < 0 || c.faults < 0 || c.phaseTimeout <= 0 {
		return base.UsageError(stderr, "local", errors.New("--keys must be at least 1; --rate, --work and --faults at least 0; --phase-timeout positive"))
	}
	if c.faults > 0 && c.faults < 10 {
		return base.UsageError(stderr, "local", fmt.Errorf("--faults %d: want at least 10 records, so that the three faults fall on different records with others between them", c.faults))
	}
	if c.faults > 0 && len(c.loads) == 0 {
		return base.UsageError(stderr, "local", errors.New("--faults needs --load: the faults run after the load"))
	}
	if err := localMain(ctx, c, stdout, stderr); err != nil {
		base.Errorf(stderr, "local: %v", err)
		return base.ExitFail
	}
	return base.ExitOK
}

// stack is a running local stack: the servers, the functions' instances, the mappings' specs.
type stack struct {
	c         localConfig
	t         *invokeTemplate
	ls        *localStack
	sqsClient *sqs.Client
	brokers   []string
	kafka     *kfake.Cluster
	producer  *kgo.Client
	api       *ordersAPI // nil without the OrdersApiUrl parameter
	drains    *drains
	specs     []*mappingSpec
	pools     map[string]*lambdaemu.Pool // by function
	functions map[string]*functionSpec
	pipelines []*pipeline
	logDir    string
	logFiles  []*os.File
	logs      map[string]*lockedWriter // by function: its processes' lines and klt's about it
	timeouts  *timeoutFaults
	out       io.Writer
}

// pipeline is a chain of mappings that starts at a Kafka mapping: its function, and when that
// function sends to a queue that another mapping reads, that mapping's function, and so on.
type pipeline struct {
	name      string // the functions joined by " -> "
	functions []string
	specs     []*mappingSpec
	topic     string
	queues    map[string]bool // logical IDs of the queues its records can be dead-lettered to

	filteredKeys map[string]bool // record key -> filtered out (stack.filtered's answers)
}

// applier returns the function that applies the records (the last one).
func (p *pipeline) applier() string { return p.functions[len(p.functions)-1] }

func localMain(ctx context.Context, c localConfig, stdout, stderr io.Writer) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("klt local runs functions as Linux processes and freezes them to inject timeouts; this is %s", runtime.GOOS)
	}
	s := &stack{c: c, out: stdout, pools: map[string]*lambdaemu.Pool{}, functions: map[string]*functionSpec{}}
	defer s.stop()
	if err := s.start(ctx, stderr); err != nil {
		return err
	}
	if len(c.loads) == 0 {
		return s.serve(ctx)
	}
	return s.loadAndReport(ctx)
}

// start reads the template, starts the servers, builds and starts the functions.
func (s *stack) start(ctx context.Context, stderr io.Writer) error {
	t, err := readInvokeTemplate(s.c.template)
	if err != nil {
		return err
	}
	s.t = t
	// The sample template's cluster parameters, for a self-managed cluster (the local one):
	// its self-managed mappings run. --parameter-overrides sets these and any others.
	params := map[string]string{"KafkaClusterArn": "", "KafkaAuth": "plaintext", "KafkaBootstrapServers": "127.0.0.1:9092"}
	for k, v := range s.c.params {
		params[k] = v
	}
	r, err := newLocalResolver(t, params)
	if err != nil {
		return err
	}
	specs, skipped, err := localMappings(t, r)
	if err != nil {
		return err
	}
	for _, sk := range skipped {
		fmt.Fprintf(s.out, "klt local: %s (%s of %s) is not emulated: klt local runs Kafka and SQS event source mappings only\n", sk.id, sk.typ, sk.function)
	}
	for _, m := range specs {
		if m.enabled {
			s.specs = append(s.specs, m)
		} else {
			fmt.Fprintf(s.out, "klt local: %s is disabled (Enabled: false) in the template\n", m.id)
		}
	}
	if len(s.specs) == 0 {
		return fmt.Errorf("%s has no Kafka or SQS event source mapping to run", s.c.template)
	}

	// Servers: all the template's tables and queues.
	ls, err := startLocal(ctx, t, needs{ddb: true, sqs: true})
	s.ls = ls
	if err != nil {
		return err
	}
	ls.r.params = params
	s.sqsClient = ls.sqs.Client()

	// The functions each mapping invokes, and their environments.
	var names []string
	for _, m := range s.specs {
		if _, ok := s.functions[m.function]; !ok {
			f, err := t.function(m.function)
			if err != nil {
				return err
			}
			s.functions[m.function] = f
			names = append(names, m.function)
		}
	}
	sort.Strings(names)
	vars := map[string]map[string]string{}
	if _, p := mapGet(t.params, ordersAPIParam); p != nil {
		if s.api, err = startOrdersAPI(s.c.work); err != nil {
			return err
		}
	}
	var topics []string
	for _, fn := range names {
		if s.api != nil {
			params[ordersAPIParam] = s.api.url(fn)
		}
		v, err := ls.vars(s.functions[fn], nil)
		if err != nil {
			return err
		}
		vars[fn] = v
		topics = append(topics, topicsOf(v)...)
	}
	for _, m := range s.specs {
		topics = append(topics, m.topics...)
		if t, ok := strings.CutPrefix(m.onFailure, "kafka://"); ok {
			topics = append(topics, t)
		}
	}
	if err := s.startKafka(topics); err != nil {
		return err
	}
	params["KafkaBootstrapServers"] = strings.Join(s.brokers, ",")
	s.pipelines = pipelinesOf(s.specs, vars, ls.r.queueURLs, s.deadLetterQueueOf)
	for _, p := range s.pipelines {
		for _, m := range p.specs {
			if q, ok := queueByARN(ls.r, m.onFailure); ok {
				p.queues[q] = true
			}
		}
	}

	// Builds, one at a time: each go build uses every core, and the functions share most of
	// their packages, which the first build compiles and the next ones find in the cache.
	work, err := os.MkdirTemp("", "klt-local-")
	if err != nil {
		return err
	}
	ls.stops = append(ls.stops, func() { os.RemoveAll(work) })
	if err := s.openLogs(); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "klt local: building %s\n", strings.Join(names, ", "))
	start := time.Now()
	boots := make([]string, len(names))
	errs := make([]error, len(names))
	var wg sync.WaitGroup
	sem := make(chan struct{}, 1)
	for i, fn := range names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			sem <- struct{}{}
			defer func() { <-sem }()
			boots[i], errs[i] = buildBootstrap(ctx, s.functions[fn], filepath.Join(work, fn), stderr)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(s.out, "klt local: built in %.1fs\n", time.Since(start).Seconds())

	s.timeouts = &timeoutFaults{}
	appliers := map[string]bool{}
	for _, p := range s.pipelines {
		appliers[p.applier()] = true
	}
	for i, fn := range names {
		f := s.functions[fn]
		logf, err := s.logFile(fn)
		if err != nil {
			return err
		}
		cfg := lambdaemu.Config{
			Name:      fn,
			Bootstrap: boots[i],
			Env:       functionEnv(f, vars[fn], ls.endpoints, nil),
			Timeout:   time.Duration(f.timeout) * time.Second,
			Logs: func(instance int, line []byte) {
				fmt.Fprintf(logf, "[%d] %s\n", instance, line)
			},
		}
		if appliers[fn] { // the timeout fault freezes the function that applies the record
			cfg.OnEvent = s.timeouts.onEvent(fn)
		}
		pool, err := lambdaemu.Start(cfg)
		if err != nil {
			return err
		}
		s.pools[fn] = pool
	}

	// The drains: every queue no mapping reads.
	s.drains = &drains{client: s.sqsClient}
	read := map[string]bool{}
	for _, m := range s.specs {
		if m.kind == sqsMapping {
			read[m.queue] = true
		}
	}
	dctx, cancel := context.WithCancel(context.Background())
	var dwg sync.WaitGroup
	for id, u := range ls.r.queueURLs {
		if !read[id] {
			dwg.Add(1)
			go func() { defer dwg.Done(); s.drains.run(dctx, id, u) }()
		}
	}
	ls.stops = append(ls.stops, func() { cancel(); dwg.Wait() })
	return nil
}

// startKafka starts kfake with the topics, each with its partitions.
func (s *stack) startKafka(topics []string) error {
	byCount := map[int][]string{}
	seen := map[string]bool{}
	for _, t := range topics {
		if t == "" || seen[t] {
			continue
		}
		seen[t] = true
		n := s.c.partitions.get(t, 1)
		byCount[n] = append(byCount[n], t)
	}
	for t := range s.c.partitions {
		if t != "" && !seen[t] {
			return fmt.Errorf("--partitions %s: the stack has no topic %q (topics: %s)", t, t, strings.Join(keysOf(seen), ", "))
		}
	}
	opts := []kfake.Opt{kfake.NumBrokers(1), kfake.AllowAutoTopicCreation()}
	for n, ts := range byCount {
		opts = append(opts, kfake.SeedTopics(int32(n), ts...))
	}
	kc, err := kfake.NewCluster(opts...)
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	s.kafka = kc
	s.ls.stops = append(s.ls.stops, kc.Close)
	s.brokers = kc.ListenAddrs()
	s.ls.endpoints["KAFKA_BOOTSTRAP_SERVERS"] = strings.Join(s.brokers, ",")
	s.ls.endpoints["KAFKA_AUTH"] = "plaintext"
	s.ls.kafka = true
	cl, err := producer.NewClient(producer.WithBrokers(s.brokers...), producer.WithPlaintext())
	if err != nil {
		return err
	}
	s.producer = cl
	s.ls.stops = append(s.ls.stops, cl.Close)
	return nil
}

func keysOf[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// pipelinesOf links the mappings into pipelines: a Kafka mapping's function, then the
// function of the SQS mapping reading a queue whose URL is in the first function's
// environment, and so on.
func pipelinesOf(specs []*mappingSpec, vars map[string]map[string]string, queueURLs map[string]string, dlqOf func(queue string) string) []*pipeline {
	byQueue := map[string]*mappingSpec{}
	for _, m := range specs {
		if m.kind == sqsMapping {
			byQueue[m.queue] = m
		}
	}
	var out []*pipeline
	for _, m := range specs {
		if m.kind != kafkaMapping {
			continue
		}
		p := &pipeline{functions: []string{m.function}, specs: []*mappingSpec{m}, topic: m.topics[0]}
		for cur := m.function; len(p.specs) < 10; {
			var next *mappingSpec
			for _, v := range keysOf(vars[cur]) {
				for q, u := range queueURLs {
					if vars[cur][v] == u && byQueue[q] != nil {
						next = byQueue[q]
					}
				}
			}
			if next == nil {
				break
			}
			p.specs = append(p.specs, next)
			p.functions = append(p.functions, next.function)
			cur = next.function
		}
		p.name = strings.Join(p.functions, " -> ")
		p.queues = map[string]bool{}
		for _, fn := range p.functions {
			for _, v := range vars[fn] {
				for q, u := range queueURLs {
					if v == u {
						p.queues[q] = true
					}
				}
			}
		}
		for _, m := range p.specs {
			if m.kind == sqsMapping && dlqOf != nil {
				if d := dlqOf(m.queue); d != "" {
					p.queues[d] = true
				}
			}
		}
		out = append(out, p)
	}
	return out
}

// openLogs makes the log directory.
func (s *stack) openLogs() error {
	s.logDir = s.c.logs
	if s.logDir == "" && s.c.report != "" {
		s.logDir = filepath.Join(s.c.report, "logs")
	}
	if s.logDir == "" {
		d, err := os.MkdirTemp("", "klt-local-logs-")
		if err != nil {
			return err
		}
		s.logDir = d
	}
	return os.MkdirAll(s.logDir, 0o755)
}

// logFile creates the log file of function fn.
func (s *stack) logFile(fn string) (io.Writer, error) {
	f, err := os.Create(filepath.Join(s.logDir, fn+".log"))
	if err != nil {
		return nil, err
	}
	s.logFiles = append(s.logFiles, f)
	w := &lockedWriter{w: f}
	if s.logs == nil {
		s.logs = map[string]*lockedWriter{}
	}
	s.logs[fn] = w
	return w, nil
}

// lockedWriter serialises the writes of the function's processes and of klt to one log.
type lockedWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// loggedInvoker writes one line to the function's log for each invocation that fails as a
// whole (a function error, a timeout, a crash), which the function itself may never log.
type loggedInvoker struct {
	esm.Invoker
	mapping string
	log     io.Writer
}

func (l loggedInvoker) Invoke(ctx context.Context, payload []byte) (esm.Response, error) {
	resp, err := l.Invoker.Invoke(ctx, payload)
	if resp.Err != nil {
		fmt.Fprintf(l.log, "[klt] %s: invocation failed: %s\n", l.mapping, base.OneLine(resp.Err.Error()))
	}
	return resp, err
}

// stop stops everything, the functions first.
func (s *stack) stop() {
	for _, p := range s.pools {
		p.Close()
	}
	if s.api != nil {
		s.api.close()
	}
	if s.ls != nil {
		s.ls.stop()
	}
	for _, f := range s.logFiles {
		f.Close()
	}
}

// running is a mapping running in one phase.
type running struct {
	spec     *mappingSpec
	counters *esm.Counters
	kafka    *esm.Kafka // nil for SQS
	done     chan error
}

// startMappings starts the mappings specs for a phase: Kafka mappings each with a consumer
// group of their own for the phase, starting at since, so that a phase reads its own records.
func (s *stack) startMappings(ctx context.Context, specs []*mappingSpec, phase string, since time.Time) ([]*running, error) {
	var out []*running
	for _, m := range specs {
		inv := loggedInvoker{s.pools[m.function], m.id, s.logs[m.function]}
		r := &running{spec: m, done: make(chan error, 1)}
		var run func(context.Context) error
		switch m.kind {
		case kafkaMapping:
			group := m.groupID
			if phase != "" {
				group += "-" + phase
			}
			opts := []esm.KafkaOption{
				esm.WithName(m.id), esm.WithGroupID(group),
				esm.WithMaximumRetryAttempts(m.maxRetry),
				esm.WithBootstrapServers(s.brokers...),
				esm.WithFunctionARN("arn:aws:lambda:" + localRegion + ":" + localAccount + ":function:" + m.function),
			}
			if phase == "" {
				opts = append(opts, esm.WithStartingPosition(orDefault(m.startingPosition, esm.TrimHorizon)))
			} else {
				opts = append(opts, esm.WithStartingTimestamp(since))
			}
			if m.msk {
				opts = append(opts, esm.WithEventSource(kafkaevent.SourceMSK, m.sourceARN))
			} else {
				opts = append(opts, esm.WithEventSource(kafkaevent.SourceSelfManaged, ""))
			}
			if m.batchSize > 0 {
				opts = append(opts, esm.WithBatchSize(m.batchSize))
			}
			if m.window >= 0 {
				opts = append(opts, esm.WithBatchingWindow(m.window))
			}
			if m.filter != nil {
				opts = append(opts, esm.WithFilter(m.filter))
			}
			if m.reportFailures {
				opts = append(opts, esm.WithReportBatchItemFailures())
			}
			if m.maxRecordAge > 0 {
				opts = append(opts, esm.WithMaximumRecordAge(m.maxRecordAge))
			}
			if m.bisect {
				opts = append(opts, esm.WithBisectBatchOnFunctionError())
			}
			if m.onFailure != "" {
				if t, ok := strings.CutPrefix(m.onFailure, "kafka://"); ok {
					opts = append(opts, esm.WithOnFailure(esm.OnFailureKafkaTopic(t)))
				} else if q, ok := queueByARN(s.ls.r, m.onFailure); ok {
					opts = append(opts, esm.WithOnFailure(esm.OnFailureSQS(s.sqsClient, s.ls.r.queueURLs[q])))
				} else {
					return out, fmt.Errorf("%s: on-failure destination %s is neither a queue of the template nor kafka://TOPIC; klt local has no SNS or S3", m.id, m.onFailure)
				}
			}
			k, err := esm.NewKafka(s.brokers, m.topics[0], inv, opts...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.id, err)
			}
			r.kafka, r.counters, run = k, k.Counters(), k.Run
		case sqsMapping:
			cfg := esm.SQSConfig{
				Name: m.id, Client: s.sqsClient, QueueURL: s.ls.r.queueURLs[m.queue],
				QueueARN:  "arn:aws:sqs:" + localRegion + ":" + localAccount + ":" + s.ls.r.queues[m.queue].name,
				BatchSize: m.batchSize, Filter: m.filter, ReportBatchItemFailures: m.reportFailures,
				MaximumConcurrency: m.maxConcurrency,
			}
			if m.window >= 0 {
				cfg.BatchingWindow = m.window
			}
			q, err := esm.NewSQS(ctx, cfg, inv)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.id, err)
			}
			r.counters, run = q.Counters(), q.Run
		}
		go func() { r.done <- run(ctx) }()
		out = append(out, r)
	}
	return out, nil
}

// deadLetterQueueOf returns the logical ID of queue's dead-letter queue (its RedrivePolicy's
// deadLetterTargetArn), or "".
func (s *stack) deadLetterQueueOf(queue string) string {
	q, ok := s.ls.r.queues[queue]
	if !ok || q.attrs["RedrivePolicy"] == nil {
		return ""
	}
	v, err := s.ls.r.eval(q.attrs["RedrivePolicy"], queue+".RedrivePolicy")
	if err != nil {
		return ""
	}
	rp, _ := v.(map[string]any)
	arn, _ := rp["deadLetterTargetArn"].(string)
	id, _ := queueByARN(s.ls.r, arn)
	return id
}

// localFlags returns the flags of "klt local", for its help.
func localFlags() *flag.FlagSet { return newLocalFlags(new(localConfig)) }
