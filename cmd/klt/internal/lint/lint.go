package lint

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/clitext"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
	"github.com/kafkalambda/toolkit/internal/template"
)

// Cmd is the command "klt lint".
var Cmd = base.WithFlags(&base.Command{
	UsageLine:   "klt lint [--format text|json] [TEMPLATE]",
	Short:       "check a SAM template: the SAM schema, and the mistakes that lose records",
	Long:        usageLint,
	FlagsInLong: true,
}, newLintFlags, runLint)

// lintConfig holds the flags of "klt lint".
type lintConfig struct{ format string }

// newLintFlags returns the flag set of "klt lint", storing into c.
func newLintFlags(c *lintConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("lint", flag.ContinueOnError)
	fs.StringVar(&c.format, "format", "text", "the output: text (one line a problem) or json (one JSON array)")
	return fs
}

// runLint runs "klt lint [TEMPLATE]".
func runLint(ctx context.Context, c *lintConfig, _ *flag.FlagSet, args []string, _ io.Reader, stdout, stderr io.Writer) int {
	format := &c.format
	file := "template.yaml"
	switch len(args) {
	case 0:
	case 1:
		file = args[0]
	default:
		return base.UsageError(stderr, "lint", fmt.Errorf("want one template, got %d arguments", len(args)))
	}
	if *format != "text" && *format != "json" {
		return base.UsageError(stderr, "lint", fmt.Errorf("--format %q: want text or json", *format))
	}
	problems, err := samlint.LintFile(ctx, file)
	if err != nil {
		base.Errorf(stderr, "%v", err)
		if te, ok := errors.AsType[*template.Error](err); ok && *format == "json" {
			// The place of a template that cannot be read, for the editor too.
			_ = writeJSON(stdout, []samlint.Problem{{Pos: te.Pos, Resource: "(template)", Path: "(whole)",
				Problem: te.Msg, Fix: "correct the template's text there"}})
		}
		return base.ExitFail
	}
	if *format == "json" {
		if err := writeJSON(stdout, problems); err != nil {
			base.Errorf(stderr, "%v", err)
			return base.ExitFail
		}
	} else {
		for _, p := range problems {
			fmt.Fprintln(stdout, clitext.OneLine(p.String()))
		}
	}
	if note := samlint.UncheckedNote(ctx, file); note != "" {
		fmt.Fprintln(stderr, note)
	}
	if len(problems) > 0 {
		base.Errorf(stderr, "%s: %s", file, clitext.Plural(len(problems), "problem"))
		return base.ExitFail
	}
	if *format == "text" {
		fmt.Fprintf(stdout, "ok: %s passes the SAM schema and transform rules, the CloudFormation schemas and klt's checks\n", file)
	}
	return base.ExitOK
}

// writeJSON writes problems as one JSON array ([] for none), one object a problem.
func writeJSON(w io.Writer, problems []samlint.Problem) error {
	out := make([]samlint.ProblemJSON, 0, len(problems))
	for _, p := range problems {
		out = append(out, p.JSON())
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	_, err = w.Write(append(b, '\n'))
	return err
}

// usageLint is the help of "klt lint".
const usageLint = `Lint checks a SAM template (template.yaml when TEMPLATE is not given) as AWS will, then for
the mistakes that deploy fine and lose or repeat records. What AWS will refuse:

  - the official SAM JSON schema (vendored in klt; an intrinsic function such as !Ref, !GetAtt
    or !Sub stands for a value of any type, and where the schema is stricter than the SAM
    transform, klt follows the transform);
  - the SAM transform's own rules for MSK, SelfManagedKafka, SQS, Kinesis and DynamoDB events
    (read from aws-sam-translator), quoting what "sam deploy" says;
  - what the transform makes of the template: the AWS::Lambda::Function and the event source
    mappings it writes against their CloudFormation schemas (Runtime, LoggingConfig,
    ProvisionedPollerConfig...), reference cycles (Ref, GetAtt, Sub, DependsOn, the role it
    writes) and two resources with one primary identifier (two functions of one
    FunctionName), each reported at the property written;
  - every plain CloudFormation resource against its CloudFormation resource schema (vendored
    from cfn-lint): unknown properties with a "did you mean", types, required properties,
    enums, lengths and the schema's own rules; a type klt has no schema for is named once on
    stderr as unchecked.

Then the mistakes of Kafka, SQS and DynamoDB Streams functions:

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
  - IAM that lacks an action the code calls: sqs:SendMessage on the queue of sqssink.New
    or fanout.NewDispatcher, dynamodb:GetItem, PutItem and DeleteItem on the
    idempotency table, kafka-cluster:Connect, WriteData and DescribeTopic for the producer
    package with IAM auth. Policies count as SAM policy templates (SQSSendMessagePolicy,
    DynamoDBCrudPolicy ...), a few AWS managed policies, and inline statements;
  - the consumer's filter given twice and not equal: an event source's FilterCriteria and
    its function's FILTER_CRITERIA guard, compared as filter patterns (Lambda commits the
    offsets of the records its criteria drop, and the guard drops the rest);
  - a Kafka topic on-failure destination (kafka://...), a SchemaRegistryConfig or a
    LoggingConfig (the event pollers' system logs) on a Kafka event source without
    ProvisionedPollerConfig: all need provisioned mode;
  - MaximumRetryAttempts: -1 with an on-failure destination on a Kafka event source: Lambda
    caps the retries at 10 then;
  - a batching window on the SQS event of a FIFO queue, which FIFO mappings do not take;
  - an idempotency table whose key is not a string partition key "id" alone;
  - the Kafka-only MetricsConfig groups (ErrorCount, KafkaMetrics) or a LoggingConfig on an
    SQS, DynamoDB or Kinesis event source;
  - a CloudWatch alarm whose metric dimension cannot match the metric of a resource of the
    stack: a logical ID written out (FunctionName: MyFunction), a queue's Ref (its URL) as
    QueueName, an ARN as FunctionName, a resource of another type, or a name that is no
    resource or parameter of the template.

A function's code is the Go main package in its CodeUri directory or, with
Metadata: BuildMethod: makefile, the package of the go build in the build-LOGICALID target of
the CodeUri's Makefile. Lint runs nothing of the repository: it reads the Makefile as text,
never with make (which runs $(shell ...) and "+" lines even under make -n), following the
variables the file defines, $(addprefix), $(addsuffix), $(subst), $(strip), $@ and a "cd DIR &&";
what only running make or the shell would tell (an include, a conditional, $(shell ...), a
variable from the environment, a pattern rule...) is a problem that says so. Building and
running code happen only in klt invoke and klt local.

Each problem is one line on stdout:

  FILE:LINE:COL RESOURCE PROPERTY.PATH: problem; fix: what to change

FILE:LINE:COL is the property's place, or for a property left out, where it belongs.

The --format flag chooses the output: text (the default, the lines above and "ok: ..." when
there is no problem) or json, one JSON array ([] for none) of objects with file, line, column,
resource, path, problem, fix, severity ("error") and, for the last seven checks above, rule:
for editors and CI annotations. A template that cannot be read (bad YAML, an unknown tag) is
then one such object too, at the place of the mistake, besides the error on stderr.

The exit status is 0 when there is none, 1 when there are problems or the template cannot be
read, and 2 when the command line is wrong.

Examples:

  klt lint template.yaml
  klt lint --format json template.yaml | jq -r '.[] | "\(.file):\(.line):\(.column) \(.problem)"'
`
