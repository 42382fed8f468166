// Command coldstart measures a Lambda function's start, from process start to its first
// GET /next, under a fake Runtime API that answers that request 410 (the runtime loop of
// aws-lambda-go then exits): the time (median of -n runs), the bytes package initialisation
// allocates (GODEBUG=inittrace=1), and, with -callgrind, the instructions executed (Valgrind's
// callgrind, which does not depend on the machine's load). Build the function as `sam build`
// does, for this machine:
//
//	CGO_ENABLED=0 go build -trimpath -ldflags='-s -w' -tags=lambda.norpc -o /tmp/fn ./internal/linkcheck/testdata/codec
//	go run ./internal/linkcheck/testdata/coldstart -n 21 -callgrind /tmp/fn
package main

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"time"
)

func main() {
	n := flag.Int("n", 11, "runs for the time to the first /next")
	cg := flag.Bool("callgrind", false, "also count the instructions with valgrind --tool=callgrind")
	flag.Parse()
	if flag.NArg() != 1 {
		log.Fatal("usage: coldstart [-n runs] [-callgrind] function-binary")
	}
	fn := flag.Arg(0)

	next := make(chan time.Time, 1)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		log.Fatal(err)
	}
	go http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/2018-06-01/runtime/invocation/next" {
			select {
			case next <- time.Now():
			default:
			}
		}
		w.WriteHeader(http.StatusGone)
	}))
	env := append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(), "GODEBUG=inittrace=1")

	var times []time.Duration
	var initBytes int64
	for i := range *n {
		cmd := exec.Command(fn)
		cmd.Env = env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		start := time.Now()
		if err := cmd.Start(); err != nil {
			log.Fatal(err)
		}
		select {
		case t := <-next:
			times = append(times, t.Sub(start))
		case <-time.After(30 * time.Second):
			log.Fatal("no GET /next in 30 s")
		}
		_ = cmd.Wait()
		if i == 0 {
			initBytes = sumInit(stderr.Bytes())
		}
	}
	slices.Sort(times)
	st, err := os.Stat(fn)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%s: %.2f MB, %.1f ms to the first /next (median of %d), %.2f MB allocated by package initialisation\n",
		fn, float64(st.Size())/(1<<20), float64(times[len(times)/2].Microseconds())/1000, len(times), float64(initBytes)/1e6)

	if *cg {
		cmd := exec.Command("valgrind", "--tool=callgrind", "--callgrind-out-file=/dev/null", fn)
		cmd.Env = append(env, "GOMAXPROCS=1", "GODEBUG=asyncpreemptoff=1")
		out, _ := cmd.CombinedOutput()
		m := regexp.MustCompile(`Collected : (\d+)`).FindSubmatch(out)
		if m == nil {
			log.Fatalf("no callgrind total in:\n%s", out)
		}
		ir, _ := strconv.ParseInt(string(m[1]), 10, 64)
		fmt.Printf("%s: %.2fM instructions to the first /next\n", fn, float64(ir)/1e6)
	}
}

// initLine is a line of GODEBUG=inittrace=1: "init pkg @0.1 ms, 0.01 ms clock, 1234 bytes, 5 allocs".
var initLine = regexp.MustCompile(`^init \S+ @[0-9.]+ ms, [0-9.]+ ms clock, (\d+) bytes, \d+ allocs`)

func sumInit(stderr []byte) int64 {
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(stderr))
	for sc.Scan() {
		if m := initLine.FindSubmatch(sc.Bytes()); m != nil {
			b, _ := strconv.ParseInt(string(m[1]), 10, 64)
			total += b
		}
	}
	return total
}
