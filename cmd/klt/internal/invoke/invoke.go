package invoke

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/jsondup"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/runtimeapi"
)

func newInvokeFlags(c *funcrun.Config) *flag.FlagSet {
	c.Params = funcrun.ParamsFlag{}
	fs := flag.NewFlagSet("invoke", flag.ContinueOnError)
	fs.StringVar(&c.Template, "template", "template.yaml", "the SAM `FILE` that defines the function")
	fs.StringVar(&c.Emulator, "emulator", "", "run this aws-lambda-rie `binary` instead of building the one pinned in tools/go.mod")
	fs.StringVar(&c.EnvVars, "env-vars", "", "a sam local invoke --env-vars JSON `FILE` whose values override the function's environment")
	fs.Var(c.Params, "parameter-overrides", "give the template parameter NAME the value VALUE (`NAME=VALUE`, repeatable)")
	fs.IntVar(&c.LMIConcurrency, funcrun.LMIFlag, 0, "run the function as a Lambda Managed Instances function, `N` invocations at once per\nexecution environment, on klt's own Runtime API server instead of the emulator (0: as the\ntemplate says). "+funcrun.LMIFlagHelp)
	return fs
}

// runInvoke runs "klt invoke [flags] FUNCTION EVENT".
func runInvoke(ctx context.Context, c *funcrun.Config, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 2 {
		return base.UsageError(stderr, "invoke", fmt.Errorf("want FUNCTION and EVENT, got %d arguments", len(args)))
	}
	fn, eventFile := args[0], args[1]
	if c.LMIConcurrency < 0 || c.LMIConcurrency > runtimeapi.MaxLMIConcurrency {
		return base.UsageError(stderr, "invoke", fmt.Errorf("--%s %d: want 1 to %d (PerExecutionEnvironmentMaxConcurrency's range), or 0", funcrun.LMIFlag, c.LMIConcurrency, runtimeapi.MaxLMIConcurrency))
	}
	event, err := input.ReadFileOrStdin(eventFile, stdin, input.EventLimit)
	if err != nil {
		base.Errorf(stderr, "invoke: %v", err)
		return base.ExitFail
	}
	if !json.Valid(event) {
		var v any
		err := json.Unmarshal(event, &v)
		base.Errorf(stderr, "invoke: %s is not JSON (%v); an event is one JSON document, as sam local invoke -e takes", input.Name(args[1:]), err)
		return base.ExitFail
	}
	if err := jsondup.CheckDuplicateMembers(input.Name(args[1:]), event); err != nil {
		base.Errorf(stderr, "invoke: %v", err)
		return base.ExitFail
	}
	resp, err := funcrun.Invoke(ctx, *c, fn, event, stderr)
	if resp != nil {
		stdout.Write(resp)
		if !bytes.HasSuffix(resp, []byte("\n")) {
			io.WriteString(stdout, "\n")
		}
	}
	if err != nil {
		base.Errorf(stderr, "invoke %s: %v", fn, err)
		return base.ExitFail
	}
	return base.ExitOK
}

// usageInvoke is the help of "klt invoke".
const usageInvoke = `Invoke one function of a SAM template with an event, as sam local invoke -e does, without
Docker, from any directory: klt builds the function's bootstrap for this machine as sam build
does (Metadata BuildMethod makefile: make build-<LogicalId> in the CodeUri directory with
ARTIFACTS_DIR set; go1.x: go build there), runs it under the AWS Lambda Runtime Interface
Emulator (pinned in tools/go.mod), posts EVENT ("-" for stdin) and prints the response on
stdout; the function's logs go to stderr. A Lambda Managed Instances function (its template's
CapacityProviderConfig, or --lmi-concurrency N) runs on klt's own Runtime API server instead,
with AWS_LAMBDA_MAX_CONCURRENCY set and its timeout not enforced, as on LMI; stderr then ends
with how it ran (docs/local.md, "Lambda Managed Instances").

The function gets the environment sam local invoke gives it (AWS_LAMBDA_FUNCTION_NAME is the
logical ID, AWS_REGION us-east-1, credentials test/test) and its Environment.Variables from the
template, with intrinsics resolved to local resources: a Ref or GetAtt of a DynamoDB table or an
SQS queue names the local one; a Ref of a parameter gives its --parameter-overrides value, else
its Default, else, for a parameter the template uses as Kafka bootstrap servers, the local
Kafka's address (any other parameter without a value is an error naming it). When the function
refers to a table, klt starts dynalite and sets AWS_ENDPOINT_URL_DYNAMODB; to a queue,
local-aws-sqs and AWS_ENDPOINT_URL_SQS; when it has KAFKA_BOOTSTRAP_SERVERS (or another
variable of brokers), an in-process Kafka (kfake) with KAFKA_AUTH=plaintext. Every table and
queue of the template is created there. All of it stops when the invocation ends.

` + funcrun.NodeServersHelp + `
klt invoke builds and runs the function's code (its make target or go build, then its
bootstrap), and nothing else of the repository. Before that it refuses, at FILE:LINE:COL, a
logical ID CloudFormation would refuse (A-Za-z0-9, at most 255 characters), a CodeUri outside
the template's directory (also through a parameter or a symbolic link), a Handler naming a
path outside the code, an environment variable name Lambda would refuse, and a NUL byte in a
value. Other values (shell metacharacters, newlines) reach the function as data.

The exit status is 1 when the function returns an error or times out, the template has no such
function, EVENT is not JSON, the template is refused, the build fails or the emulator does not
start.
`

// usageInvokeExamples ends the help of "klt invoke".
const usageInvokeExamples = `
Examples:

  klt invoke ConsumerFunction testdata/events/consumer/orders.json
  make invoke FN=ConsumerFunction EVENT=testdata/events/consumer/orders.json
`

// Cmd is the command "klt invoke".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt invoke [flags] FUNCTION EVENT",
	Short:     "run a function of a SAM template with an event, as sam local invoke, without Docker",
	Long:      usageInvoke,
	Examples:  usageInvokeExamples,
}, newInvokeFlags, runInvoke)
