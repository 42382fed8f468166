package plancmd

import (
	"errors"
	"flag"
	"fmt"
	"math"
	"reflect"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/capacity"
)

// This file is the one list of klt plan's inputs: each is a field of capacity.Input, named by
// its JSON name (the key of a --config file) and, with "-" for "_" and without "fanout.", by
// its flag. The flags, the --config keys and the help all come from it, and one parser per
// kind of value reads both the command line and the file.

// option is one input of the plan.
type option struct {
	key   string // capacity.Input's JSON name: "rate", "fanout.queue"
	usage string // the flag's help; a `NAME` in back quotes names its value
	// value returns the flag.Value that reads the option into in's field.
	value func(in *capacity.Input) flag.Value
}

// flagName is the option's flag: "fanout.message_groups" is --message-groups.
func (o option) flagName() string {
	first, last, _ := strings.Cut(o.key, ".")
	switch {
	case last == "":
		last = o.key
	case first == "lmi":
		// "lmi.memory" is --lmi-memory: --memory is the functions' on demand.
		last = first + "_" + last
	}
	return strings.ReplaceAll(last, "_", "-")
}

// options are klt plan's inputs, in the order of the help.
var options = []option{
	{"rate", "the target: `R` records per second, steady, 0.001 to 1e9 (required, unless --from-report\ngives the measured one)",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.Rate} }},
	{"burst", "a burst of `R` records per second, for --burst-for: the plan gives the lag it leaves and\nits drain time",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.Burst} }},
	{"burst_for", "how long the --burst lasts (`D`, e.g. 5m)",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.BurstFor} }},
	{"record_size", "one record's `SIZE` as the event carries it: key, value and headers (default 1KB)",
		func(in *capacity.Input) flag.Value { return &sizeValue{&in.RecordSize} }},
	{"duration", "the time the handler spends on one record (`D`, e.g. 300ms): an invocation of N records\ntakes N times it",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Duration} }},
	{"batch_duration", "one invocation's time for a full batch (`D`), instead of --duration: a handler that works on\nits records in parallel",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.BatchDuration} }},
	{"batch_size", "the Kafka mapping's BatchSize, `N` records (default 100)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.BatchSize, 0} }},
	{"window", "the Kafka mapping's MaximumBatchingWindowInSeconds (`D`; default 500ms)",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Window} }},
	{"low_latency", "the Kafka mapping's window is 0 (MaximumBatchingWindowInSeconds 0: Lambda invokes with the\nrecords it has, AWS's low-latency configuration); --window must then be 0",
		func(in *capacity.Input) flag.Value { return &boolValue{&in.LowLatency} }},
	{"partitions", "the source topic's partitions, `N` (default: as many as the target needs)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Partitions, 0} }},
	{"partitions_per_invocation", "how many partitions one invocation holds on average, `P` (default 1; klt local's report\nmeasures it)",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.PartitionsPerInvocation} }},
	{"mode", "the Kafka mappings' scaling `MODE`: provisioned (default) or on-demand",
		func(in *capacity.Input) flag.Value { return &enumValue{&in.Mode, []string{"provisioned", "on-demand"}} }},
	{"maximum_pollers", "the most pollers of a Kafka mapping, `N`: ProvisionedPollerConfig's MaximumPollers, 1 to 2000\n(default 200, AWS's)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.MaximumPollers, 0} }},
	{"poller_group", "the mappings share event poller units in a poller group (PollerGroupName)",
		func(in *capacity.Input) flag.Value { return &boolValue{&in.PollerGroup} }},
	{"memory", "each function's memory, `MB` (default 256)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Memory, 0} }},
	{"architecture", "the functions' `ARCH`itecture, arm64 (default) or x86_64: it prices the GB-seconds",
		func(in *capacity.Input) flag.Value { return &enumValue{&in.Architecture, []string{"arm64", "x86_64"}} }},
	{"concurrency", "the most concurrent invocations of each function, `N`: reserved concurrency, the account's\nquota, or what this machine runs at once for a plan checked against klt local (default 1000)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Concurrency, 0} }},
	{"key_concurrency", "plan the key-concurrent design too: the direct design's function with\nbatch.WithKeyConcurrency(`N`), at most N records in flight per invocation, each key in order",
		func(in *capacity.Input) flag.Value { return &intValue{&in.KeyConcurrency, 0} }},
	{"keys", "the records' distinct keys in the topic, `K` (default 1000): the key-concurrent design's\ninvocations draw from K x partitions per invocation / partitions of them; the fan-out's\nmessage groups default to K",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Keys, 0} }},
	{"key_skew", "the keys' skew, the exponent `S` of Zipf's law (the i-th most frequent key has a share\nproportional to i^-S): 0 (default) every key alike, 1 a typical skew, up to 10",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.KeySkew} }},
	{"keys_in_turn", "the producer sends the keys in turn (key 0, 1, ... as klt local --generate does), not at\nrandom: b consecutive records of k keys hold ceil(b/k) of one key",
		func(in *capacity.Input) flag.Value { return &boolValue{&in.KeysInTurn} }},
	{"fanout.queue", "fan-out: the `KIND` of the work queue, fifo (default) or standard",
		func(in *capacity.Input) flag.Value { return &enumValue{&in.Fanout.Queue, []string{"fifo", "standard"}} }},
	{"fanout.high_throughput", "fan-out: the FIFO queue is in high throughput mode (FifoThroughputLimit perMessageGroupId)",
		func(in *capacity.Input) flag.Value { return &boolValue{&in.Fanout.HighThroughput} }},
	{"fanout.fifo_calls_per_second", "fan-out: the Region's high-throughput FIFO quota, `N` API calls per second per action\n(default 2400; 70000 in us-east-1, us-west-2 and eu-west-1)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Fanout.FIFOCallsPerSecond, 0} }},
	{"fanout.message_groups", "fan-out: the distinct message groups, `N` (FIFO: the records' distinct keys; default --keys)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Fanout.MessageGroups, 0} }},
	{"fanout.dispatch_duration", "fan-out: the dispatcher's time per record (`D`; default 1ms)",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Fanout.DispatchDuration} }},
	{"fanout.dispatch_batch_duration", "fan-out: the dispatcher's time for a full batch (`D`), instead of --dispatch-duration",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Fanout.DispatchBatchDuration} }},
	{"fanout.dispatch_batch_size", "fan-out: the dispatcher's Kafka mapping's BatchSize, `N` (default 500)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Fanout.DispatchBatchSize, 0} }},
	{"fanout.worker_duration", "fan-out: a worker's time per message (`D`; default --duration)",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Fanout.WorkerDuration} }},
	{"fanout.worker_batch_duration", "fan-out: a worker's time for a full batch (`D`), instead of --worker-duration",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.Fanout.WorkerBatchDuration} }},
	{"fanout.worker_batch_size", "fan-out: the SQS mapping's BatchSize, `N` messages (default 10, the most FIFO allows)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Fanout.WorkerBatchSize, 0} }},
	{"fanout.maximum_concurrency", "fan-out: the SQS mapping's ScalingConfig.MaximumConcurrency, `N` (default none)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.Fanout.MaximumConcurrency, 0} }},
	{"lmi.instance_type", "LMI: the capacity provider's instance `TYPE`: m7g.large (default on arm64), m7g.xlarge,\nc7g.large, c7g.xlarge, r7g.large, m7i.large (default on x86_64), c7i.large",
		func(in *capacity.Input) flag.Value {
			return &enumValue{&in.LMI.InstanceType, []string{"m7g.large", "m7g.xlarge", "c7g.large", "c7g.xlarge", "r7g.large", "m7i.large", "c7i.large"}}
		}},
	{"lmi.memory", "LMI: the function's memory, `MB`, 2048 (default, the smallest) to 32768",
		func(in *capacity.Input) flag.Value { return &intValue{&in.LMI.Memory, 0} }},
	{"lmi.memory_gib_per_vcpu", "LMI: ExecutionEnvironmentMemoryGiBPerVCpu, `G` GiB per vCPU, 2 (default) to 8",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.LMI.MemoryGiBPerVCPU} }},
	{"lmi.max_concurrency", "LMI: PerExecutionEnvironmentMaxConcurrency, `N` invocations at once per execution environment,\nat most 64 per vCPU (default 64 per vCPU: a handler whose time is spent waiting)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.LMI.MaxConcurrency, 0} }},
	{"lmi.target_utilization", "LMI: the share `U` of the capacity Lambda keeps in use (default 0.5: headroom for the load\nto double, AWS's default)",
		func(in *capacity.Input) flag.Value { return &floatValue{&in.LMI.TargetUtilization} }},
	{"lmi.cpu_per_record", "LMI: the CPU time the handler spends on a record (`D`; default: not given, the plan counts\nconcurrency and memory only)",
		func(in *capacity.Input) flag.Value { return &durationValue{&in.LMI.CPUPerRecord} }},
	{"idempotency_writes", "DynamoDB writes per record for exactly-once side effects, `N` (default 2; -1: none)",
		func(in *capacity.Input) flag.Value { return &intValue{&in.IdempotencyWrites, -1} }},
	{"idempotency_item_size", "the idempotency item's `SIZE`, which sets the write units of each write (default 300)",
		func(in *capacity.Input) flag.Value { return &sizeValue{&in.IdempotencyItemSize} }},
	{"egress_bytes", "the `SIZE` per record the functions send out of the AWS Region (data transfer out; default 0)",
		func(in *capacity.Input) flag.Value { return &sizeValue{&in.EgressBytes} }},
}

