package linkcheck

import (
	"bufio"
	"bytes"
	"flag"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

var coldStart = flag.Bool("coldstart", false, "run TestColdStart: callgrind instructions from process start to the first GET /next (needs valgrind)")

// The functions TestColdStart starts, and what they are.
var coldFunctions = []struct{ name, what string }{
	{"bare", "aws-lambda-go alone (lambda.Start of a no-op)"},
	{"kafkaevent", "kafkaevent.Parse + lambda.Start"},
	{"batch", "batch.KafkaHandler (no-op)"},
}

// TestColdStart measures what a function does before it asks for its first event: it builds
// the functions above for this machine as `sam build` would (without cross-compiling, so that
// Valgrind runs them), starts each against a fake Runtime API that answers the first
// GET /next with a 500 (aws-lambda-go then exits), and reports the instructions Valgrind's
// callgrind counts for the whole run (start-up, package initialisation, lambda.Start, the
// request and the exit, which is the same for every function), the bytes package
// initialisation allocates (GODEBUG=inittrace=1), and the median wall time to the request over
// ten runs outside Valgrind. It runs only with -coldstart:
//
//	go test -count=1 -v -run TestColdStart ./internal/linkcheck -coldstart
func TestColdStart(t *testing.T) {
	if !*coldStart {
		t.Skip("SKIPPED: the cold-start measurement runs with -coldstart (it needs valgrind)")
	}
	valgrind, err := exec.LookPath("valgrind")
	if err != nil {
		t.Fatalf("-coldstart needs valgrind: %v", err)
	}
	dir := t.TempDir()
	names := make([]string, len(coldFunctions))
	for i, f := range coldFunctions {
		names[i] = f.name
	}
	goCmd(t, []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"},
		append(append([]string{"build", "-o", dir + string(filepath.Separator)}, lambdaFlags...), pkgs(names...)...)...)
	var table strings.Builder
	fmt.Fprintf(&table, "| function (%s/%s) | instructions to the first /next | vs bare | init allocations | to /next (median of 10) | size |\n| --- | ---: | ---: | ---: | ---: | ---: |\n", runtime.GOOS, runtime.GOARCH)
	var base int64
	for _, f := range coldFunctions {
		bin := filepath.Join(dir, f.name)
		ir := startInstructions(t, valgrind, bin)
		if f.name == "bare" {
			base = ir
		}
		st, err := os.Stat(bin)
		if err != nil {
			t.Fatal(err)
		}
		fmt.Fprintf(&table, "| %s | %.2fM | %+.0f%% | %.2f MB | %.1f ms | %.1f MB |\n", f.what, float64(ir)/1e6,
			100*float64(ir-base)/float64(base), mb(initBytes(t, bin)), ms(toNext(t, bin)), mb(st.Size()))
	}
	t.Logf("go build %s; valgrind --tool=callgrind\n%s", strings.Join(lambdaFlags, " "), table.String())
}

// runtimeAPI is a fake Lambda Runtime API: it counts the requests for the next event and
// answers every request with a 500, which makes aws-lambda-go exit.
func runtimeAPI(t *testing.T, next chan<- time.Time) (addr string, nexts *atomic.Int32) {
	nexts = new(atomic.Int32)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodGet && strings.HasSuffix(r.URL.Path, "/runtime/invocation/next") {
			nexts.Add(1)
			if next != nil {
				select {
				case next <- time.Now():
				default:
				}
			}
		}
		http.Error(w, "measured: exit", http.StatusInternalServerError)
	}))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://"), nexts
}

var collected = regexp.MustCompile(`Collected : (\d+)`)

// startInstructions runs bin under callgrind until aws-lambda-go exits after its first
// GET /next, and returns the instructions counted.
func startInstructions(t *testing.T, valgrind, bin string) int64 {
	addr, nexts := runtimeAPI(t, nil)
	cmd := exec.Command(valgrind, "--tool=callgrind", "--callgrind-out-file=/dev/null", bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+addr, "GODEBUG=asyncpreemptoff=1", "GOMAXPROCS=1")
	out, _ := cmd.CombinedOutput() // it exits 1, after the 500
	if nexts.Load() != 1 {
		t.Fatalf("%s under callgrind asked %d times for the next event, want 1:\n%s", bin, nexts.Load(), out)
	}
	m := collected.FindSubmatch(out)
	if m == nil {
		t.Fatalf("no callgrind total in the output of %s:\n%s", bin, out)
	}
	n, _ := strconv.ParseInt(string(m[1]), 10, 64)
	return n
}

// initBytes is what package initialisation allocates, by GODEBUG=inittrace=1.
func initBytes(t *testing.T, bin string) int64 {
	addr, _ := runtimeAPI(t, nil)
	cmd := exec.Command(bin)
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+addr, "GODEBUG=inittrace=1")
	out, _ := cmd.CombinedOutput()
	var total int64
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		// init internal/bytealg @0.002 ms, 0 ms clock, 0 bytes, 0 allocs
		f := strings.Fields(sc.Text())
		if len(f) >= 10 && f[0] == "init" && f[8] == "bytes," {
			n, _ := strconv.ParseInt(f[7], 10, 64)
			total += n
		}
	}
	return total
}

// toNext is the median time from starting bin to its first GET /next, over ten runs.
func toNext(t *testing.T, bin string) time.Duration {
	var ds []time.Duration
	for range 10 {
		next := make(chan time.Time, 1)
		addr, _ := runtimeAPI(t, next)
		cmd := exec.Command(bin)
		cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+addr)
		start := time.Now()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		select {
		case at := <-next:
			ds = append(ds, at.Sub(start))
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not ask for an event within 10 s", bin)
		}
		cmd.Wait()
	}
	slices.Sort(ds)
	return ds[len(ds)/2]
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }
