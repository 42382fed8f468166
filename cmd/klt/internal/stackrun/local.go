package stackrun

import (
	"bytes"
	"context"
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
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/runtimeapi"
	"github.com/kafkalambda/toolkit/esm/samspec"
	"github.com/kafkalambda/toolkit/internal/faultproxy"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
)

// Config is the command line of klt local.
type Config struct {
	Template string
	Params   funcrun.ParamsFlag
	// Partitions: topic -> partitions; "" = every topic.
	Partitions CountFlag
	// OnePartitionPerInvocation gives each Kafka invocation one partition's records.
	OnePartitionPerInvocation bool
	// LMIConcurrency: function -> invocations at once per execution environment, running it
	// as a Lambda Managed Instances function; "" = every function. A function whose template
	// has CapacityProviderConfig runs so without it (samspec.FunctionSpec.LMIConcurrency).
	LMIConcurrency CountFlag

	// Input is where a load's records come from; none: the stack is served until Ctrl-C.
	Input Input
	// Loads: pipeline (its first function) -> records; "" = every pipeline.
	Loads CountFlag
	// Rate is records per second to produce; 0 = as fast as Kafka takes them.
	Rate float64
	// Faults are the --fault faults; FaultLoad, when positive, the records of the phase
	// that runs every pipeline at once with them (else they apply to each load phase).
	Faults    []FaultSpec
	FaultLoad int

	// HTTPSink is the template parameter the local HTTP sink's URL goes to ("": no sink);
	// Work its time per request.
	HTTPSink string
	Work     time.Duration

	// Variants are the --variant copies of functions, each run as a pipeline of its own.
	Variants []Variant

	Report       string
	Logs         string
	PhaseTimeout time.Duration

	// Version is the tool's version the report and the summary name ("github.com/... v1.2.3
	// (commit ...)"); the command gives it.
	Version string
}

// Load reports whether c measures the stack (records to produce) rather than serving it.
func (c *Config) Load() bool { return c.Input.Records != "" || c.Input.Generate != "" }

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
	t         *samspec.InvokeTemplate
	source    recordSource // nil when serving
	ls        *funcrun.Servers
	sqsClient *sqs.Client
	brokers   []string
	kafka     *kfake.Cluster
	producer  *kgo.Client
	specs     []*samspec.MappingSpec
	pools     map[string]*runtimeapi.Pool // by function
	functions map[string]*samspec.FunctionSpec
	variants  map[string]Variant           // by name: the --variant copies of functions
	vars      map[string]map[string]string // by function: its environment variables
	pipelines []*pipeline
	logDir    string
	logFiles  []*os.File
	logs      map[string]*lockedWriter // by function: its processes' lines and klt's about it
	faults    *processFaults
	census    *report.LogCensus // the functions' log lines against their invocations
	obs       *observation
	out       io.Writer
}

// pipeline is a chain of mappings that starts at a Kafka mapping: its function, and when that
// function sends to a queue that another mapping reads, that mapping's function, and so on.
type pipeline struct {
	name      string // the functions joined by " -> "
	functions []string
	specs     []*samspec.MappingSpec
	topic     string
	queues    map[string]bool // logical IDs of the queues its records can be dead-lettered to
}

// applier returns the function whose side effects the report follows (the last one).
func (p *pipeline) applier() string { return p.functions[len(p.functions)-1] }

// has reports whether fn is a function of p.
func (p *pipeline) has(fn string) bool {
	for _, f := range p.functions {
		if f == fn {
			return true
		}
	}
	return false
}

// LocalMain runs klt local with c.
func LocalMain(ctx context.Context, c Config, stdout, stderr io.Writer) error {
	if runtime.GOOS != "linux" {
		return fmt.Errorf("klt local runs functions as Linux processes and freezes them to inject timeouts; this is %s", runtime.GOOS)
	}
	s := &stack{c: c, out: stdout, pools: map[string]*runtimeapi.Pool{}, functions: map[string]*samspec.FunctionSpec{}, census: report.NewLogCensus()}
	defer s.stop()
	src, err := newRecordSource(ctx, c.Input)
	if err != nil {
		return err
	}
	s.source = src
	if err := s.start(ctx, stderr); err != nil {
		return err
	}
	if src == nil {
		return s.serve(ctx)
	}
	return s.loadAndReport(ctx)
}

