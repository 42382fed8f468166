// Package capacity sizes and prices a Kafka -> Lambda stack before it is built: for a target
// rate of records, their size and the time a handler spends on them, it says what each of the
// designs the toolkit ships can reach and what bounds it, how many partitions, event
// pollers, event poller units and concurrent invocations the target needs, the lag a burst
// leaves and how long it takes to drain, and what a month costs, line by line.
//
// The designs:
//
//   - direct: Kafka -> event source mapping -> the function (samples/consumer);
//   - fanout: Kafka -> event source mapping -> a dispatcher -> an SQS queue (FIFO or
//     standard) -> event source mapping -> workers (samples/dispatcher, samples/worker);
//   - key_concurrent, with Input.KeyConcurrency: the direct design's function with
//     batch.WithKeyConcurrency, its invocations as long as their longest same-key chain
//     (keys.go states the model).
//
// Every figure of a [Plan] carries the formula that produced it and the documented limit or
// price it rests on ([Figure], [CostLine]): the model is AWS's published arithmetic, put
// together, and nothing else. klt plan prints it; klt local's report sets the throughput it
// predicts beside the one it measured (the same [Plan], made from the measured durations).
//
// # The model
//
// A record of s bytes takes e = ceil(s × 4/3) + 200 bytes in a Kafka event (its value in
// base64 and the JSON around it, an estimate), so an invocation carries B = min(BatchSize,
// floor(6,291,456 / e)) records, the 6 MB payload's worth. It lasts Db(n) = n × Duration (the
// handler takes its records one after another) or BatchDuration × n / BatchSize (a handler
// whose time grows linearly with its batch). A partition is in one invocation at a time; a
// provisioned poller holds 5 invocations and reads 5 MB/s (MB is 1,000,000 bytes here); the
// pollers are at most MaximumPollers, the partitions and 2,000. So a Kafka stage reaches
//
//	min(concurrency × B / Db(B), pollers × 5 MB/s / s)
//	concurrency = min(5 × pollers, floor(partitions / PartitionsPerInvocation), Concurrency)
//
// and a rate R needs ceil(R × Db(B) / B) concurrent invocations, max(ceil(that / 5),
// ceil(R × s / 5 MB/s)) pollers, and as many partitions as invocations (times
// PartitionsPerInvocation), at least one a poller. On-demand mode drops the pollers: Lambda
// picks them. The fan-out design adds a queue (FIFO: 300 API calls a second per action, 10
// messages each; high throughput: the Region's quota; standard: no documented limit) and the
// workers (at most the SQS mapping's 1,250, MaximumConcurrency, Concurrency, and, FIFO, one
// batch in flight per message group); its maximum is its slowest stage's. A month is 30 days,
// as AWS's pricing examples have it; limits.go and prices.go cite every number.
//
// A design that does not reach the rate has no cost and no recommendation: a price for a
// rate it cannot carry would be compared with one that can. Its Bound says why, and its Lifts
// say which input lifts the bound (more partitions, a higher MaximumPollers, a standard queue
// or high throughput mode for a FIFO queue, more message groups). Plan.Cheaper compares only
// the designs that reach the rate.
//
// # Ranges
//
// Every figure is checked against its range before it is used or converted: an Input's by
// Make (AWS's ranges where AWS sets one, the planner's own otherwise), a klt local report's
// by FromReport and PredictRuns, by the report's JSON path. A figure out of its range is a
// *FieldError, which wraps ErrInput.
package capacity

import (
	"errors"
	"time"
)

