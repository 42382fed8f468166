package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/stackrun"
)

func newLocalFlags(c *stackrun.Config) *flag.FlagSet {
	c.Loads, c.Partitions, c.Params, c.LMIConcurrency = stackrun.CountFlag{}, stackrun.CountFlag{}, funcrun.ParamsFlag{}, stackrun.CountFlag{}
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.StringVar(&c.Template, "template", "template.yaml", "the SAM `FILE` of the stack")
	fs.Var(c.Params, "parameter-overrides", "give the template parameter NAME the value VALUE (`NAME=VALUE`, repeatable)")
	fs.Var(c.Partitions, "partitions", "the partitions of every topic (`N`), or TOPIC=N (repeatable; default 1)")
	fs.Var(c.LMIConcurrency, funcrun.LMIFlag, "run a function as a Lambda Managed Instances function, `FUNCTION=N`: N invocations at\nonce per execution environment (repeatable; N alone: every function).\n"+funcrun.LMIFlagHelp)
	fs.BoolVar(&c.OnePartitionPerInvocation, "one-partition-per-invocation", false, "give each Kafka invocation the records of one partition only (default: one event holds\nrecords of several partitions, as AWS makes them)")

	fs.StringVar(&c.Input.Records, "records", "", "produce the records of `FILE`, JSON Lines as klt event build reads them (a key, a value,\nheaders), to each pipeline's topic")
	fs.IntVar(&c.Input.Repeat, "repeat", 1, "go through the --records file up to `N` times (0: cycle through it as long as --load\nasks)")
	fs.StringVar(&c.Input.Generate, "generate", "", "produce records whose value is `TEMPLATE`, with {{seq}} the record's number in its phase\nand {{key}} its key (also the record's key)")
	fs.IntVar(&c.Input.Keys, "keys", 100, "with --generate: draw the keys from `K` keys, key-0 to key-(K-1), in turn")
	c.Input.Headers = stackrun.HeaderFlag{Headers: new([][2]string)}
	fs.Var(c.Input.Headers, "header", "with --generate: give each record a header, `NAME=TEMPLATE`: its name, and its value with\n--generate's placeholders (repeatable; e.g. correlation-id=order-{{seq}})")
	fs.Var(c.Loads, "load", "produce `N` records to each pipeline, or PIPELINE=N to the one starting at that\nfunction (repeatable; default: every record of --records, --repeat times)")
	fs.Float64Var(&c.Rate, "rate", 0, "produce at `R` records per second (0: as fast as Kafka takes them)")
	fs.Var(stackrun.FaultsFlag{Faults: &c.Faults}, "fault", "inject a fault, `KIND:ARGS` (repeatable): timeout:SELECTOR, crash:SELECTOR, http:SELECTOR,\nvalue:SELECTOR:VALUE, dynamodb:N, sqs:N, kafka:N; SELECTOR is seq=N or key=K")
	fs.IntVar(&c.FaultLoad, "fault-load", 0, "after the --load phases, run every pipeline at once on `N` records with the --fault faults\n(0: the faults apply to each --load phase)")

	fs.StringVar(&c.HTTPSink, "http-sink", "", "serve a local HTTP sink at the template parameter `PARAM`: klt records each request\n(one path per function) and its Idempotency-Key, the record it applies")
	fs.Var(stackrun.VariantsFlag{Variants: &c.Variants}, "variant", "run a copy of a function beside it as a pipeline of its own, `NAME=FUNCTION:PARAMETER=VALUE`:\nthe copy NAME, its environment resolved with the template parameter PARAMETER=VALUE, its\nKafka mapping copied in a consumer group of its own (repeatable; make demo: the consumer\nwith KeyConcurrency=100 beside the one without)")
	fs.DurationVar(&c.Work, "work", 0, "with --http-sink: how long the sink takes per request (`D`, e.g. 300ms)")

	fs.StringVar(&c.Report, "report", "", "write report.json, report.html and report.svg to `DIR`")
	fs.StringVar(&c.Logs, "logs", "", "write the functions' logs to `DIR`/<Function>.log (default: DIR/logs of --report, or a temp dir)")
	fs.DurationVar(&c.PhaseTimeout, "phase-timeout", 5*time.Minute, "give up on a phase's records after `D`: those not accounted for are lost")
	return fs
}