// start starts Kafka, reads the template (a parameter that gives a mapping its bootstrap
// servers gets the local Kafka's), starts the other servers, the observers and the functions.
func (s *stack) start(ctx context.Context, stderr io.Writer) error {
	if err := s.startKafka(); err != nil {
		return err
	}
	params, err := s.readMappings()
	if err != nil {
		return err
	}
	names, err := s.startServers(ctx, params)
	if err != nil {
		return err
	}
	boots, err := s.build(ctx, names, stderr)
	if err != nil {
		return err
	}
	return s.startFunctions(names, boots)
}

// readMappings reads the template and the event source mappings klt local runs, and returns
// the template's parameters as given (--parameter-overrides).
func (s *stack) readMappings() (map[string]string, error) {
	t, err := samspec.ReadInvokeTemplate(s.c.Template)
	if err != nil {
		return nil, err
	}
	s.t = t
	params := map[string]string{}
	for k, v := range s.c.Params {
		params[k] = v
	}
	if s.c.HTTPSink != "" {
		if t.T.Parameter(s.c.HTTPSink) == nil {
			return nil, fmt.Errorf("--http-sink %s: %s has no parameter %s", s.c.HTTPSink, s.c.Template, s.c.HTTPSink)
		}
		if _, given := params[s.c.HTTPSink]; given {
			return nil, fmt.Errorf("--http-sink %s and --parameter-overrides %s=...: the sink gives the parameter its value", s.c.HTTPSink, s.c.HTTPSink)
		}
		params[s.c.HTTPSink] = "http://127.0.0.1/" // each function's own URL replaces it (startServers)
	}
	r, err := newLocalResolver(t, params, s.brokers)
	if err != nil {
		return nil, err
	}
	specs, skipped, err := samspec.LocalMappings(t, r)
	if err != nil {
		return nil, err
	}
	for _, sk := range skipped {
		fmt.Fprintf(s.out, "klt local: %s (%s of %s) is not emulated: klt local runs Kafka and SQS event source mappings only\n", sk.Id, sk.Typ, sk.Function)
	}
	for _, m := range specs {
		for _, n := range m.NotEmulated() {
			fmt.Fprintf(s.out, "klt local: %s: %s\n", m.Id, n)
		}
		if m.Enabled {
			s.specs = append(s.specs, m)
		} else {
			fmt.Fprintf(s.out, "klt local: %s is disabled (Enabled: false) in the template\n", m.Id)
		}
	}
	if len(s.specs) == 0 {
		return nil, fmt.Errorf("%s has no Kafka or SQS event source mapping to run", s.c.Template)
	}
	if err := s.addVariants(); err != nil {
		return nil, err
	}
	return params, nil
}