// Input is what a plan is made from. The zero value of a field means "not given"; [Plan]
// fills each from its documented default (Defaults) and reports the filled Input in
// Plan.Input.
type Input struct {
	// Rate is the target: records per second, steady. Required: 0.001 (a record every 1,000
	// s) to 1e9.
	Rate float64 `json:"rate"`
	// Burst is a higher rate, records per second, lasting BurstFor; 0 when there is none.
	Burst    float64  `json:"burst,omitempty"`
	BurstFor Duration `json:"burst_for,omitempty"`
	// RecordSize is one record's size in bytes as the event carries it (key, value and
	// headers, before base64). Default 1,024.
	RecordSize int `json:"record_size,omitempty"`

	// Duration is the time the direct design's function spends on one record; the
	// invocation's time is then BatchSize (or the records it carries) times Duration: the
	// handler takes its records one after another. BatchDuration is one invocation's time for
	// a full batch, instead (a handler that works on partitions in parallel). One of the two
	// is required.
	Duration      Duration `json:"duration,omitempty"`
	BatchDuration Duration `json:"batch_duration,omitempty"`

	// BatchSize and Window are the Kafka mapping's BatchSize and
	// MaximumBatchingWindowInSeconds. Defaults 100 and 500 ms, Lambda's for Kafka.
	BatchSize int      `json:"batch_size,omitempty"`
	Window    Duration `json:"window,omitempty"`
	// LowLatency sets the window to 0 (MaximumBatchingWindowInSeconds 0: Lambda invokes with
	// the records it has, AWS's low-latency configuration with provisioned mode), which a zero
	// Window cannot say since it means "not given". Window must then be 0.
	LowLatency bool `json:"low_latency,omitempty"`
	// Partitions of the source topic; 0: the plan says how many the target needs and
	// computes max_records_per_second at that count.
	Partitions int `json:"partitions,omitempty"`
	// PartitionsPerInvocation is how many partitions one invocation holds on average (an
	// event may carry records of several; a partition is in one invocation at a time, so at
	// most Partitions / PartitionsPerInvocation invocations run at once). Default 1. klt
	// local's report measures it.
	PartitionsPerInvocation float64 `json:"partitions_per_invocation,omitempty"`
	// Mode is the Kafka mappings' scaling mode, "provisioned" (default: the sample stack's,
	// and what error handling and schema registries need) or "on-demand" (no event poller
	// units to pay; Lambda picks the pollers).
	Mode string `json:"mode,omitempty"`
	// MaximumPollers caps the pollers of a Kafka mapping (ProvisionedPollerConfig), 1 to
	// 2,000; default 200, AWS's (API_ProvisionedPollerConfig); never more than the
	// partitions.
	MaximumPollers int `json:"maximum_pollers,omitempty"`
	// PollerGroup: the mappings share event poller units in a poller group (PollerGroupName)
	// instead of each paying its own.
	PollerGroup bool `json:"poller_group,omitempty"`

	// Memory is each function's memory in MB (default 256, the sample stack's) and
	// Architecture "arm64" (default) or "x86_64": they price the GB-seconds.
	Memory       int    `json:"memory,omitempty"`
	Architecture string `json:"architecture,omitempty"`
	// Concurrency caps the concurrent invocations of each function: reserved concurrency, the
	// account's quota (1,000 by default), or, for a plan checked against klt local, what this
	// machine runs at once. 0: the account default.
	Concurrency int `json:"concurrency,omitempty"`

	// Fanout describes the fan-out design's dispatcher, queue and workers.
	Fanout Fanout `json:"fanout,omitempty"`

	// IdempotencyWrites is the DynamoDB writes per record for exactly-once side effects
	// (package idempotency: a conditional PutItem in progress, a PutItem completed); default
	// 2, -1 for none. IdempotencyItemSize is the item's size in bytes (default 300), which
	// sets the write units each write takes.
	IdempotencyWrites   int `json:"idempotency_writes,omitempty"`
	IdempotencyItemSize int `json:"idempotency_item_size,omitempty"`
	// EgressBytes is the bytes per record the functions send out of the AWS Region (an
	// external API): data transfer out is charged; inside the Region between Lambda, MSK,
	// SQS and DynamoDB it is not. Default 0.
	EgressBytes int `json:"egress_bytes,omitempty"`

	// KeyConcurrency is n of batch.WithKeyConcurrency(n) for the key-concurrent design: the
	// direct design's function with at most n records in flight per invocation, records of
	// one key one after another. 0 (default): the design is not planned. 1 to 10,000.
	KeyConcurrency int `json:"key_concurrency,omitempty"`
	// Keys is the distinct record keys of the topic (default 1,000), 1 to 1,000,000: the
	// key-concurrent design's invocations draw from Keys × PartitionsPerInvocation /
	// partitions of them, and the fan-out's message groups are the keys (Fanout.MessageGroups
	// defaults to Keys).
	Keys int `json:"keys,omitempty"`
	// KeySkew is the keys' skew, the exponent s of Zipf's law (the i-th most frequent key
	// of an invocation's keys has a share ∝ i^-s): 0 (default) every key alike, 1 a typical
	// skew, up to 10. A skewed key holds a long chain of a batch's records, which bounds the
	// key-concurrent design's invocation.
	KeySkew float64 `json:"key_skew,omitempty"`
	// KeysInTurn: the producer sends the keys in turn (key 0, 1, ... as klt local --generate
	// does) instead of at random: b consecutive records of k keys hold ceil(b / k) of the most
	// frequent one. KeySkew must then be 0.
	KeysInTurn bool `json:"keys_in_turn,omitempty"`

	// LMI describes the direct design's function on Lambda Managed Instances, which the plan
	// prices beside on-demand Lambda for the same load.
	LMI LMI `json:"lmi,omitempty"`

	// Prices are the unit prices; a zero field takes the us-east-1 price (DefaultPrices).
	Prices Prices `json:"prices,omitempty"`
}

