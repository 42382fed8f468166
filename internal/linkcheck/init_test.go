package linkcheck

import (
	"bufio"
	"bytes"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// maxCodecInitAlloc is what package initialisation may allocate in a function using
// codec.JSON before its first GET /next: 1 MB. It was 2.77 MB while codec held the AWS Glue
// registry (the Glue client's service tables and endpoint rules, made at every cold start
// whether or not the function reads schemas from Glue); 0.42 MB with it in codec/glue.
const maxCodecInitAlloc = 1 << 20

// initLine is a line of GODEBUG=inittrace=1: "init pkg @0.1 ms, 0.01 ms clock, 1234 bytes, 5 allocs".
var initLine = regexp.MustCompile(`(?m)^init \S+ @[0-9.]+ ms, [0-9.]+ ms clock, (\d+) bytes, \d+ allocs`)

// TestCodecInit starts the codec.JSON function (testdata/codec) under a fake Runtime API, which
// answers its first GET /next with 410 (aws-lambda-go's loop then exits), and holds what
// package initialisation allocated to maxCodecInitAlloc. testdata/coldstart measures the same
// start with callgrind and the time to the first /next (docs/codec.md).
func TestCodecInit(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	goCmd(t, []string{"GOOS=" + runtime.GOOS, "GOARCH=" + runtime.GOARCH, "CGO_ENABLED=0"},
		append([]string{"build", "-o", dir + string(filepath.Separator)}, append(lambdaFlags, pkgs("codec")...)...)...)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	next := make(chan struct{}, 1)
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/2018-06-01/runtime/invocation/next" {
			select {
			case next <- struct{}{}:
			default:
			}
		}
		w.WriteHeader(http.StatusGone)
	})}
	go srv.Serve(ln)
	defer srv.Close()

	cmd := exec.Command(filepath.Join(dir, "codec"))
	cmd.Env = append(os.Environ(), "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String(), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	select {
	case <-next:
	case <-time.After(30 * time.Second):
		_ = cmd.Process.Kill()
		t.Fatalf("no GET /next in 30 s:\n%s", stderr.String())
	}
	_ = cmd.Wait()

	var total int64
	sc := bufio.NewScanner(&stderr)
	for sc.Scan() {
		if m := initLine.FindSubmatch(sc.Bytes()); m != nil {
			n, _ := strconv.ParseInt(string(m[1]), 10, 64)
			total += n
		}
	}
	if total == 0 {
		t.Fatal("GODEBUG=inittrace=1 printed no init lines: is the check reading the right output?")
	}
	t.Logf("package initialisation allocated %.2f MB before the first GET /next", float64(total)/1e6)
	if total > maxCodecInitAlloc {
		t.Errorf("a function using codec.JSON allocates %.2f MB in package initialisation, more than %.1f MB: does it link the Glue client again (see maxCodecInitAlloc)?", float64(total)/1e6, float64(maxCodecInitAlloc)/1e6)
	}
}