// optionByKey returns the option of a --config key, or nil.
func optionByKey(key string) *option {
	for i := range options {
		if options[i].key == key {
			return &options[i]
		}
	}
	return nil
}

// priceField is one unit price of capacity.Prices, by its JSON name.
type priceField struct {
	name  string // "lambda_gb_second"
	index int    // the field's index in capacity.Prices
}

// priceFields are capacity.Prices' fields, read from its JSON tags so that a price added to the
// contract is a --price NAME without a change here.
var priceFields = func() []priceField {
	t := reflect.TypeFor[capacity.Prices]()
	var fs []priceField
	for i := range t.NumField() {
		name, _, _ := strings.Cut(t.Field(i).Tag.Get("json"), ",")
		if t.Field(i).Type.Kind() != reflect.Float64 || name == "" || name == "-" {
			panic("plancmd: capacity.Prices has a field that is not a float64 with a JSON name: " + t.Field(i).Name)
		}
		fs = append(fs, priceField{name: name, index: i})
	}
	return fs
}()

// priceNames returns the names --price takes, for messages.
func priceNames() []string {
	var names []string
	for _, f := range priceFields {
		names = append(names, f.name)
	}
	return names
}

// setPrice sets the price name of p to the text usd.
func setPrice(p *capacity.Prices, name, usd string) error {
	i := slices.IndexFunc(priceFields, func(f priceField) bool { return f.name == name })
	if i < 0 {
		return fmt.Errorf("no price %q; want one of %s", name, strings.Join(priceNames(), ", "))
	}
	v, err := parseNumber(usd)
	if err != nil {
		return err
	}
	if v == 0 {
		return errors.New("0 is not a price (a price not given takes the us-east-1 one); give the price in US dollars")
	}
	setPriceField(p, priceFields[i], v)
	return nil
}