// Fanout is the fan-out design's part of an Input.
type Fanout struct {
	// Queue is "fifo" (default, as the sample's WorkQueue) or "standard".
	Queue string `json:"queue,omitempty"`
	// HighThroughput: a FIFO queue in high throughput mode (FifoThroughputLimit
	// perMessageGroupId): its per-queue limit is the Region's high-throughput quota.
	HighThroughput bool `json:"high_throughput,omitempty"`
	// FIFOCallsPerSecond is the Region's high-throughput FIFO quota, API calls per second per
	// action (us-east-1, us-west-2, eu-west-1: 70,000); default 2,400, the lowest Regions'.
	FIFOCallsPerSecond int `json:"fifo_calls_per_second,omitempty"`
	// MessageGroups is the number of distinct message groups with messages (FIFO: the
	// dispatcher's group is the record's key, so the distinct keys); default 1,000.
	MessageGroups int `json:"message_groups,omitempty"`
	// DispatchDuration is the dispatcher's time per record (default 1 ms) or
	// DispatchBatchDuration its time for a full batch, instead.
	DispatchDuration      Duration `json:"dispatch_duration,omitempty"`
	DispatchBatchDuration Duration `json:"dispatch_batch_duration,omitempty"`
	// DispatchBatchSize is the dispatcher mapping's BatchSize (default 500, the sample's).
	DispatchBatchSize int `json:"dispatch_batch_size,omitempty"`
	// WorkerDuration is a worker's time per message (default Input.Duration) or
	// WorkerBatchDuration its time for a full batch, instead.
	WorkerDuration      Duration `json:"worker_duration,omitempty"`
	WorkerBatchDuration Duration `json:"worker_batch_duration,omitempty"`
	// WorkerBatchSize is the SQS mapping's BatchSize (default 10, the most a FIFO queue's
	// mapping takes).
	WorkerBatchSize int `json:"worker_batch_size,omitempty"`
	// MaximumConcurrency is the SQS mapping's ScalingConfig.MaximumConcurrency; 0: none.
	MaximumConcurrency int `json:"maximum_concurrency,omitempty"`
}

