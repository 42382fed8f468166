// Command kafkapeer is the Kafka peer benchmark of issue 13: the same Kafka events, their
// values decoded by Powertools for AWS Lambda (TypeScript) on Node.js and by package codec,
// in interleaved rounds, with the medians and their ratios, for JSON, Avro and Protobuf
// values.
//
// It builds three events of at most -size bytes (6 MB, the payload limit of a synchronous
// invocation, by default), one per format, each holding as many orders as fit (order i is the
// same in every format: see order.go; the binary formats fit more), and writes them to a
// directory with the schemas (order.avsc, orderpb/order.proto). The values are what the event
// source mapping delivers in SOURCE mode with a Confluent Schema Registry, each record with its
// valueSchemaMetadata (see formats in events.go). Then it starts Node on powertools.mjs, which
// reads them, and runs rounds: in each, for each format, every side runs -iterations
// invocations, the order of the sides rotated from round to round, after -warmup invocations
// of each side at the start. One invocation is what a Lambda function does with one event:
//
//   - powertools: JSON.parse of the payload, then a handler wrapped by kafkaConsumer of
//     @aws-lambda-powertools/kafka with the format's schema config (JSON; Avro with the .avsc
//     text, decoded by avro-js; Protobuf with the protobufjs message type), reading every
//     record's value;
//   - toolkit: kafkaevent.Parse of the payload, then codec.Deserializer.Record and
//     Record.Value for every record (codec.JSON[Order], codec.Avro[Order] with the .avsc
//     text, codec.Protobuf[*orderpb.Order]);
//
// and beside them, in the same rounds, the Go baselines: "plain", kafkaevent.Parse and the
// same library called directly on each value (encoding/json into an Order, hamba/avro's
// Unmarshal, proto.Unmarshal after the message-index byte); "raw", kafkaevent.Parse alone,
// every value's bytes read but not decoded; for JSON "goccy", kafkaevent.Parse and
// goccy/go-json, the decoder codec.JSON uses, called directly (what the codec layer costs
// over its library, as "plain" shows it for Avro and Protobuf); and for JSON "map",
// kafkaevent.Parse and encoding/json into a map[string]any, the way a Go function without a
// codec decodes a value of no declared type. Every side that decodes adds up the quantities of each order's items,
// and the run fails unless every side's sum is the expected one.
//
// Run from the repository root, after make node_modules:
//
//	go run ./bench/kafkapeer
//
// or make bench-peer-kafka.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"time"

	"github.com/kafkalambda/toolkit/bench/internal/nodepeer"
)

func main() {
	size := flag.Int("size", 6_000_000, "largest event, in bytes")
	rounds := flag.Int("rounds", 15, "timed rounds of each side")
	iterations := flag.Int("iterations", 3, "invocations per side and round")
	warmup := flag.Int("warmup", 5, "invocations of each side before the first round")
	dir := flag.String("dir", filepath.Join(os.TempDir(), "kafkalambda-peer-kafka"), "where to write the events and schemas")
	script := flag.String("script", filepath.Join("bench", "kafkapeer", "powertools.mjs"), "the Node side")
	node := flag.String("node", "node", "the Node.js executable")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the Go sides to this file")
	flag.Parse()
	if *cpuprofile != "" {
		stop, err := startProfile(*cpuprofile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "kafkapeer:", err)
			os.Exit(1)
		}
		defer stop()
	}
	if err := run(*size, *rounds, *iterations, *warmup, *dir, *script, *node); err != nil {
		fmt.Fprintln(os.Stderr, "kafkapeer:", err)
		os.Exit(1)
	}
}

// startProfile starts a CPU profile into file; the Node side, another process, is not in it.
func startProfile(file string) (stop func(), err error) {
	f, err := os.Create(file)
	if err != nil {
		return nil, err
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, err
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			fmt.Fprintln(os.Stderr, "kafkapeer:", err)
		}
	}, nil
}

// A side is one way of handling an event: round times n invocations.
type side struct {
	name   string
	about  string
	round  func(n int) (result, error)
	raw    bool // does not decode: no checksum
	times  []float64
	allocs []float64
}

// result is what a round of one side measured.
type result struct {
	ns       float64 // wall time per invocation
	allocs   float64 // heap allocations per invocation; -1 when not known (Node.js)
	checksum int64   // of the last invocation
}

// A bench is one format's event and the sides that handle it.
type bench struct {
	f        *format
	payload  []byte
	records  int
	checksum int64
	sides    []*side
}

