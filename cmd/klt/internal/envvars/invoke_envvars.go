package envvars

import (
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/funcrun"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/samtemplate"
	"github.com/kafkalambda/toolkit/esm/samspec"
)

// envVarsConfig holds the flags of "klt env-vars".
type envVarsConfig struct {
	template string
	output   string
	params   funcrun.ParamsFlag
}

func newEnvVarsFlags(c *envVarsConfig) *flag.FlagSet {
	c.params = funcrun.ParamsFlag{}
	fs := flag.NewFlagSet("env-vars", flag.ContinueOnError)
	fs.StringVar(&c.template, "template", "template.yaml", "the SAM `FILE` whose functions the file is for")
	fs.StringVar(&c.output, "o", "env.json", "write the --env-vars file to `FILE`")
	fs.Var(c.params, "parameter-overrides", "give the template parameter NAME the value VALUE (`NAME=VALUE`, repeatable)")
	return fs
}

// RunEnvVars runs "klt env-vars [flags]": it starts the local servers the template's functions
// use, creates the tables and queues, writes the --env-vars file, and serves until interrupted.
func runEnvVars(ctx context.Context, c *envVarsConfig, fs *flag.FlagSet, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	if len(args) != 0 {
		return base.UsageError(stderr, "env-vars", fmt.Errorf("unexpected argument %q", args[0]))
	}
	t, err := samspec.ReadInvokeTemplate(c.template)
	if err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	if err := samspec.CheckParameters(t, c.params); err != nil {
		base.Errorf(stderr, "env-vars: --parameter-overrides: %v", err)
		return base.ExitFail
	}
	var need funcrun.Needs
	var fns []*samspec.FunctionSpec
	for _, name := range t.FunctionNames() {
		f, err := (&samspec.Resolver{T: t, Params: c.params}).Function(name)
		if err != nil {
			base.Errorf(stderr, "env-vars: %v", err)
			return base.ExitFail
		}
		n := funcrun.FunctionNeeds(t, f)
		need.DDB, need.SQS, need.Kafka = need.DDB || n.DDB, need.SQS || n.SQS, need.Kafka || n.Kafka
		fns = append(fns, f)
	}
	if len(fns) == 0 {
		base.Errorf(stderr, "env-vars: %s has no AWS::Serverless::Function", c.template)
		return base.ExitFail
	}
	ls, err := funcrun.StartServers(ctx, t, need)
	defer ls.Stop()
	if err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	ls.Resolver.Params = c.params
	if err := ls.StartKafka(nil); err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	file := map[string]map[string]string{}
	var topics []string
	for _, f := range fns {
		vars, err := ls.Vars(f, nil)
		if err != nil {
			base.Errorf(stderr, "env-vars: %v", err)
			return base.ExitFail
		}
		topics = append(topics, funcrun.TopicsOf(vars)...)
		file[f.LogicalID] = vars
	}
	if err := ls.CreateTopics(ctx, 1, topics...); err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	for _, f := range fns {
		vars := file[f.LogicalID]
		uses := funcrun.FunctionNeeds(t, f)
		for k, v := range ls.Endpoints {
			if _, declared := f.Env[k]; declared {
				vars[k] = v
				continue
			}
			if strings.HasPrefix(k, "KAFKA_") && !uses.Kafka || k == "AWS_ENDPOINT_URL_DYNAMODB" && !uses.DDB || k == "AWS_ENDPOINT_URL_SQS" && !uses.SQS {
				continue
			}
			fmt.Fprintf(stderr, "klt env-vars: warning: %s does not declare %s in Environment.Variables, and sam local invoke sets only declared names: declare it (\"\" leaves it unset in AWS)\n", f.LogicalID, k)
		}
	}
	data, _ := json.MarshalIndent(file, "", "  ")
	if err := os.WriteFile(c.output, append(data, '\n'), 0o644); err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	keys := make([]string, 0, len(ls.Endpoints))
	for k, v := range ls.Endpoints {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	fmt.Fprintf(stdout, "wrote %s for %d functions; serving %s until interrupted (Ctrl-C)\n", c.output, len(fns), samtemplate.OrNone(strings.Join(keys, " ")))
	<-ctx.Done()
	return base.ExitOK
}

// usageEnvVars is the help of "klt env-vars", before its flags.
const usageEnvVars = `For sam local invoke with Docker: start the local servers the template's functions use
(dynalite, local-aws-sqs, an in-process Kafka), create every table and queue of the template on
them, write a --env-vars file that points each function at them, and serve until interrupted.
In another terminal, on Linux:

  sam local invoke ConsumerFunction -e testdata/events/consumer/orders.json \
      --env-vars env.json --docker-network host

The servers listen on 127.0.0.1, which the function's container reaches with
--docker-network host. sam local invoke sets only the variables a function declares in
Environment.Variables, so the template declares AWS_ENDPOINT_URL_DYNAMODB and the others
(klt env-vars warns about each one a function lacks).

A Ref of a parameter gives its --parameter-overrides value, else its Default, else, for a
parameter the template uses as Kafka bootstrap servers, the local Kafka's address; any other
parameter without a value is an error naming it.

` + funcrun.NodeServersHelp

// Cmd is the command "klt env-vars".
var Cmd = base.WithFlags(&base.Command{
	UsageLine: "klt env-vars [flags]",
	Short:     "start local servers and write a sam local invoke --env-vars file pointing at them",
	Long:      usageEnvVars,
}, newEnvVarsFlags, runEnvVars)