// startServers starts the servers of all the template's tables and queues, creates its
// topics, starts the observers (and the HTTP sink), and returns the functions the mappings
// invoke, with their environment variables in s.vars.
func (s *stack) startServers(ctx context.Context, params map[string]string) ([]string, error) {
	t := s.t
	ls, err := funcrun.StartServers(ctx, t, funcrun.Needs{DDB: true, SQS: true})
	s.ls = ls
	if err != nil {
		return nil, err
	}
	ls.Stops = append(ls.Stops, s.kafka.Close)
	ls.Resolver.Params = params
	ls.Resolver.Local = samspec.LocalEndpoints{KafkaBootstrapServers: strings.Join(s.brokers, ",")}
	s.sqsClient = ls.SQS.Client()
	ls.Endpoints["KAFKA_BOOTSTRAP_SERVERS"] = strings.Join(s.brokers, ",")
	ls.Endpoints["KAFKA_AUTH"] = "plaintext"
	ls.Kafka = true

	var names []string
	for _, m := range s.specs {
		if _, ok := s.functions[m.Function]; !ok {
			f, err := s.functionSpec(m.Function, ls.Resolver.Function)
			if err != nil {
				return nil, err
			}
			s.functions[m.Function] = f
			names = append(names, m.Function)
		}
	}
	sort.Strings(names)
	// The variables first with the sink's parameter as a placeholder, for the topics; then,
	// with the observation started, with each function's own sink URL.
	var topics []string
	s.vars = map[string]map[string]string{}
	for _, fn := range names {
		err := s.withVariantParam(fn, params, func() error {
			v, err := ls.Vars(s.functions[fn], nil)
			s.vars[fn] = v
			return err
		})
		if err != nil {
			return nil, err
		}
		topics = append(topics, funcrun.TopicsOf(s.vars[fn])...)
	}
	var read []string // the topics the mappings read and klt produces to
	for _, m := range s.specs {
		topics = append(topics, m.Topics...)
		read = append(read, m.Topics...)
		if t := m.OnFailureTopic(); t != "" {
			topics = append(topics, t)
		}
	}
	if err := s.createTopics(ctx, topics); err != nil {
		return nil, err
	}
	if err := s.startObservation(ctx, topics, read); err != nil {
		return nil, err
	}
	for _, fn := range names {
		if s.c.HTTPSink != "" {
			params[s.c.HTTPSink] = s.obs.HTTP.URL(fn)
		}
		err := s.withVariantParam(fn, params, func() error {
			v, err := ls.Vars(s.functions[fn], nil)
			s.vars[fn] = v
			return err
		})
		if err != nil {
			return nil, err
		}
	}
	s.pipelines = pipelinesOf(s.specs, s.vars, ls.Resolver.QueueURLs, s.deadLetterQueueOf)
	for _, p := range s.pipelines {
		for _, m := range p.specs {
			if q, ok := samspec.QueueByARN(ls.Resolver, m.OnFailure); ok {
				p.queues[q] = true
			}
		}
	}
	return names, nil
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
	// A line before and after each build: on a cold build cache the first takes a minute or
	// more, and a newcomer watching a silent terminal cannot tell compiling from hanging.
	start := time.Now()
	boots := make([]string, len(names))
	built := map[string]string{} // by the logical ID built: a variant runs its function's bootstrap
	for i, fn := range names {
		f := s.functions[fn]
		if v, ok := s.variants[fn]; ok {
			f = s.functions[v.Function]
			if f == nil {
				if f, err = s.functionSpec(v.Function, s.ls.Resolver.Function); err != nil {
					return nil, err
				}
			}
		}
		if b, ok := built[f.LogicalID]; ok {
			boots[i] = b
			fmt.Fprintf(s.out, "klt local: %s runs %s's build (%d of %d)\n", fn, f.LogicalID, i+1, len(names))
			continue
		}
		one := time.Now()
		note := ""
		if len(built) == 0 {
			note = "; the first build compiles the packages they share"
		}
		fmt.Fprintf(s.out, "klt local: building %s (%d of %d, go build%s)...\n", fn, i+1, len(names), note)
		if boots[i], err = funcrun.BuildBootstrap(ctx, f, filepath.Join(work, fn), stderr); err != nil {
			return nil, err
		}
		built[f.LogicalID] = boots[i]
		fmt.Fprintf(s.out, "klt local: built %s in %.1fs\n", fn, time.Since(one).Seconds())
	}
	fmt.Fprintf(s.out, "klt local: built %d functions in %.1fs\n", len(names), time.Since(start).Seconds())
	return boots, nil
}

// startFunctions starts a pool of instances of each function of names, running its bootstrap
// of boots with its environment: the functions reach DynamoDB and SQS through the fault
// proxies, which observe their calls.
func (s *stack) startFunctions(names, boots []string) error {
	s.faults = &processFaults{}
	for i, fn := range names {
		f := s.functions[fn]
		endpoints, err := s.functionEndpoints(fn)
		if err != nil {
			return err
		}
		logf, err := s.logFile(fn)
		if err != nil {
			return err
		}
		cfg := runtimeapi.Config{
			Name:           fn,
			Bootstrap:      boots[i],
			Env:            funcrun.FunctionEnv(f, s.vars[fn], endpoints, nil),
			Timeout:        time.Duration(f.Timeout) * time.Second,
			LMIConcurrency: s.c.LMIConcurrency.get(fn, f.LMIConcurrency()),
			Logs: func(instance int, line []byte) {
				if !bytes.HasPrefix(line, []byte("runtimeapi: ")) { // the pool's own notes
					s.census.Line(fn, line)
				}
				fmt.Fprintf(logf, "[%d] %s\n", instance, line)
			},
			OnInvoke: func(id string) { s.census.Invocation(fn, id) },
			OnEvent:  s.faults.onEvent(fn),
			OnAnswer: s.faults.onAnswer,
		}
		if cfg.LMIConcurrency > 0 {
			cfg.OnAnswer = s.faults.onAnswerLMI
		}
		pool, err := runtimeapi.Start(cfg)
		if err != nil {
			return err
		}
		s.pools[fn] = pool
	}
	return nil
}