func run(size, rounds, iterations, warmup int, dir, script, node string) error {
	if size < 1 || rounds < 1 || iterations < 1 || warmup < 0 {
		return errors.New("-size, -rounds and -iterations must be at least 1, -warmup at least 0")
	}
	ctx := context.Background()
	fs, err := formats()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	for name, text := range map[string]string{"order.avsc": avroSchema, "order.proto": protoSchema} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			return err
		}
	}
	var benches []*bench
	for _, f := range fs {
		payload, n, err := f.event(ctx, size)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, f.name+".json"), payload, 0o644); err != nil {
			return err
		}
		b := &bench{f: f, payload: payload, records: n}
		for i := range n {
			o := order(i)
			b.checksum += o.quantities()
		}
		benches = append(benches, b)
	}

	js, err := startNode(node, script, dir)
	if err != nil {
		return err
	}
	defer js.Close()
	for _, b := range benches {
		if got := js.ready.Records[b.f.name]; got != b.records {
			return fmt.Errorf("powertools: the %s event has %d records, not %d", b.f.name, got, b.records)
		}
		b.sides = append([]*side{{
			name:  "powertools",
			about: "Node.js: JSON.parse, kafkaConsumer, every value read",
			round: func(n int) (result, error) { return js.round(b.f.name, n) },
		}}, goSides(b)...)
	}

	fmt.Printf("Kafka peer benchmark: three events of at most %d bytes (%s), values in SOURCE mode with valueSchemaMetadata; %d rounds of %d invocations per side, interleaved, after %d of warm-up\n",
		size, dir, rounds, iterations, warmup)
	fmt.Printf("  powertools: Node.js %s, @aws-lambda-powertools/kafka %s (avro-js %s, protobufjs %s)\n",
		js.ready.Node, js.ready.Powertools, js.ready.AvroJS, js.ready.Protobufjs)
	fmt.Printf("  toolkit:    %s %s/%s, GOMAXPROCS %d, in process\n", runtime.Version(), runtime.GOOS, runtime.GOARCH, runtime.GOMAXPROCS(0))
	for _, b := range benches {
		fmt.Printf("  %-9s %6d records, %.2f MB\n", b.f.name+":", b.records, float64(len(b.payload))/1e6)
	}

	check := func(b *bench, s *side, res result) error {
		if !s.raw && res.checksum != b.checksum {
			return fmt.Errorf("%s %s: checksum %d, want %d (the sum of every item's quantity)", b.f.name, s.name, res.checksum, b.checksum)
		}
		return nil
	}
	if warmup > 0 {
		for _, b := range benches {
			for _, s := range b.sides {
				res, err := s.round(warmup)
				if err != nil {
					return err
				}
				if err := check(b, s, res); err != nil {
					return err
				}
			}
		}
	}
	for r := range rounds {
		fmt.Fprintf(os.Stderr, "\rround %d/%d", r+1, rounds)
		for _, b := range benches {
			for i := range b.sides {
				s := b.sides[(i+r)%len(b.sides)]
				res, err := s.round(iterations)
				if err != nil {
					return err
				}
				if err := check(b, s, res); err != nil {
					return err
				}
				s.times, s.allocs = append(s.times, res.ns), append(s.allocs, res.allocs)
			}
		}
	}
	fmt.Fprintln(os.Stderr)

	fmt.Printf("\n%-9s %-11s %10s %10s %13s %12s %15s  %s\n", "format", "side", "ms/batch", "µs/record", "allocs/record", "powertools/", "(rounds)", "what")
	for _, b := range benches {
		pt := b.sides[0]
		mp := median(pt.times)
		for _, s := range b.sides {
			m := median(s.times)
			lo, hi := ratioRange(pt.times, s.times)
			rng, allocs := "", "-"
			if s != pt {
				rng = fmt.Sprintf("(%.1f-%.1fx)", lo, hi)
			}
			if a := median(s.allocs); a >= 0 {
				allocs = fmt.Sprintf("%.2f", a/float64(b.records))
			}
			fmt.Printf("%-9s %-11s %10.2f %10.2f %13s %11.2fx %15s  %s\n", b.f.name, s.name, m/1e6, m/1e3/float64(b.records), allocs, mp/m, rng, s.about)
		}
	}
	fmt.Println("\nms/batch: median wall time of one invocation; allocs/record: Go heap allocations per record (median); powertools/: the ratio of the medians (how many times faster than Powertools); (rounds): the lowest and highest ratio of one round's pair.")
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

// ratioRange returns the lowest and highest of a[i]/b[i].
func ratioRange(a, b []float64) (lo, hi float64) {
	for i := range a {
		r := a[i] / b[i]
		if i == 0 || r < lo {
			lo = r
		}
		if i == 0 || r > hi {
			hi = r
		}
	}
	return lo, hi
}

// timed runs one invocation n times: the time and allocations per invocation, and the
// checksum of the last.
func timed(n int, invoke func() (int64, error)) (result, error) {
	var sum int64
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	for range n {
		s, err := invoke()
		if err != nil {
			return result{}, err
		}
		sum = s
	}
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return result{
		ns:       float64(elapsed.Nanoseconds()) / float64(n),
		allocs:   float64(after.Mallocs-before.Mallocs) / float64(n),
		checksum: sum,
	}, nil
}

// nodeSide is powertools.mjs, answering "round FORMAT N" lines.
type nodeSide struct {
	*nodepeer.Peer
	ready struct {
		Node       string         `json:"node"`
		Powertools string         `json:"powertools"`
		AvroJS     string         `json:"avro-js"`
		Protobufjs string         `json:"protobufjs"`
		Records    map[string]int `json:"records"`
	}
}

func startNode(node, script, dir string) (*nodeSide, error) {
	js := &nodeSide{}
	p, err := nodepeer.Start(node, script, &js.ready, "make node_modules installs @aws-lambda-powertools/kafka, avro-js and protobufjs", dir)
	js.Peer = p
	return js, err
}

// round times n invocations of the format's function.
func (js *nodeSide) round(format string, n int) (result, error) {
	var r struct {
		Format     string  `json:"format"`
		Iterations int     `json:"iterations"`
		NS         float64 `json:"ns"`
		Checksum   int64   `json:"checksum"`
	}
	if err := js.Ask(&r, "round %s %d", format, n); err != nil {
		return result{}, fmt.Errorf("powertools: %w", err)
	}
	if r.Format != format || r.Iterations != n {
		return result{}, fmt.Errorf("powertools: round of %d %s invocations answered %+v", n, format, r)
	}
	return result{ns: r.NS / float64(n), allocs: -1, checksum: r.Checksum}, nil
}