// priceOf returns the price f of p.
func priceOf(p capacity.Prices, f priceField) float64 {
	return reflect.ValueOf(p).Field(f.index).Float()
}

// setPriceField sets the price f of p to v.
func setPriceField(p *capacity.Prices, f priceField, v float64) {
	reflect.ValueOf(p).Elem().Field(f.index).SetFloat(v)
}

// priceValue is --price NAME=USD, repeatable, into prices.
type priceValue struct{ prices *capacity.Prices }

func (v *priceValue) String() string { return "" }

func (v *priceValue) Set(s string) error {
	name, usd, ok := strings.Cut(s, "=")
	if !ok {
		return errors.New("want NAME=USD")
	}
	return setPrice(v.prices, strings.TrimSpace(name), strings.TrimSpace(usd))
}

// The largest figures the parsers take: past them a figure is a slip, not a plan, and the
// model's arithmetic (float64, int) stays exact.
const (
	// maxSize is 1 TiB: a record, an item or an egress far larger than anything Kafka, Lambda
	// (6 MB payloads) or DynamoDB (400 KB items) carries.
	maxSize = 1 << 40
	// maxCount is the largest integer count (partitions, pollers, batch size, memory): a
	// billion, past every quota AWS publishes for these.
	maxCount = 1_000_000_000
	// maxNumber bounds a rate, a burst or a price: 1e15 records a second is past any cluster.
	maxNumber = 1e15
	// maxDuration is a year: a handler's time per record, a burst or a window longer than
	// that is a slip.
	maxDuration = 365 * 24 * time.Hour
)

// errNegative is the error of a negative figure where none is meaningful.
var errNegative = errors.New("negative: want 0 or more")

// The parsers' errors say why a text is refused, never the text itself: the caller names the
// flag or the key and the text once ("--rate abc: not a number").

// parseNumber reads a decimal number, 0 or more: 100, 16.7, 2e4. NaN, infinities and figures
// past maxNumber are refused; the model bounds each figure further (a rate from 0.001).
func parseNumber(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errors.New("out of range")
	case err != nil || math.IsNaN(v) || math.IsInf(v, 0):
		return 0, errors.New("not a number")
	case v < 0:
		return 0, errNegative
	case v > maxNumber:
		return 0, fmt.Errorf("past klt's bound of %g", float64(maxNumber))
	}
	return v, nil
}

// parseCount reads an integer count of at least least (0, or -1 for "none").
func parseCount(s string, least int) (int, error) {
	n, err := strconv.Atoi(strings.TrimSpace(s))
	switch {
	case err != nil && errors.Is(err, strconv.ErrRange):
		return 0, errors.New("out of range")
	case err != nil:
		return 0, errors.New("not a whole number")
	case n < least && least == 0:
		return 0, errNegative
	case n < least:
		return 0, fmt.Errorf("want %d (none) or more", least)
	case n > maxCount:
		return 0, fmt.Errorf("past klt's bound of %d", maxCount)
	}
	return n, nil
}