// startKafka starts kfake, before the template is read: a parameter that gives a mapping its
// bootstrap servers takes its address. klt's own producer is exempt from the Kafka faults
// (--fault kafka:N): they hit the functions' produce requests only.
func (s *stack) startKafka() error {
	kc, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.AllowAutoTopicCreation())
	if err != nil {
		return fmt.Errorf("starting kfake: %w", err)
	}
	s.kafka = kc
	s.brokers = kc.ListenAddrs()
	cl, err := producer.NewClient(producer.WithBootstrapServers(s.brokers...), producer.WithPlaintext(),
		producer.WithClientOptions(kgo.ClientID(kltClientID), kgo.ProduceRequestTimeout(faultproxy.ExemptProduceTimeout)))
	if err != nil {
		kc.Close()
		return err
	}
	s.producer = cl
	return nil
}

// kltClientID is the Kafka ClientID of klt local's own clients; their produce requests
// carry faultproxy's ExemptProduceTimeout, which is how the Kafka faults tell them apart.
const kltClientID = "klt-local"

// createTopics creates the topics, each with its partitions (--partitions).
func (s *stack) createTopics(ctx context.Context, topics []string) error {
	s.ls.Stops = append(s.ls.Stops, s.producer.Close)
	seen := map[string]bool{}
	for _, t := range topics {
		if t != "" {
			seen[t] = true
		}
	}
	for t := range s.c.Partitions {
		if t != "" && !seen[t] {
			return fmt.Errorf("--partitions %s: the stack has no topic %q (topics: %s)", t, t, strings.Join(keysOf(seen), ", "))
		}
	}
	partitions := func(t string) int32 { return int32(s.c.Partitions.get(t, 1)) }
	if err := standin.CreateTopics(ctx, s.producer, partitions, topics...); err != nil {
		return err
	}
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
func pipelinesOf(specs []*samspec.MappingSpec, vars map[string]map[string]string, queueURLs map[string]string, dlqOf func(queue string) string) []*pipeline {
	byQueue := map[string]*samspec.MappingSpec{}
	for _, m := range specs {
		if m.Kind == samspec.SqsMapping {
			byQueue[m.Queue] = m
		}
	}
	var out []*pipeline
	for _, m := range specs {
		if m.Kind != samspec.KafkaMapping {
			continue
		}
		p := &pipeline{functions: []string{m.Function}, specs: []*samspec.MappingSpec{m}, topic: m.Topics[0]}
		for cur := m.Function; len(p.specs) < 10; {
			var next *samspec.MappingSpec
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
			if m.Kind == samspec.SqsMapping && dlqOf != nil {
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

// stop stops everything, the functions first.
func (s *stack) stop() {
	for _, p := range s.pools {
		p.Close()
	}
	if s.obs != nil {
		s.obs.close()
	}
	if s.ls != nil {
		s.ls.Stop()
	}
	for _, f := range s.logFiles {
		f.Close()
	}
}

// newLocalResolver resolves the template's parameters: --parameter-overrides, the Defaults,
// and the local Kafka's brokers for a parameter that gives a mapping its bootstrap servers.
func newLocalResolver(t *samspec.InvokeTemplate, params map[string]string, brokers []string) (*samspec.Resolver, error) {
	if err := samspec.CheckParameters(t, params); err != nil {
		return nil, err
	}
	r, err := samspec.NewLocalResolver(t, params)
	if err != nil {
		return nil, err
	}
	r.Local = samspec.LocalEndpoints{KafkaBootstrapServers: strings.Join(brokers, ",")}
	return r, nil
}