// runLocal runs "klt local".
func runLocal(ctx context.Context, c *stackrun.Config, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		return base.UsageError(stderr, "local", fmt.Errorf("unexpected argument %q", args[0]))
	}
	if err := checkConfig(fs, c); err != nil {
		return base.UsageError(stderr, "local", err)
	}
	c.Version = strings.TrimPrefix(base.VersionLine(), "klt ")
	if err := stackrun.LocalMain(ctx, *c, stdout, stderr); err != nil {
		base.Errorf(stderr, "local: %v", err)
		return base.ExitFail
	}
	return base.ExitOK
}

// checkConfig refuses flags that contradict each other, before anything starts.
func checkConfig(fs *flag.FlagSet, c *stackrun.Config) error {
	set := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { set[f.Name] = true })
	load := c.Load()
	switch {
	case c.Rate < 0 || c.Work < 0 || c.FaultLoad < 0 || c.PhaseTimeout <= 0:
		return errors.New("--rate, --work and --fault-load must be at least 0; --phase-timeout positive")
	case c.Input.Records != "" && c.Input.Generate != "":
		return errors.New("--records and --generate: give one of them")
	case set["repeat"] && c.Input.Records == "":
		return errors.New("--repeat goes with --records")
	case set["header"] && c.Input.Generate == "":
		return errors.New("--header goes with --generate (the records of --records have their own headers)")
	case set["keys"] && c.Input.Generate == "":
		return errors.New("--keys goes with --generate (the records of --records have their own keys)")
	case c.Input.Keys < 1:
		return fmt.Errorf("--keys %d: want at least 1", c.Input.Keys)
	case c.Input.Repeat < 0:
		return fmt.Errorf("--repeat %d: want 0 (cycle) or more", c.Input.Repeat)
	case len(c.Loads) > 0 && c.Input.Records == "" && c.Input.Generate == "":
		return errors.New("--load needs records: --records FILE or --generate TEMPLATE")
	case c.Input.Generate != "" && len(c.Loads) == 0:
		return errors.New("--generate needs --load N: a generator has no end")
	case set["work"] && c.HTTPSink == "":
		return errors.New("--work is the time the HTTP sink takes per request: it goes with --http-sink PARAM")
	case !load && (len(c.Faults) > 0 || c.FaultLoad > 0 || set["rate"]):
		return errors.New("--fault, --fault-load and --rate go with a load: --records FILE or --generate TEMPLATE --load N")
	case c.FaultLoad > 0 && len(c.Faults) == 0:
		return errors.New("--fault-load N runs the --fault faults: give at least one --fault")
	}
	for _, f := range c.Faults {
		if f.Kind == "http" && c.HTTPSink == "" {
			return fmt.Errorf("--fault %s: the HTTP sink answers it: give --http-sink PARAM", f.Text)
		}
	}
	return nil
}

// Cmd is the command "klt local".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt local [flags]",
	Short:     "run a SAM stack locally, event source mappings included; --load measures it",
	Long:      usageLocal,
	Examples:  usageLocalExamples,
}, newLocalFlags, runLocal)

