package main

import (
	"bytes"
	"context"
	"strings"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/base"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/consume"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/kafkaevent"
	"github.com/twmb/franz-go/pkg/kgo"
)

func TestProduceConsumeUsageErrors(t *testing.T) {
	// Command-line mistakes of produce and consume exit 2 with one line naming the flag, and
	// a pointer to help, before any connection is tried.
	t.Setenv("KAFKA_BOOTSTRAP_SERVERS", "")
	t.Setenv("KAFKA_AUTH", "")
	t.Setenv("NO_SUCH_PASSWORD_VAR", "")
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"produce", "--brokers", "b:9092"}, "klt produce: --topic is required"},
		{[]string{"consume", "--topic", "t"}, "klt consume: no brokers: give --brokers HOST:PORT[,...] or set KAFKA_BOOTSTRAP_SERVERS"},
		{[]string{"produce", "--topic", "t", "--brokers", "b:9092,b2"}, `klt produce: --brokers: want host:port entries, got "b2": address b2: missing port in address`},
		{[]string{"produce", "--topic", "t", "--brokers", "b:9092", "--iam", "--scram-user", "u"}, "klt produce: --iam and --scram-user: choose one authentication"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--iam", "--no-tls"}, "klt consume: --no-tls turns off TLS and authentication; MSK IAM and SCRAM are sent over TLS"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--region", "eu-west-1"}, "klt consume: --region is the region of the MSK IAM token: use it with --iam"},
		{[]string{"produce", "--topic", "t", "--brokers", "b:9092", "--scram-user", "u", "--scram-password-env", "NO_SUCH_PASSWORD_VAR"}, "klt produce: --scram-user: the password variable $NO_SUCH_PASSWORD_VAR is not set or empty"},
		{[]string{"produce", "--topic", "t", "--brokers", "b:9092", "--timeout", "0s"}, "klt produce: --timeout: want a positive duration, got 0s"},
		{[]string{"produce", "--topic", "t", "--brokers", "b:9092", "a.jsonl", "b.jsonl"}, "klt produce: want at most one input file, got 2"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--connect-timeout", "-1s"}, "klt consume: --connect-timeout: want a positive duration, got -1s"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--max", "-1"}, "klt consume: --max: want 0 (no limit) or more, got -1"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--source", "msk"}, "klt consume: --source, --arn and --compact shape the --event: use them with --event"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--event", "--source", "kinesis"}, `klt consume: --source: want msk or self-managed, got "kinesis"`},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "--event", "--source", "self-managed", "--arn", "arn:aws:kafka:x"}, "klt consume: --arn: a self-managed Kafka event has no eventSourceArn; use --source msk"},
		{[]string{"consume", "--topic", "t", "--brokers", "b:9092", "extra"}, `klt consume: unexpected argument "extra"`},
		{[]string{"consume", "--nope"}, "klt consume: flag provided but not defined: -nope"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			start := time.Now()
			r := klt(t, "{}\n", tt.args...)
			if r.code != base.ExitUsage || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want 2 and nothing", r.code, r.stdout)
			}
			first, rest, _ := strings.Cut(r.stderr, "\n")
			if first != tt.want {
				t.Errorf("stderr starts\n%q\nwant\n%q", first, tt.want)
			}
			if !strings.HasPrefix(rest, "Run \"klt help ") {
				t.Errorf("no pointer to help after the error: %q", r.stderr)
			}
			if d := time.Since(start); d > time.Second {
				t.Errorf("took %v: a usage error must not wait for a connection", d)
			}
		})
	}
}

func TestProduceConsumeHelp(t *testing.T) {
	for _, args := range [][]string{{"help", "produce"}, {"produce", "--help"}, {"help", "consume"}, {"consume", "-h"}} {
		r := klt(t, "", args...)
		if r.code != base.ExitOK || r.stderr != "" {
			t.Errorf("%q: exit %d, stderr %q", args, r.code, r.stderr)
		}
		for _, w := range []string{"Usage: klt " + strings.TrimPrefix(strings.Join(args, " "), "help ")[:7],
			"-brokers", "-iam", "-region", "-scram-user", "-scram-password-env", "-no-tls", "-connect-timeout", "KAFKA_BOOTSTRAP_SERVERS"} {
			if !strings.Contains(r.stdout, w) {
				t.Errorf("%q: help lacks %q", args, w)
			}
		}
	}
	if r := klt(t, "", "help"); !strings.Contains(r.stdout, "  produce ") || !strings.Contains(r.stdout, "  consume ") {
		t.Errorf("klt help does not list produce and consume:\n%s", r.stdout)
	}
}

func TestAllMSK(t *testing.T) {
	for brokers, want := range map[string]bool{
		"b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098,b-2.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098": true,
		"boot-abc.c1.kafka-serverless.us-east-1.amazonaws.com:9098":                                                   true,
		"B-1.DEMO.C2.KAFKA.US-EAST-1.AMAZONAWS.COM.:9096":                                                             true,
		"b-1.demo.abc123.c2.kafka.eu-west-1.amazonaws.com:9098,localhost:9092":                                        false,
		"127.0.0.1:9092":                         false,
		"kafka.example.com:9092":                 false,
		"ec2-1-2-3-4.compute.amazonaws.com:9092": false,
	} {
		if got := consume.AllMSK(strings.Split(brokers, ",")); got != want {
			t.Errorf("allMSK(%s) = %v, want %v", brokers, got, want)
		}
	}
}

// TestConsumeEventBounded: an --event stops before the record that would take it past the
// 6 MB of a Lambda invocation payload, rather than hold a whole topic in memory, and a group
// commits only the records it printed.
func TestConsumeEventBounded(t *testing.T) {
	c := startKafka(t, 1, "big")
	brokers := strings.Join(c.ListenAddrs(), ",")
	cl, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	value := bytes.Repeat([]byte("v"), 900_000) // 1.2 MB of base64 in an event: 5 fit in 6 MB
	for i := 0; i < 8; i++ {
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: "big", Value: value}).FirstErr(); err != nil {
			t.Fatal(err)
		}
	}
	r := klt(t, "", "consume", "--no-tls", "--brokers", brokers, "--topic", "big", "--group", "g",
		"--from-beginning", "--timeout", "3s", "--event", "--compact")
	if r.code != base.ExitOK {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	if want := "klt: stopped after 5 records: the next would take the event past the 6291456 bytes (6 MB) of a Lambda invocation payload\n"; r.stderr != want {
		t.Errorf("stderr %q, want %q", r.stderr, want)
	}
	ev, err := kafkaevent.Parse([]byte(r.stdout))
	if err != nil {
		t.Fatal(err)
	}
	if ev.Len() != 5 || len(r.stdout) > input.MaxPayload {
		t.Errorf("event of %d records, %d bytes; want 5 records within %d bytes", ev.Len(), len(r.stdout), input.MaxPayload)
	}
	// The group goes on after the records printed: the other three.
	r = klt(t, "", "consume", "--no-tls", "--brokers", brokers, "--topic", "big", "--group", "g",
		"--from-beginning", "--timeout", "3s")
	if got := strings.Count(r.stdout, "\n"); r.code != base.ExitOK || got != 3 || !strings.Contains(r.stdout, `"offset":5,`) {
		t.Errorf("the group's next consume printed %d records (exit %d, %s), want offsets 5 to 7", got, r.code, r.stderr)
	}
}
