package lint

import (
	"context"
	"flag"
	"fmt"
	"io"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
)

// RunLint runs "klt lint [TEMPLATE]".
func RunLint(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	file := "template.yaml"
	switch len(args) {
	case 0:
	case 1:
		file = args[0]
	default:
		return base.UsageError(stderr, "lint", fmt.Errorf("want one template, got %d arguments", len(args)))
	}
	problems, err := samlint.LintFile(ctx, file)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		return base.ExitFail
	}
	for _, p := range problems {
		fmt.Fprintln(stdout, base.OneLine(p.String()))
	}
	if note := samlint.UncheckedNote(ctx, file); note != "" {
		fmt.Fprintln(stderr, note)
	}
	if len(problems) > 0 {
		base.Errorf(stderr, "%s: %s", file, base.Plural(len(problems), "problem"))
		return base.ExitFail
	}
	fmt.Fprintf(stdout, "ok: %s passes the SAM schema and klt's checks\n", file)
	return base.ExitOK
}

// UsageLint is the help of "klt lint".
const UsageLint = `Usage: klt lint [TEMPLATE]

Lint checks a SAM template (template.yaml when TEMPLATE is not given): first against the
official SAM JSON schema (vendored in klt, intrinsic functions such as !Ref, !GetAtt and !Sub
read in their long forms), then for the mistakes of Kafka, SQS and DynamoDB Streams functions
that deploy fine and lose or repeat records:

  - a function whose Go code returns partial-batch responses (it uses the toolkit's batch or
    fanout package, or aws-lambda-go's SQS, DynamoDB or Kinesis event responses) with an MSK,
    SelfManagedKafka, SQS or DynamoDB event without FunctionResponseTypes:
    [ReportBatchItemFailures]: Lambda then takes every failure for a success;
  - an SQS queue whose VisibilityTimeout is under 6 x the Timeout of a function it feeds plus
    the event's batching window;
  - an SQS event on a FIFO queue with a BatchSize over 10;
  - a Kafka event with BatchSize outside 1..10000 or MaximumBatchingWindowInSeconds outside
    0..300;
  - FilterCriteria that Lambda would refuse (as "klt filter lint" checks them);
  - a table that keeps idempotency records (named in IDEMPOTENCY_TABLE, or used by code that
    imports the toolkit's idempotency package) without TTL on "expiration";
  - IAM that lacks an action the code calls: sqs:SendMessage on the queue of batch.NewSQSSink
    or fanout.NewDispatcher, dynamodb:GetItem, PutItem and DeleteItem on the
    idempotency table, kafka-cluster:Connect, WriteData and DescribeTopic for the producer
    package with IAM auth. Policies count as SAM policy templates (SQSSendMessagePolicy,
    DynamoDBCrudPolicy ...), a few AWS managed policies, and inline statements.

A function's code is the Go main package in its CodeUri directory or, with
Metadata: BuildMethod: makefile, the package its build-LOGICALID target builds (found with
"make -n"). Each problem is one line on stdout:

  RESOURCE PROPERTY.PATH: problem; fix: what to change

The exit status is 0 when there is none, 1 when there are problems or the template cannot be
read, and 2 when the command line is wrong.

Example:

  klt lint template.yaml
`