// usageLocal is the help of "klt local".
const usageLocal = `Run a SAM stack on this machine, without Docker or an AWS account: Kafka (kfake, in process),
DynamoDB (dynalite) and SQS (local-aws-sqs) with the template's tables and queues (redrive policies
included) and topics; each function that an event source mapping invokes, built as sam build builds
it (its make build-<LogicalId> target, or go build) and run as real processes speaking the Lambda
Runtime API, one invocation at a time each, as many as the mappings ask for, every invocation
bounded by the function's Timeout (a timed-out or crashed instance is replaced), or, for a Lambda
Managed Instances function (CapacityProviderConfig in the template, or --lmi-concurrency), N
invocations at once in each process, timeouts not enforced (the report lists each function's
environments, the most each ran at once, and the invocations that ran past their deadline); and the
Kafka and SQS event source mappings, emulated by the rules AWS documents: batch size and window,
the 6 MB payload, records of several partitions in one event (one invocation in flight per
partition), FilterCriteria, partial-batch responses, retries, record age, bisection, on-failure
destinations; for SQS, visibility timeout, redrive, FIFO group order and scaling. DynamoDB stream
and other event sources are listed and not run. Template parameters take --parameter-overrides,
their Default, or, for one that gives a Kafka mapping its bootstrap servers, the local Kafka's
address.

klt local builds and runs the functions' code (their make targets or go build, then their
bootstraps), and nothing else of the repository; the template is refused first, at
FILE:LINE:COL, as klt invoke refuses it (a logical ID that is not alphanumeric, a CodeUri or
Handler outside the template's directory...). It writes only into its work directory and the
--report and --logs directories (by default a new temporary one for the logs).

` + funcrun.NodeServersHelp + `
Without --records or --generate, the stack runs until Ctrl-C with the template's consumer
groups: produce to it with klt produce (the line to use is printed). A line per mapping shows
its counters when one changes; Ctrl-C prints a summary, the messages of the failure and
dead-letter queues included (they stay in their queues, readable with the AWS CLI).

With --records FILE or --generate TEMPLATE, klt measures the stack. A pipeline starts at a Kafka
mapping and goes on through the queues its function sends to, to the function of the mapping
that reads each. Each pipeline runs in turn on its own records (--load N or PIPELINE=N, the
pipeline named by its first function), with fresh mappings (consumer groups of their own,
starting at its first record), and klt follows every record: each mapping's deliveries and
responses, and every side effect it can observe (items written to the template's tables,
messages sent to its queues, records produced to its topics, requests to the --http-sink),
wherever the record's identity travels (topic-partition-offset: the fan-out message's record
attribute, the producer's source header, an idempotency key, the Idempotency-Key header).
The report says per pipeline what it could and could not observe, and counts, where it
observed: lost, applied twice, applied out of key order.

Faults (--fault KIND:ARGS, repeatable) are named against a record of a phase, SELECTOR: seq=N
(the Nth record of the phase) or key=K (its first record with key K):

  timeout[@FUNCTION]:SELECTOR  freeze the process of the invocation that carries the record: it
                               times out and its instance is replaced (FUNCTION: default the
                               pipeline's last function)
  crash[@FUNCTION]:SELECTOR    kill -9 that process: the invocation fails, Runtime.ExitError
  http:SELECTOR                the HTTP sink answers 503 to each function's first request for
                               the record
  value:SELECTOR:VALUE         produce the record with VALUE instead (placeholders as
                               --generate's): a poison record in the stack's own terms
  dynamodb:N[:OPERATION]       the functions' next N calls to the local DynamoDB (or only those
  sqs:N[:OPERATION]            of OPERATION, e.g. PutItem) fail with an error the SDKs retry;
                               the same for SQS (e.g. SendMessage)
  kafka:N                      the functions' next N produce requests fail with a retriable error

The faults apply to each --load phase, or, with --fault-load N, to one more phase where every
pipeline runs at once on N records. The report says where each faulted record went. Progress
goes to stdout when a figure changes; then the report, written as report.json, report.html and
report.svg with --report.

The exit status is 1 when a record was lost, applied twice or out of order, and when the
template, a build or a server fails.
`

// usageLocalExamples ends the help of "klt local".
const usageLocalExamples = `
Examples:

  klt local --partitions 5
  klt local --template stack/template.yaml --records readings.jsonl \
    --fault kafka:3 --fault timeout:seq=4
  klt local --partitions 5 --http-sink OrdersApiUrl --work 300ms \
    --generate '{"orderId":{{seq}},"customer":"{{key}}","total":1,"currency":"EUR"}' --keys 1000 \
    --load ConsumerFunction=500 --load 5000 --report demo
  make demo
`