// sizeUnits are the units a size takes, in bytes. KB and KiB are both 1,024 bytes, as AWS's
// limits count them (an SQS request's 64 KB chunk is 65,536 bytes, the 6 MB payload
// 6,291,456).
var sizeUnits = map[string]int64{
	"": 1, "b": 1,
	"kb": 1 << 10, "kib": 1 << 10,
	"mb": 1 << 20, "mib": 1 << 20,
	"gb": 1 << 30, "gib": 1 << 30,
}

// ParseSize reads a size in bytes: 1024, 1KB, 1.5MiB, 64 kb. The number is decimal digits
// with an optional fraction (no sign, no exponent); the unit is B, KB, KiB, MB, MiB, GB or
// GiB in any case, each KB 1,024 bytes; the result is a whole number of bytes, at most 1 TiB.
func ParseSize(s string) (int, error) {
	t := strings.TrimSpace(s)
	i := strings.IndexFunc(t, func(r rune) bool { return (r < '0' || r > '9') && r != '.' })
	if i < 0 {
		i = len(t)
	}
	digits, unit := t[:i], strings.ToLower(strings.TrimSpace(t[i:]))
	mult, ok := sizeUnits[unit]
	if strings.HasPrefix(t, "-") {
		return 0, errNegative
	}
	if !ok || digits == "" || strings.Count(digits, ".") > 1 || strings.HasPrefix(digits, ".") || strings.HasSuffix(digits, ".") {
		return 0, errors.New("not a size: want bytes (1024) or a number with B, KB, KiB, MB, MiB, GB or GiB")
	}
	v, err := strconv.ParseFloat(digits, 64)
	if err != nil || v*float64(mult) > maxSize {
		return 0, errors.New("want a size up to 1 TiB")
	}
	bytes := v * float64(mult)
	if bytes != math.Trunc(bytes) {
		return 0, errors.New("not a whole number of bytes")
	}
	return int(bytes), nil
}

// ParseDuration reads a duration in Go's syntax (300ms, 1.5s, 2m), 0 or more, at most a year.
func ParseDuration(s string) (time.Duration, error) {
	d, err := time.ParseDuration(strings.TrimSpace(s))
	switch {
	case err != nil:
		return 0, errors.New("not a duration: want Go's syntax, a number with a unit (300ms, 1.5s, 2m)")
	case d < 0:
		return 0, errNegative
	case d > maxDuration:
		return 0, errors.New("longer than a year")
	}
	return d, nil
}

// The flag.Values of the options, one per kind of figure. String is "" for a figure not given
// (0), so that the help prints no "(default 0)": the defaults are the model's, in the usage.

type floatValue struct{ p *float64 }

func (v *floatValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.FormatFloat(*v.p, 'g', -1, 64)
}

func (v *floatValue) Set(s string) (err error) { *v.p, err = parseNumber(s); return err }

type intValue struct {
	p     *int
	least int
}

func (v *intValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v *intValue) Set(s string) (err error) { *v.p, err = parseCount(s, v.least); return err }

type sizeValue struct{ p *int }

func (v *sizeValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return strconv.Itoa(*v.p)
}

func (v *sizeValue) Set(s string) (err error) { *v.p, err = ParseSize(s); return err }

type durationValue struct{ p *capacity.Duration }

func (v *durationValue) String() string {
	if v.p == nil || *v.p == 0 {
		return ""
	}
	return time.Duration(*v.p).String()
}

func (v *durationValue) Set(s string) error {
	d, err := ParseDuration(s)
	*v.p = capacity.Duration(d)
	return err
}

type boolValue struct{ p *bool }

func (v *boolValue) IsBoolFlag() bool { return true }

func (v *boolValue) String() string {
	if v.p == nil || !*v.p {
		return ""
	}
	return strconv.FormatBool(*v.p)
}

func (v *boolValue) Set(s string) error {
	b, err := strconv.ParseBool(s)
	if err != nil {
		return errors.New("want true or false")
	}
	*v.p = b
	return nil
}

type enumValue struct {
	p       *string
	choices []string
}

func (v *enumValue) String() string {
	if v.p == nil || *v.p == "" {
		return ""
	}
	return *v.p
}

func (v *enumValue) Set(s string) error {
	if !slices.Contains(v.choices, s) {
		return fmt.Errorf("want %s", strings.Join(v.choices, " or "))
	}
	*v.p = s
	return nil
}
