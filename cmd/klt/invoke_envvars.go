package main

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
)

// envVarsConfig holds the flags of "klt env-vars".
type envVarsConfig struct {
	template string
	output   string
}

func newEnvVarsFlags(c *envVarsConfig) *flag.FlagSet {
	fs := flag.NewFlagSet("env-vars", flag.ContinueOnError)
	fs.StringVar(&c.template, "template", "template.yaml", "the SAM `FILE` whose functions the file is for")
	fs.StringVar(&c.output, "o", "env.json", "write the --env-vars file to `FILE`")
	return fs
}

// runEnvVars runs "klt env-vars [flags]": it starts the local servers the template's functions
// use, creates the tables and queues, writes the --env-vars file, and serves until interrupted.
func runEnvVars(ctx context.Context, cmd *base.Command, args []string, stdin io.Reader, stdout, stderr io.Writer) int {
	var c envVarsConfig
	fs := newEnvVarsFlags(&c)
	args, code, ok := base.ParseFlags(fs, args, cmd.Help(), stdout, stderr)
	if !ok {
		return code
	}
	if len(args) != 0 {
		return base.UsageError(stderr, "env-vars", fmt.Errorf("unexpected argument %q", args[0]))
	}
	t, err := readInvokeTemplate(c.template)
	if err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	var need needs
	var fns []*functionSpec
	for _, name := range t.functionNames() {
		f, err := t.function(name)
		if err != nil {
			base.Errorf(stderr, "env-vars: %v", err)
			return base.ExitFail
		}
		n := functionNeeds(t, f)
		need.ddb, need.sqs, need.kafka = need.ddb || n.ddb, need.sqs || n.sqs, need.kafka || n.kafka
		fns = append(fns, f)
	}
	if len(fns) == 0 {
		base.Errorf(stderr, "env-vars: %s has no AWS::Serverless::Function", c.template)
		return base.ExitFail
	}
	ls, err := startLocal(ctx, t, need)
	defer ls.stop()
	if err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	file := map[string]map[string]string{}
	var topics []string
	for _, f := range fns {
		vars, err := ls.vars(f, nil)
		if err != nil {
			base.Errorf(stderr, "env-vars: %v", err)
			return base.ExitFail
		}
		topics = append(topics, topicsOf(vars)...)
		file[f.logicalID] = vars
	}
	if err := ls.startKafka(topics); err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	for _, f := range fns {
		vars := file[f.logicalID]
		uses := functionNeeds(t, f)
		for k, v := range ls.endpoints {
			if _, declared := f.env[k]; declared {
				vars[k] = v
				continue
			}
			if strings.HasPrefix(k, "KAFKA_") && !uses.kafka || k == "AWS_ENDPOINT_URL_DYNAMODB" && !uses.ddb || k == "AWS_ENDPOINT_URL_SQS" && !uses.sqs {
				continue
			}
			fmt.Fprintf(stderr, "klt env-vars: warning: %s does not declare %s in Environment.Variables, and sam local invoke sets only declared names: declare it (\"\" leaves it unset in AWS)\n", f.logicalID, k)
		}
	}
	data, _ := json.MarshalIndent(file, "", "  ")
	if err := os.WriteFile(c.output, append(data, '\n'), 0o644); err != nil {
		base.Errorf(stderr, "env-vars: %v", err)
		return base.ExitFail
	}
	keys := make([]string, 0, len(ls.endpoints))
	for k, v := range ls.endpoints {
		keys = append(keys, k+"="+v)
	}
	sort.Strings(keys)
	fmt.Fprintf(stdout, "wrote %s for %d functions; serving %s until interrupted (Ctrl-C)\n", c.output, len(fns), orNone(strings.Join(keys, " ")))
	<-ctx.Done()
	return base.ExitOK
}

const usageEnvVars = `Usage: klt env-vars [flags]

For sam local invoke with Docker: start the local servers the template's functions use
(dynalite, local-aws-sqs, an in-process Kafka), create every table and queue of the template on
them, write a --env-vars file that points each function at them, and serve until interrupted.
In another terminal, on Linux:

  sam local invoke ConsumerFunction -e testdata/events/consumer/orders.json \
      --env-vars env.json --docker-network host

The servers listen on 127.0.0.1, which the function's container reaches with
--docker-network host. sam local invoke sets only the variables a function declares in
Environment.Variables, so the template declares AWS_ENDPOINT_URL_DYNAMODB and the others
(klt env-vars warns about each one a function lacks).
`

// envVarsFlags returns the flags of "klt env-vars", for its help.
func envVarsFlags() *flag.FlagSet { return newEnvVarsFlags(new(envVarsConfig)) }
