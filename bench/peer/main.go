// Command peer is the SQS peer benchmark of issue 10: the same SQS event, decoded and processed
// by Powertools for AWS Lambda (TypeScript) on Node.js and by this toolkit, in interleaved
// rounds, with the medians and their ratio.
//
// It writes the event once into a file (10,000 messages with 200-byte bodies by default, see
// sqsgen), starts Node on powertools.mjs, which reads that file, and then runs rounds that
// alternate between the two sides, the order swapped every round; a round times -iterations
// invocations of one side, after -warmup invocations of each side at the start. One invocation
// is what a Lambda function does with one event:
//
//   - Node: JSON.parse of the payload, processPartialResponse with BatchProcessor(EventType.SQS)
//     and a record handler that does nothing, JSON.stringify of the response;
//   - Go: batch.SQSHandler(h).Invoke on the payload bytes (sqsparse, ProcessSQS with a handler
//     that does nothing, json.Marshal of the response) under a context with a deadline, as
//     lambda.Start calls it.
//
// Run from the repository root, after make node_modules:
//
//	go run ./bench/peer
//
// or make bench-peer.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"time"

	"github.com/aws/aws-lambda-go/events"

	"github.com/kafkalambda/toolkit/batch"
	"github.com/kafkalambda/toolkit/bench/internal/nodepeer"
	"github.com/kafkalambda/toolkit/internal/sqsparse/sqsgen"
)

func main() {
	messages := flag.Int("messages", 10000, "messages in the event")
	body := flag.Int("body", 200, "bytes in each message's body")
	rounds := flag.Int("rounds", 8, "timed rounds of each side")
	iterations := flag.Int("iterations", 20, "invocations per round")
	warmup := flag.Int("warmup", 10, "invocations of each side before the first round")
	eventFile := flag.String("event", filepath.Join(os.TempDir(), "kafkalambda-peer-sqs.json"), "where to write the event")
	script := flag.String("script", filepath.Join("bench", "peer", "powertools.mjs"), "the Node side")
	node := flag.String("node", "node", "the Node.js executable")
	flag.Parse()
	if err := run(*messages, *body, *rounds, *iterations, *warmup, *eventFile, *script, *node); err != nil {
		fmt.Fprintln(os.Stderr, "peer:", err)
		os.Exit(1)
	}
}

func run(messages, body, rounds, iterations, warmup int, eventFile, script, node string) error {
	if messages < 1 || body < 0 || rounds < 1 || iterations < 1 || warmup < 0 {
		return errors.New("-messages, -rounds and -iterations must be at least 1, -body and -warmup at least 0")
	}
	payload := sqsgen.Event(messages, body)
	if err := os.WriteFile(eventFile, payload, 0o644); err != nil {
		return err
	}
	js, err := startNode(node, script, eventFile)
	if err != nil {
		return err
	}
	defer js.Close()
	goSide := newGoSide(payload, messages)

	fmt.Printf("SQS peer benchmark: %d messages with %d-byte bodies (%.1f MB, %s), %d rounds of %d invocations per side, interleaved, after %d of warm-up\n",
		messages, body, float64(len(payload))/1e6, eventFile, rounds, iterations, warmup)
	fmt.Printf("  powertools: Node.js %s, @aws-lambda-powertools/batch %s: JSON.parse, processPartialResponse(BatchProcessor(EventType.SQS)), JSON.stringify\n", js.ready.Node, js.ready.Powertools)
	fmt.Printf("  toolkit:    %s %s/%s, GOMAXPROCS %d: batch.SQSHandler(h).Invoke (sqsparse, ProcessSQS, json.Marshal)\n",
		runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	fmt.Println("  both: a record handler that does nothing; figures are wall time per message of one invocation")
	if warmup > 0 {
		if _, err := js.round(warmup); err != nil {
			return err
		}
		if _, err := goSide.round(warmup); err != nil {
			return err
		}
	}
	fmt.Printf("\n%-7s %18s %18s %8s\n", "round", "powertools µs/msg", "toolkit µs/msg", "ratio")
	var pt, tk []float64
	for r := range rounds {
		var p, t float64
		first, second := js.round, goSide.round
		if r%2 == 1 {
			first, second = goSide.round, js.round
		}
		a, err := first(iterations)
		if err != nil {
			return err
		}
		b, err := second(iterations)
		if err != nil {
			return err
		}
		if r%2 == 0 {
			p, t = a, b
		} else {
			p, t = b, a
		}
		pt, tk = append(pt, p), append(tk, t)
		fmt.Printf("%-7d %18.3f %18.3f %7.2fx\n", r+1, p/1e3, t/1e3, p/t)
	}
	mp, mt := median(pt), median(tk)
	fmt.Printf("%-7s %18.3f %18.3f %7.2fx\n", "median", mp/1e3, mt/1e3, mp/mt)
	fmt.Printf("\nThe toolkit decodes and processes an SQS batch %.2fx as fast as Powertools for TypeScript (ratio of the medians).\n", mp/mt)
	return nil
}

func median(xs []float64) float64 {
	s := slices.Sorted(slices.Values(xs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// goSide invokes the toolkit's handler as lambda.Start would.
type goSide struct {
	payload  []byte
	messages int
	h        batch.SQSFunc
}

func newGoSide(payload []byte, messages int) *goSide {
	noop := func(context.Context, *events.SQSMessage) error { return nil }
	// ProcessSQS writes one summary log line per batch; Powertools writes none by default, so
	// the line is formatted but discarded.
	quiet := batch.WithLogger(slog.New(slog.NewTextHandler(io.Discard, nil)))
	return &goSide{payload: payload, messages: messages, h: batch.SQSHandler(noop, quiet)}
}

// round times n invocations and returns nanoseconds per message.
func (g *goSide) round(n int) (float64, error) {
	start := time.Now()
	for range n {
		// The Lambda runtime gives each invocation a context with the function's deadline.
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		out, err := g.h.Invoke(ctx, g.payload)
		cancel()
		if err != nil {
			return 0, fmt.Errorf("toolkit: %w", err)
		}
		if string(out) != `{"batchItemFailures":[]}` {
			return 0, fmt.Errorf("toolkit: response %.200s", out)
		}
	}
	return float64(time.Since(start).Nanoseconds()) / float64(n) / float64(g.messages), nil
}

// nodeSide is powertools.mjs, answering "round N" lines.
type nodeSide struct {
	*nodepeer.Peer
	ready struct {
		Node       string `json:"node"`
		Powertools string `json:"powertools"`
		Messages   int    `json:"messages"`
	}
}

func startNode(node, script, eventFile string) (*nodeSide, error) {
	js := &nodeSide{}
	p, err := nodepeer.Start(node, script, &js.ready, "make node_modules installs @aws-lambda-powertools/batch", eventFile)
	js.Peer = p
	return js, err
}

// round times n invocations and returns nanoseconds per message.
func (js *nodeSide) round(n int) (float64, error) {
	var r struct {
		Iterations int     `json:"iterations"`
		Messages   int     `json:"messages"`
		NS         float64 `json:"ns"`
		Failures   int     `json:"failures"`
	}
	if err := js.Ask(&r, "round %d", n); err != nil {
		return 0, fmt.Errorf("powertools: %w", err)
	}
	if r.Iterations != n || r.Messages != js.ready.Messages || r.Failures != 0 {
		return 0, fmt.Errorf("powertools: round of %d invocations answered %+v", n, r)
	}
	return r.NS / float64(n) / float64(r.Messages), nil
}
