package local

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/localstack"
)

func newLocalFlags(c *localstack.Config) *flag.FlagSet {
	c.Loads, c.Partitions, c.Params = localstack.CountFlag{}, localstack.CountFlag{}, localstack.ParamsFlag{}
	fs := flag.NewFlagSet("local", flag.ContinueOnError)
	fs.StringVar(&c.Template, "template", "template.yaml", "the SAM `FILE` of the stack")
	fs.Var(c.Loads, "load", "produce `N` records for each pipeline (PIPELINE=N: the one starting at that function), report")
	fs.Var(c.Partitions, "partitions", "the partitions of every topic (`N`), or TOPIC=N (repeatable; default 1)")
	fs.Float64Var(&c.Rate, "rate", 0, "produce the load at `R` records per second (0: as fast as Kafka takes them)")
	fs.IntVar(&c.Keys, "keys", 100, "spread the load over `K` record keys (customers)")
	fs.DurationVar(&c.Work, "work", 0, "how long the local orders API takes per order (`D`, e.g. 300ms)")
	fs.IntVar(&c.Faults, "faults", 0, "then run every pipeline at once on `N` records with three faults (0: none)")
	fs.StringVar(&c.Report, "report", "", "write report.json, report.html and report.svg to `DIR`")
	fs.StringVar(&c.Logs, "logs", "", "write the functions' logs to `DIR`/<Function>.log (default: DIR/logs of --report, or a temp dir)")
	fs.Var(c.Params, "parameter-overrides", "give the template parameter NAME the value VALUE (`NAME=VALUE`, repeatable)")
	fs.DurationVar(&c.PhaseTimeout, "phase-timeout", 5*time.Minute, "give up on a phase's records after `D`: those not accounted for are lost")
	return fs
}

// RunLocal runs "klt local".
func RunLocal(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c localstack.Config
	fs := newLocalFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	if len(args) != 0 {
		return base.UsageError(stderr, "local", fmt.Errorf("unexpected argument %q", args[0]))
	}
	if c.Keys < 1 || c.Rate < 0 || c.Work < 0 || c.Faults < 0 || c.PhaseTimeout <= 0 {
		return base.UsageError(stderr, "local", errors.New("--keys must be at least 1; --rate, --work and --faults at least 0; --phase-timeout positive"))
	}
	if c.Faults > 0 && c.Faults < 10 {
		return base.UsageError(stderr, "local", fmt.Errorf("--faults %d: want at least 10 records, so that the three faults fall on different records with others between them", c.Faults))
	}
	if c.Faults > 0 && len(c.Loads) == 0 {
		return base.UsageError(stderr, "local", errors.New("--faults needs --load: the faults run after the load"))
	}
	if err := localstack.LocalMain(ctx, c, stdout, stderr); err != nil {
		base.Errorf(stderr, "local: %v", err)
		return base.ExitFail
	}
	return base.ExitOK
}

// LocalFlags returns the flags of "klt local", for its help.
func LocalFlags() *flag.FlagSet { return newLocalFlags(new(localstack.Config)) }

// UsageLocal is the help of "klt local".
const UsageLocal = `Usage: klt local [flags]

Run a SAM stack on this machine, without Docker or an AWS account: Kafka (kfake, in process),
DynamoDB (dynalite) and SQS (local-aws-sqs) with the template's tables and queues (redrive
policies included) and topics; each function that an event source mapping invokes, built as
sam build builds it (its make build-<LogicalId> target, or go build) and run as real processes
speaking the Lambda Runtime API, one invocation at a time each, as many as the mappings ask for,
every invocation bounded by the function's Timeout (a timed-out instance is replaced); and the
Kafka and SQS event source mappings, emulated by the rules AWS documents: batch size and window,
the 6 MB payload, one invocation per partition at a time, FilterCriteria, partial-batch
responses, retries, record age, bisection, on-failure destinations; for SQS, visibility timeout,
redrive, FIFO group order and scaling. DynamoDB stream and other event sources are listed and
not run.

Without --load, the stack runs until Ctrl-C with the template's consumer groups: produce to it
with klt produce. With --load, klt produces records of orders (a key per customer, --keys),
runs each pipeline in turn on its own records (a pipeline starts at a Kafka mapping and goes on
through the queues its function sends to: ConsumerFunction; DispatcherFunction -> WorkQueue ->
WorkerFunction), each as a fresh mapping (a consumer group of its own), and counts every record's
fate at the local orders API it serves to the template parameter OrdersApiUrl (each order the
API accepts is applied; --work is how long it takes), in the failure and dead-letter queues,
and in the FilterCriteria: lost, applied twice, applied out of key order. --faults runs every
pipeline once more on records with a poison order, an orders API error on the first attempt,
and an invocation that times out (klt freezes the function's process). Progress goes to stdout,
one line per mapping; then the report, written as report.json and report.html with --report.

The exit status is 1 when a record was lost, applied twice or out of order, and when the
template, a build or a server fails.
`

// UsageLocalExamples ends the help of "klt local".
const UsageLocalExamples = `
Examples:

  klt local --partitions 5
  klt local --partitions 5 --keys 1000 --work 300ms \
    --load ConsumerFunction=500 --load 5000 --faults 60 --report demo
  make demo
`