// Prices are unit prices in US dollars. Each is documented with its source in prices.go.
type Prices struct {
	LambdaGBSecond       float64 `json:"lambda_gb_second,omitempty"`            // per GB-second of duration, for Input.Architecture
	LambdaRequests       float64 `json:"lambda_requests_per_million,omitempty"` // per million requests (invocations)
	EventPollerUnitHour  float64 `json:"event_poller_unit_hour,omitempty"`      // per EPU-hour, provisioned mode
	SQSStandardRequests  float64 `json:"sqs_standard_per_million,omitempty"`    // per million requests (64 KB chunks)
	SQSFIFORequests      float64 `json:"sqs_fifo_per_million,omitempty"`        // per million requests (64 KB chunks)
	DynamoDBWriteUnits   float64 `json:"dynamodb_write_per_million,omitempty"`  // on-demand, per million write request units
	DataTransferOutPerGB float64 `json:"data_transfer_out_per_gb,omitempty"`    // to the internet, first 10 TB a month
	LMIInstanceHour      float64 `json:"lmi_instance_hour,omitempty"`           // LMI: the instance type's EC2 on-demand price an hour
	LMIManagementFee     float64 `json:"lmi_management_fee,omitempty"`          // LMI: the management fee, a fraction of the instance price (0.15)
}

// Duration is a time.Duration that reads and writes as Go's duration text ("300ms", "1.5s")
// in JSON and YAML inputs, and as a number of milliseconds in JSON output.
type Duration time.Duration

// Plan is the result: the filled Input and one Design per design.
type Plan struct {
	Input  Input  `json:"input"`
	Direct Design `json:"direct"`
	Fanout Design `json:"fanout"`
	// KeyConcurrent is the direct design's function with batch.WithKeyConcurrency
	// (Input.KeyConcurrency): records of different keys at once within an invocation, each
	// key in offset order (keys.go has the model). Nil when Input.KeyConcurrency is 0.
	KeyConcurrent *Design `json:"key_concurrent,omitempty"`
	// Cheaper names the design to build: of the designs that reach the target, the one with
	// the lowest monthly cost (on a tie the simpler: "direct", then "key_concurrent", then
	// "fanout"); the only one when one reaches it; empty when none does. A design that does
	// not reach the target is never compared: it has no cost.
	Cheaper string `json:"cheaper"`
	// Notes are what the plan assumed and a reader must know: "the handler takes its
	// records one after another (Duration, not BatchDuration)".
	Notes []string `json:"notes"`
	// LMI is the direct design's function on Lambda Managed Instances, priced beside the
	// direct design on demand for the same load.
	LMI LMIPlan `json:"lmi"`
	// Runs are, for a plan made from a klt local report (FromReport), what it predicts for
	// each load pipeline of that run beside what the run measured ([PredictRuns]); absent
	// otherwise.
	Runs []RunPrediction `json:"runs,omitempty"`
}

// Design is one design's figures.
type Design struct {
	// Name is "direct", "key_concurrent" or "fanout".
	Name string `json:"name"`
	// MaxRecordsPerSecond is the most the design reaches with Input.Partitions (or, when
	// not given, with PartitionsNeeded), and Bound says what limits it, in words: "5
	// partitions, one invocation each at a time, 30 s per invocation of 100 records".
	MaxRecordsPerSecond float64 `json:"max_records_per_second"`
	Bound               string  `json:"bound"`
	// ReachesTarget is MaxRecordsPerSecond >= Input.Rate, with counts that reach it. A
	// design that does not reach the target has no cost and no recommendation (both null in
	// JSON), and Lifts says what inputs would lift its bound.
	ReachesTarget bool `json:"reaches_target"`
	// Lifts are the changes of input that lift the bound of a design that does not reach the
	// target (a standard queue for a FIFO queue's throughput, more partitions ...); empty when
	// it reaches the target or when no input lifts it (a record too large for a message).
	Lifts []Lift `json:"lifts,omitempty"`
	// The minimum of each that reaches Input.Rate: the Kafka mapping's pollers, the
	// function's concurrent invocations (fanout: the workers'), the topic's partitions.
	// 0 with ReachesTarget false when no count reaches it (Bound says why).
	PollersNeeded     int `json:"pollers_needed"`
	ConcurrencyNeeded int `json:"concurrency_needed"`
	PartitionsNeeded  int `json:"partitions_needed"`
	// EventPollerUnits is the EPUs the Kafka mapping's pollers take (provisioned mode).
	EventPollerUnits int `json:"event_poller_units"`
	// Recommended is the headroom: what to configure for the burst on top of the minimum;
	// nil when the design does not reach the target.
	Recommended *Recommended `json:"recommended"`
	// Burst is the lag a burst leaves; null without Input.Burst.
	Burst *Burst `json:"burst"`
	// MonthlyCostUSD is the sum of CostLines, at Input.Rate for a 30-day month; nil, and no
	// CostLines, when the design does not reach the target: a design that cannot carry the
	// rate has no price for it.
	MonthlyCostUSD *float64   `json:"monthly_cost_usd"`
	CostLines      []CostLine `json:"cost_lines"`
	// Stages are the design's steps (direct: one; fanout: dispatcher, queue, workers), each
	// with its own maximum and bound; the design's maximum is the smallest.
	Stages []Stage `json:"stages"`
	// Figures are every intermediate figure, with its formula and source.
	Figures []Figure `json:"figures"`
}

