package plancmd

// usagePlan is the help of "klt plan".
const usagePlan = `Plan sizes and prices a Kafka -> Lambda stack before it is built, for the designs of the
toolkit: direct (Kafka -> event source mapping -> the function), fan-out (Kafka -> a
dispatcher -> an SQS queue, FIFO or standard -> workers) and, with --key-concurrency N,
key-concurrent (the direct design's function with batch.WithKeyConcurrency(N): records of
different keys at once, each key in order, no queue; an invocation lasts as long as its longest
same-key chain, from --keys, --key-skew and --keys-in-turn). For a target rate of records, their
size and the time the handler spends on them, it prints for each design the most records a
second it reaches and what bounds it (partitions, pollers and their 5 MB/s, the 6 MB payload,
an SQS FIFO queue's throughput per message group and per queue, concurrency), the pollers,
event poller units, partitions and concurrency the target needs, the lag a burst leaves and how
long it takes to drain, and the monthly cost line by line (Lambda requests and GB-seconds, event
poller units, SQS requests in 64 KB chunks, DynamoDB writes for idempotency, data transfer out),
then the cheaper of the designs that reach the target. A design that does not reach it has no
cost and no recommendation: the plan says why, and what lifts its bound (more partitions, a
higher MaximumPollers or concurrency, --queue standard, --high-throughput, more message groups).
Each figure gives its formula and the AWS page it rests on.
The model is AWS's published arithmetic and prices (us-east-1, arm64, unless --price says
otherwise): it knows no cold starts, no downstream that throttles, no free tier.

--rate and one of --duration and --batch-duration are required, unless --from-report gives them:
the report of a klt local run (report.json), read for its stack's configuration and measured
durations at --from-report-stat (the mean by default: a throughput is a mean, so the mean
time predicts it; p99 makes a pessimistic plan) and its measured records per second. The local
concurrency the run had is in the report: a plan to compare with the run keeps it, one for AWS
gives --concurrency. --config FILE reads the inputs from YAML or JSON whose keys are the JSON
names of the plan's "input" (rate, duration, batch_size, fanout: {queue, ...}, prices: {...});
an unknown key and a key given twice are errors. Flags given win over --config, and --config
over the report.

Sizes are bytes (1024) or a number with a unit: 1KB, 1.5MiB, 6MB (KB and KiB are both 1,024
bytes, as AWS's limits count them). Durations are Go's: 300ms, 1.5s, 5m; in --config also a
number of milliseconds, as the JSON writes them, so that the "input" of a plan's JSON is a
--config file.

Every figure, from a flag, --config or --from-report, is checked against its range before it
is used: AWS's where AWS sets one (BatchSize 1 to 10,000, a window of at most 300 s,
MaximumPollers 1 to 2,000 and 200 by default, an invocation of at most 14 minutes behind a
Kafka mapping), the planner's otherwise (a rate of 0.001 to 1e9 records a second, at most
100,000 partitions); NaN, infinities and negative figures are refused. The error names the
figure where it came from, once: "--batch-size 20000: ...", "--config plan.yaml:3:13:
batch_size: 20000: ...", "--from-report report.json: mappings[0].config.window_ms: 1e+300:
...".

--format json prints the plan as JSON: "input" (with the defaults filled in; durations in
milliseconds), "direct" and "fanout" (each with max_records_per_second, bound,
reaches_target, lifts, pollers_needed, concurrency_needed, partitions_needed, recommended,
burst, monthly_cost_usd and cost_lines (recommended and monthly_cost_usd null for a design
that does not reach the target), stages and figures, each figure with its formula and
source), "cheaper" and "notes". --report DIR writes the same JSON as DIR/plan.json and a
page, DIR/plan.html, with charts of the most records a second against partitions and against
concurrency, of the monthly cost against the rate, and of a burst's lag.

The exit status is 0 when a design reaches --rate, 1 when none does (the plan says why and
is printed all the same) or a file cannot be read or holds a figure out of its range, and 2
when the command line is wrong (a flag's figure out of its range included).
`

// usagePlanExamples ends the help of "klt plan".
const usagePlanExamples = `
Examples:

  klt plan --rate 100 --partitions 5 --duration 300ms --maximum-concurrency 300
  klt plan --rate 20000 --batch-size 20 --batch-duration 50ms --format json
  klt plan --rate 500 --partitions 5 --duration 300ms --keys 1000 --key-concurrency 100
  klt plan --rate 500 --burst 2000 --burst-for 5m --duration 20ms --partitions 12 --report plan
`
