package stackrun

import (
	"context"
	"fmt"
	"strings"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/report"
)

// serve runs every mapping with the template's consumer groups until ctx is done (Ctrl-C):
// the stack is up for klt produce, klt consume, the AWS CLI. The display prints a block when a
// figure changed, nothing while the stack is idle; at the end it prints a summary: what ran,
// each mapping's counters, and every message that reached a failure or dead-letter queue
// (the messages stay in their queues: klt lists them, it does not take them).
func (s *stack) serve(ctx context.Context) error {
	lv := newLive(s)
	fmt.Fprintf(s.out, "klt local: Kafka at %s (plaintext)", strings.Join(s.brokers, ","))
	for _, k := range []string{"AWS_ENDPOINT_URL_SQS", "AWS_ENDPOINT_URL_DYNAMODB"} {
		if v := s.ls.Endpoints[k]; v != "" {
			fmt.Fprintf(s.out, ", %s=%s", k, v)
		}
	}
	fmt.Fprintf(s.out, "\nklt local: function logs in %s\n", s.logDir)
	var topics []string
	for _, p := range s.pipelines {
		if !contains(topics, p.topic) {
			topics = append(topics, p.topic)
		}
	}
	for _, t := range topics {
		fmt.Fprintf(s.out, "klt local: produce with: klt produce --brokers %s --no-tls --topic %s < records.jsonl\n", strings.Join(s.brokers, ","), t)
	}
	fmt.Fprintf(s.out, "klt local: Ctrl-C stops and prints a summary\n")
	started := time.Now()
	runs, err := s.startMappings(ctx, s.specs, "", time.Time{})
	lv.set("", runs)
	if err != nil {
		return err
	}
	prog, err := report.NewProgress(s.out, lv.statuses)
	if err != nil {
		return err
	}
	out := s.out
	s.out = prog // klt's own lines go between the display's blocks (see loadAndReport)
	prog.Start()
	var runErr error
	for _, r := range runs {
		if err := <-r.done; err != nil && ctx.Err() == nil {
			runErr = fmt.Errorf("mapping %s: %w", r.spec.Id, err)
		}
	}
	prog.Stop()
	s.out = out
	lv.set("", nil)
	rep := s.summary(started, lv)
	if err := rep.Summary(s.out); err != nil && runErr == nil {
		runErr = err
	}
	return runErr
}

// summary is the report of a served stack at Ctrl-C: the mappings' counters and what reached
// the failure and dead-letter queues; no pipeline was measured.
func (s *stack) summary(started time.Time, lv *live) *report.Report {
	rep := &report.Report{
		Tool: "klt local", Version: s.c.Version, Started: started, Template: s.c.Template,
		Machine: report.ThisMachine(), Interrupted: true, Mappings: lv.mappings(), Logs: s.census.Functions(),
		Scenario:  report.Scenario{Source: "served until Ctrl-C: records produced by others"},
		Functions: s.functionReports(),
	}
	if len(s.pipelines) > 0 {
		rep.Scenario.Partitions = s.c.Partitions.get(s.pipelines[0].topic, 1)
	}
	rep.AddFailedMessages(s.obs.ledger)
	return rep
}