// Recommended is the configuration with headroom: MinimumPollers for the steady rate,
// MaximumPollers, partitions and concurrency for the burst (equal to the minimum without
// one).
type Recommended struct {
	MinimumPollers int `json:"minimum_pollers"`
	MaximumPollers int `json:"maximum_pollers"`
	Partitions     int `json:"partitions"`
	Concurrency    int `json:"concurrency"`
}

// Lift is a change of one input that lifts the bound of a design that does not reach the
// target.
type Lift struct {
	// Field is the input by its JSON name ("fanout.queue"), Value the value that lifts the
	// bound ("standard", "true", "30"), Why what it gives and costs, in words, and Source the
	// AWS page it rests on.
	Field  string `json:"field"`
	Value  string `json:"value"`
	Why    string `json:"why"`
	Source string `json:"source"`
}

// Stage is one step of a design.
type Stage struct {
	Name                string  `json:"name"` // "function", "dispatcher", "queue", "workers"
	MaxRecordsPerSecond float64 `json:"max_records_per_second"`
	Bound               string  `json:"bound"`
	Formula             string  `json:"formula"`
	Source              string  `json:"source"`
}

// Burst is the lag a burst leaves: it grows while the burst outruns the design
// (Input.Burst - MaxRecordsPerSecond records a second, for BurstFor), then drains at
// MaxRecordsPerSecond - Input.Rate.
type Burst struct {
	LagRecords float64 `json:"lag_records"` // the largest lag, at the burst's end
	// DrainSeconds is the time from the burst's end until the lag is gone; null when the
	// design does not outrun even the steady rate (the lag never drains).
	DrainSeconds *float64 `json:"drain_seconds"`
	// Curve is the lag over time from the burst's start, for the chart.
	Curve []Point `json:"curve"`
}

// Point is one point of a curve.
type Point struct {
	X float64 `json:"x"`
	Y float64 `json:"y"`
}

// Figure is one computed figure: its value, the formula that produced it with the numbers
// put in, and the source (an AWS documentation URL, and the sentence's gist).
type Figure struct {
	Name    string  `json:"name"`
	Value   float64 `json:"value"`
	Unit    string  `json:"unit"`
	Formula string  `json:"formula"`
	Source  string  `json:"source"`
}

// CostLine is one line of a design's monthly cost.
type CostLine struct {
	Item       string  `json:"item"` // "Lambda requests (ConsumerFunction)"
	Quantity   float64 `json:"quantity"`
	Unit       string  `json:"unit"` // "million requests", "GB-seconds", "EPU-hours"
	UnitPrice  float64 `json:"unit_price_usd"`
	MonthlyUSD float64 `json:"monthly_usd"`
	Formula    string  `json:"formula"`
	Source     string  `json:"source"`
}

// ErrInput is wrapped by every error about an Input.
var ErrInput = errors.New("capacity: invalid input")

// Make makes the plan for in. It fails (wrapping ErrInput) on an input out of its stated
// bounds, saying which field and why; it never guesses a missing required figure.
func Make(in Input) (*Plan, error) {
	f, notes, err := in.filled()
	if err != nil {
		return nil, err
	}
	return makePlan(f, notes)
}
