package localstack

import (
	"context"
	"errors"
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
	"github.com/kafkalambda/toolkit/cmd/klt/internal/lambdarun"
	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/runtimeapi"
	"github.com/kafkalambda/toolkit/internal/samstack"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ordersAPIParam is the template parameter klt local serves its local orders API to.
const ordersAPIParam = "OrdersApiUrl"

// Config is the command line of klt local.
type Config struct {
	Template     string
	Loads        CountFlag // pipeline (its first function) -> records; "" = every pipeline
	Partitions   CountFlag // topic -> partitions; "" = every topic
	Rate         float64
	Keys         int
	Work         time.Duration
	Faults       int
	Report       string
	Logs         string
	PhaseTimeout time.Duration
	Params       ParamsFlag
}

// ParamsFlag is a repeatable flag of NAME=VALUE template parameter values.
type ParamsFlag map[string]string

func (f ParamsFlag) String() string {
	var parts []string
	for k, v := range f {
		parts = append(parts, k+"="+v)
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

func (f ParamsFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, "=")
	if !ok || name == "" {
		return fmt.Errorf("want NAME=VALUE, got %q", s)
	}
	f[name] = value
	return nil
}

// CountFlag is a repeatable flag of N or NAME=N values.
type CountFlag map[string]int

func (f CountFlag) String() string {
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

func (f CountFlag) Set(s string) error {
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
func (f CountFlag) get(name string, def int) int {
	if n, ok := f[name]; ok {
		return n
	}
	if n, ok := f[""]; ok {
		return n
	}
	return def
}

// stack is a running local stack: the servers, the functions' instances, the mappings' specs.
type stack struct {
	c         Config
	t         *samstack.InvokeTemplate
	ls        *lambdarun.Servers
	sqsClient *sqs.Client
	brokers   []string
	kafka     *kfake.Cluster
	producer  *kgo.Client
	api       *ordersAPI // nil without the OrdersApiUrl parameter
	drains    *drains
	specs     []*samstack.MappingSpec
	pools     map[string]*runtimeapi.Pool // by function
	functions map[string]*samstack.FunctionSpec
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
	specs     []*samstack.MappingSpec
	topic     string
	queues    map[string]bool // logical IDs of the queues its records can be dead-lettered to

	filteredKeys map[string]bool // record key -> filtered out (stack.filtered's answers)
}

// applier returns the function that applies the records (the last one).
func (p *pipeline) applier() string { return p.functions[len(p.functions)-1] }

func LocalMain(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("klt local runs functions as Linux processes and freezes them to inject timeouts; this is %s", runtime.GOOS)
	}
	s := &stack{c: c, out: stdout, pools: map[string]*runtimeapi.Pool{}, functions: map[string]*samstack.FunctionSpec{}}
	defer s.stop()
	if err := s.start(ctx, stderr); err != nil {
		return err
	}
	if len(c.Loads) == 0 {
		return s.serve(ctx)
	}
	return s.loadAndReport(ctx)
}

// start reads the template, starts the servers, builds and starts the functions.
func (s *stack) start(ctx context.Context, stderr io.Writer) error {
	params, err := s.readMappings()
	if err != nil {
		return err
	}
	names, vars, err := s.startServers(ctx, params)
	if err != nil {
		return err
	}
	boots, err := s.build(ctx, names, stderr)
	if err != nil {
		return err
	}
	if err := s.startFunctions(names, boots, vars); err != nil {
		return err
	}
	s.startDrains()
	return nil
}

// readMappings reads the template and the event source mappings klt local runs, and returns
// the template's parameters.
func (s *stack) readMappings() (map[string]string, error) {
	t, err := samstack.ReadInvokeTemplate(s.c.Template)
	if err != nil {
		return nil, err
	}
	s.t = t
	// The sample template's cluster parameters, for a self-managed cluster (the local one):
	// its self-managed mappings run. --parameter-overrides sets these and any others.
	params := map[string]string{"KafkaClusterArn": "", "KafkaAuth": "plaintext", "KafkaBootstrapServers": "127.0.0.1:9092"}
	for k, v := range s.c.Params {
		params[k] = v
	}
	r, err := samstack.NewLocalResolver(t, params)
	if err != nil {
		return nil, err
	}
	specs, skipped, err := samstack.LocalMappings(t, r)
	if err != nil {
		return nil, err
	}
	for _, sk := range skipped {
		fmt.Fprintf(s.out, "klt local: %s (%s of %s) is not emulated: klt local runs Kafka and SQS event source mappings only\n", sk.Id, sk.Typ, sk.Function)
	}
	for _, m := range specs {
		if m.Enabled {
			s.specs = append(s.specs, m)
		} else {
			fmt.Fprintf(s.out, "klt local: %s is disabled (Enabled: false) in the template\n", m.Id)
		}
	}
	if len(s.specs) == 0 {
		return nil, fmt.Errorf("%s has no Kafka or SQS event source mapping to run", s.c.Template)
	}
	return params, nil
}

// startServers starts the servers of all the template's tables, queues and topics (and the
// orders API when the template takes its URL), and returns the functions the mappings invoke
// and their environment variables.
func (s *stack) startServers(ctx context.Context, params map[string]string) (names []string, vars map[string]map[string]string, err error) {
	t := s.t
	ls, err := lambdarun.StartServers(ctx, t, lambdarun.Needs{DDB: true, SQS: true})
	s.ls = ls
	if err != nil {
		return nil, nil, err
	}
	ls.Resolver.Params = params
	s.sqsClient = ls.SQS.Client()

	// The functions each mapping invokes, and their environments.
	for _, m := range s.specs {
		if _, ok := s.functions[m.Function]; !ok {
			f, err := t.Function(m.Function)
			if err != nil {
				return nil, nil, err
			}
			s.functions[m.Function] = f
			names = append(names, m.Function)
		}
	}
	sort.Strings(names)
	vars = map[string]map[string]string{}
	if t.T.Parameter(ordersAPIParam) != nil {
		if s.api, err = startOrdersAPI(s.c.Work); err != nil {
			return nil, nil, err
		}
	}
	var topics []string
	for _, fn := range names {
		if s.api != nil {
			params[ordersAPIParam] = s.api.url(fn)
		}
		v, err := ls.Vars(s.functions[fn], nil)
		if err != nil {
			return nil, nil, err
		}
		vars[fn] = v
		topics = append(topics, lambdarun.TopicsOf(v)...)
	}
	for _, m := range s.specs {
		topics = append(topics, m.Topics...)
		if t, ok := strings.CutPrefix(m.OnFailure, "kafka://"); ok {
			topics = append(topics, t)
		}
	}
	if err := s.startKafka(topics); err != nil {
		return nil, nil, err
	}
	params["KafkaBootstrapServers"] = strings.Join(s.brokers, ",")
	s.pipelines = pipelinesOf(s.specs, vars, ls.Resolver.QueueURLs, s.deadLetterQueueOf)
	for _, p := range s.pipelines {
		for _, m := range p.specs {
			if q, ok := samstack.QueueByARN(ls.Resolver, m.OnFailure); ok {
				p.queues[q] = true
			}
		}
	}
	return names, vars, nil
}

// build builds the bootstrap of each function of names and returns their paths. Builds run
// one at a time: each go build uses every core, and the functions share most of their
// packages, which the first build compiles and the next ones find in the cache.
func (s *stack) build(ctx context.Context, names []string, stderr io.Writer) ([]string, error) {
	work, err := os.MkdirTemp("", "klt-local-")
	if err != nil {
		return nil, err
	}
	s.ls.Stops = append(s.ls.Stops, func() { os.RemoveAll(work) })
	if err := s.openLogs(); err != nil {
		return nil, err
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
			boots[i], errs[i] = lambdarun.BuildBootstrap(ctx, s.functions[fn], filepath.Join(work, fn), stderr)
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	fmt.Fprintf(s.out, "klt local: built in %.1fs\n", time.Since(start).Seconds())
	return boots, nil
}

// startFunctions starts a pool of instances of each function of names, running its bootstrap
// of boots with its environment variables of vars.
func (s *stack) startFunctions(names, boots []string, vars map[string]map[string]string) error {
	ls := s.ls
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
		cfg := runtimeapi.Config{
			Name:      fn,
			Bootstrap: boots[i],
			Env:       lambdarun.FunctionEnv(f, vars[fn], ls.Endpoints, nil),
			Timeout:   time.Duration(f.Timeout) * time.Second,
			Logs: func(instance int, line []byte) {
				fmt.Fprintf(logf, "[%d] %s\n", instance, line)
			},
		}
		if appliers[fn] { // the timeout fault freezes the function that applies the record
			cfg.OnEvent = s.timeouts.onEvent(fn)
		}
		pool, err := runtimeapi.Start(cfg)
		if err != nil {
			return err
		}
		s.pools[fn] = pool
	}
	return nil
}

// startDrains starts the drains: they read every queue no mapping reads.
func (s *stack) startDrains() {
	ls := s.ls
	s.drains = &drains{client: s.sqsClient}
	read := map[string]bool{}
	for _, m := range s.specs {
		if m.Kind == samstack.SqsMapping {
			read[m.Queue] = true
		}
	}
	dctx, cancel := context.WithCancel(context.Background())
	var dwg sync.WaitGroup
	for id, u := range ls.Resolver.QueueURLs {
		if !read[id] {
			dwg.Add(1)
			go func() { defer dwg.Done(); s.drains.run(dctx, id, u) }()
		}
	}
	ls.Stops = append(ls.Stops, func() { cancel(); dwg.Wait() })
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
		n := s.c.Partitions.get(t, 1)
		byCount[n] = append(byCount[n], t)
	}
	for t := range s.c.Partitions {
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
	s.ls.Stops = append(s.ls.Stops, kc.Close)
	s.brokers = kc.ListenAddrs()
	s.ls.Endpoints["KAFKA_BOOTSTRAP_SERVERS"] = strings.Join(s.brokers, ",")
	s.ls.Endpoints["KAFKA_AUTH"] = "plaintext"
	s.ls.Kafka = true
	cl, err := producer.NewClient(producer.WithBrokers(s.brokers...), producer.WithPlaintext())
	if err != nil {
		return err
	}
	s.producer = cl
	s.ls.Stops = append(s.ls.Stops, cl.Close)
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
func pipelinesOf(specs []*samstack.MappingSpec, vars map[string]map[string]string, queueURLs map[string]string, dlqOf func(queue string) string) []*pipeline {
	byQueue := map[string]*samstack.MappingSpec{}
	for _, m := range specs {
		if m.Kind == samstack.SqsMapping {
			byQueue[m.Queue] = m
		}
	}
	var out []*pipeline
	for _, m := range specs {
		if m.Kind != samstack.KafkaMapping {
			continue
		}
		p := &pipeline{functions: []string{m.Function}, specs: []*samstack.MappingSpec{m}, topic: m.Topics[0]}
		for cur := m.Function; len(p.specs) < 10; {
			var next *samstack.MappingSpec
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
			p.functions = append(p.functions, next.Function)
			cur = next.Function
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
			if m.Kind == samstack.SqsMapping && dlqOf != nil {
				if d := dlqOf(m.Queue); d != "" {
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
	s.logDir = s.c.Logs
	if s.logDir == "" && s.c.Report != "" {
		s.logDir = filepath.Join(s.c.Report, "logs")
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
		s.ls.Stop()
	}
	for _, f := range s.logFiles {
		f.Close()
	}
}

// running is a mapping running in one phase.
type running struct {
	spec     *samstack.MappingSpec
	counters *esm.Counters
	kafka    *esm.Kafka // nil for SQS
	done     chan error
}

// startMappings starts the mappings specs for a phase: Kafka mappings each with a consumer
// group of their own for the phase, starting at since, so that a phase reads its own records.
func (s *stack) startMappings(ctx context.Context, specs []*samstack.MappingSpec, phase string, since time.Time) ([]*running, error) {
	var out []*running
	for _, m := range specs {
		inv := loggedInvoker{s.pools[m.Function], m.Id, s.logs[m.Function]}
		r := &running{spec: m, done: make(chan error, 1)}
		var run func(context.Context) error
		switch m.Kind {
		case samstack.KafkaMapping:
			group := m.GroupID
			if phase != "" {
				group += "-" + phase
			}
			opts := []esm.KafkaOption{
				esm.WithName(m.Id), esm.WithGroupID(group),
				esm.WithMaximumRetryAttempts(m.MaxRetry),
				esm.WithBootstrapServers(s.brokers...),
				esm.WithFunctionARN("arn:aws:lambda:" + samstack.LocalRegion + ":" + samstack.LocalAccount + ":function:" + m.Function),
			}
			if phase == "" {
				opts = append(opts, esm.WithStartingPosition(base.OrDefault(m.StartingPosition, esm.TrimHorizon)))
			} else {
				opts = append(opts, esm.WithStartingTimestamp(since))
			}
			if m.Msk {
				opts = append(opts, esm.WithEventSource(kafkaevent.SourceMSK, m.SourceARN))
			} else {
				opts = append(opts, esm.WithEventSource(kafkaevent.SourceSelfManaged, ""))
			}
			if m.BatchSize > 0 {
				opts = append(opts, esm.WithBatchSize(m.BatchSize))
			}
			if m.Window >= 0 {
				opts = append(opts, esm.WithBatchingWindow(m.Window))
			}
			if m.Filter != nil {
				opts = append(opts, esm.WithFilter(m.Filter))
			}
			if m.ReportFailures {
				opts = append(opts, esm.WithReportBatchItemFailures())
			}
			if m.MaxRecordAge > 0 {
				opts = append(opts, esm.WithMaximumRecordAge(m.MaxRecordAge))
			}
			if m.Bisect {
				opts = append(opts, esm.WithBisectBatchOnFunctionError())
			}
			if m.OnFailure != "" {
				if t, ok := strings.CutPrefix(m.OnFailure, "kafka://"); ok {
					opts = append(opts, esm.WithOnFailure(esm.OnFailureKafkaTopic(t)))
				} else if q, ok := samstack.QueueByARN(s.ls.Resolver, m.OnFailure); ok {
					opts = append(opts, esm.WithOnFailure(esm.OnFailureSQS(s.sqsClient, s.ls.Resolver.QueueURLs[q])))
				} else {
					return out, fmt.Errorf("%s: on-failure destination %s is neither a queue of the template nor kafka://TOPIC; klt local has no SNS or S3", m.Id, m.OnFailure)
				}
			}
			k, err := esm.NewKafka(s.brokers, m.Topics[0], inv, opts...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Id, err)
			}
			r.kafka, r.counters, run = k, k.Counters(), k.Run
		case samstack.SqsMapping:
			opts := []esm.SQSOption{
				esm.WithName(m.Id),
				esm.WithQueueARN("arn:aws:sqs:" + samstack.LocalRegion + ":" + samstack.LocalAccount + ":" + s.ls.Resolver.Queues[m.Queue].Name),
			}
			if m.BatchSize != 0 {
				opts = append(opts, esm.WithBatchSize(m.BatchSize))
			}
			if m.Window >= 0 {
				opts = append(opts, esm.WithBatchingWindow(m.Window))
			}
			if m.Filter != nil {
				opts = append(opts, esm.WithFilter(m.Filter))
			}
			if m.ReportFailures {
				opts = append(opts, esm.WithReportBatchItemFailures())
			}
			if m.MaxConcurrency != 0 {
				opts = append(opts, esm.WithMaximumConcurrency(m.MaxConcurrency))
			}
			q, err := esm.NewSQS(ctx, s.sqsClient, s.ls.Resolver.QueueURLs[m.Queue], inv, opts...)
			if err != nil {
				return out, fmt.Errorf("%s: %w", m.Id, err)
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
	q, ok := s.ls.Resolver.Queues[queue]
	if !ok || q.Attrs["RedrivePolicy"] == nil {
		return ""
	}
	v, err := s.ls.Resolver.Eval(q.Attrs["RedrivePolicy"], queue+".RedrivePolicy")
	if err != nil {
		return ""
	}
	rp, _ := v.(map[string]any)
	arn, _ := rp["deadLetterTargetArn"].(string)
	id, _ := samstack.QueueByARN(s.ls.Resolver, arn)
	return id
}
