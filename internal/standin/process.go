// Package standin starts the servers that stand in for AWS services on this machine, which
// klt runs a stack against and the tests use:
// a DynamoDB API ([StartDynamoDB]: dynalite), an SQS API ([StartSQS]: local-aws-sqs) and a
// Kafka cluster that authenticates clients as Amazon MSK IAM does ([StartKafka]: franz-go's
// kfake with the MSK IAM checks); and, for the tests only, Secrets Manager and SSM Parameter
// Store ([StartMoto]: moto_server, from PyPI).
//
// It is product code: `klt invoke` and `klt local` start these servers, so the package does
// not import testing and reports every failure as an error. Tests use the wrappers of
// internal/standintest, which fail the test (never skip) when a server cannot start and
// stop it when the test ends.
//
// dynalite and local-aws-sqs are Node.js programs, run as child processes in a process group
// of their own (internal/procgroup; on Linux also killed when the calling process dies), each
// on its own loopback port, so parallel tests and several test binaries never share state.
// They run from, in this order: a node_modules directory the caller names ([WithNodeModules],
// or the environment variable [NodeModulesEnv], KLT_NODE_MODULES); inside the toolkit's
// checkout, its own node_modules (`make node_modules`, which `make test` runs); else the
// versions of the repository's package-lock.json, whose package.json and lock are embedded in
// the binary and installed with npm ci, on first use, into the user's cache directory
// (os.UserCacheDir()/klt/node-servers/KEY, KEY a hash of the lock; see install.go). So klt
// works from any directory, `go install`ed too. A missing node, npm or package is an error
// that says what to install or which variable to set.
//
// The Start functions take a context that bounds the start only (at most [StartTimeout]):
// a server runs until its Stop method is called.
package standin

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"

	"github.com/kafkalambda/toolkit/internal/procgroup"
)

// InstallHint is appended to every error about a missing or broken installation.
const InstallHint = "klt installs dynalite and local-aws-sqs with npm on first use (node and npm on PATH, the npm registry reachable), or runs them from the node_modules directory " + NodeModulesEnv + " names; in the toolkit's checkout, `make node_modules` installs them (`make test` does it for you)"

// StartTimeout bounds how long a Start function waits for its server to answer, whatever the
// deadline of the context it is given.
const StartTimeout = 15 * time.Second

// Region is the region of the clients the servers' Client methods make.
const Region = "us-east-1"

// errExited is returned by [process.waitReady] and [process.poll] when the process exits first.
var errExited = errors.New("process exited")

// Locate returns the path of node, the root of the toolkit's checkout around the working
// directory, and root/node_modules/pkg/file, after checking that the last exists: for tests
// that run other packages of the checkout's package.json. Its errors name pkg and end in
// [InstallHint].
func Locate(pkg, file string) (node, root, path string, err error) {
	root, ok := toolkitCheckout()
	if !ok {
		wd, _ := os.Getwd()
		return "", "", "", fmt.Errorf("%s is in the toolkit's package.json, and %s is not inside the toolkit's checkout", pkg, wd)
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", "", fmt.Errorf("node (Node.js >= 20) not found on PATH: %v; install it, then %s", err, InstallHint)
	}
	path = filepath.Join(root, "node_modules", pkg, file)
	if _, err := os.Stat(path); err != nil {
		return "", "", "", fmt.Errorf("%s is not installed (%v); %s", pkg, err, InstallHint)
	}
	return node, root, path, nil
}

// command describes a Node.js server process for [startProcess].
type command struct {
	// Name names the server in error messages ("dynalite").
	Name string
	// Node is the node executable; Script the script it runs, whose directory is the working
	// directory; Args follow Script.
	Node, Script string
	Args         []string
	// Ready is called on each line of standard output (without its line ending) until it
	// reports true; [process.waitReady] then returns its string.
	Ready func(line string) (string, bool)
	// Stdin gives the process a pipe as standard input, closed by [process.stop].
	Stdin bool
	// Env is added to the process's environment (klt's own).
	Env []string
	// Preamble, if set, is JavaScript run in the process before Script, which it then loads
	// as node would (process.argv as if Script were node's argument).
	Preamble string
}

// process is one running server process. Its methods are safe for concurrent use.
type process struct {
	name     string
	script   string // command.Script: the server's script, whether or not a Preamble runs first
	cmd      *exec.Cmd
	stdin    io.WriteCloser // nil without command.Stdin
	out      *logBuffer
	ready    chan string   // buffered, capacity 1
	done     chan struct{} // closed once cmd.Wait has returned
	waitRes  error         // cmd.Wait's result, set before done is closed
	stopOnce sync.Once
}

// startProcess starts c in its own process group (on Linux, also killed when the calling
// process dies), its standard output and error captured (the first 64 KiB) for
// [process.output].
func startProcess(c command) (*process, error) {
	out := &logBuffer{max: 64 << 10}
	ready := make(chan string, 1)
	stdout := &lineWatcher{w: out, match: c.Ready, found: ready}

	args := append([]string{c.Script}, c.Args...)
	if c.Preamble != "" {
		// node -e CODE -- ARGS gives the code process.argv = [node, ARGS...]; the script
		// expects [node, script, ARGS...], so its path goes back in before it is loaded.
		script, err := json.Marshal(c.Script)
		if err != nil {
			return nil, err
		}
		code := fmt.Sprintf("%s\nprocess.argv.splice(1, 0, %s);\nrequire(%s);\n", c.Preamble, script, script)
		args = append([]string{"-e", code, "--"}, c.Args...)
	}
	cmd := exec.Command(c.Node, args...)
	cmd.Dir = filepath.Dir(c.Script)
	if len(c.Env) > 0 {
		cmd.Env = append(os.Environ(), c.Env...)
	}
	cmd.Stdout = stdout
	cmd.Stderr = out
	cmd.WaitDelay = 2 * time.Second
	var stdin io.WriteCloser
	if c.Stdin {
		var err error
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, fmt.Errorf("stdin pipe: %w", err)
		}
	}
	procgroup.Set(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", c.Node, c.Script, err)
	}
	p := &process{name: c.Name, script: c.Script, cmd: cmd, stdin: stdin, out: out, ready: ready, done: make(chan struct{})}
	go func() {
		p.waitRes = cmd.Wait()
		close(p.done)
	}()
	return p, nil
}

// output returns what the process has printed so far (stdout and stderr), for diagnostics.
func (p *process) output() string { return p.out.String() }

// waitErr returns cmd.Wait's result once [process.exited] is true (nil before).
func (p *process) waitErr() error {
	if !p.exited() {
		return nil
	}
	return p.waitRes
}

// stop kills the process (and its process group), closes its stdin pipe if it has one, and
// waits for it to exit. It may be called more than once.
func (p *process) stop() {
	p.stopOnce.Do(func() {
		if !p.exited() { // once reaped, its pid may belong to someone else
			procgroup.Kill(p.cmd)
		}
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
		select {
		case <-p.done:
		case <-time.After(10 * time.Second):
			// Not expected after SIGKILL; do not hang the test binary over it.
		}
	})
}

// exited reports whether the process has exited (after [process.stop] or on its own).
func (p *process) exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// fail stops the process and returns an error with the formatted message followed by the
// process's output, if any.
func (p *process) fail(format string, args ...any) error {
	p.stop()
	msg := fmt.Sprintf(format, args...)
	if o := strings.TrimSpace(p.out.String()); o != "" {
		msg += "\n" + p.name + " output:\n" + o
	}
	return errors.New(msg)
}

// waitReady waits until command.Ready has matched a line and returns its string. It returns
// [errExited] if the process exits first and ctx's error if ctx ends first.
func (p *process) waitReady(ctx context.Context) (string, error) {
	select {
	case s := <-p.ready:
		return s, nil
	case <-p.done:
		return "", errExited
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// poll calls check with ctx every 20 ms until it returns nil (poll then returns nil), the
// process exits ([errExited]), or ctx ends (check's last error).
func (p *process) poll(ctx context.Context, check func(context.Context) error) error {
	for {
		if p.exited() {
			return errExited
		}
		err := check(ctx)
		if err == nil {
			return nil
		}
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return err
		}
	}
}

// ClientConfig returns the AWS configuration of clients of a local server: static credentials
// "test"/"test", the given region and a 10 s HTTP timeout. It is a plain aws.Config rather
// than config.LoadDefaultConfig's: clients of a local server must not depend on the
// environment (AWS_PROFILE, AWS_ENDPOINT_URL_*, ~/.aws/config).
func ClientConfig(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Timeout: 10 * time.Second},
	}
}

// Retryer returns a retryer suited to a local server: 3 attempts, backoff at most 100 ms, and
// no retry quota, so a stopped server fails within a fraction of a second.
func Retryer() aws.Retryer {
	return retry.NewStandard(func(so *retry.StandardOptions) {
		so.MaxAttempts = 3
		so.MaxBackoff = 100 * time.Millisecond
		so.RateLimiter = ratelimit.None
	})
}

// logBuffer is a goroutine-safe buffer that keeps the first max bytes written to it.
type logBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
	max int
}

func (b *logBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if room := b.max - b.buf.Len(); room > 0 {
		b.buf.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (b *logBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// lineWatcher passes writes to w and sends on found, once, match's string for the first line
// that match accepts.
type lineWatcher struct {
	w     *logBuffer
	match func(line string) (string, bool)
	found chan<- string // buffered, capacity 1
	line  []byte        // the current, unfinished line, until found
	done  bool
}

// Write is called from one goroutine only (os/exec copies a stream sequentially).
func (l *lineWatcher) Write(p []byte) (int, error) {
	l.w.Write(p)
	if l.done || l.match == nil {
		return len(p), nil
	}
	for _, c := range p {
		if c != '\n' {
			if len(l.line) < 4096 {
				l.line = append(l.line, c)
			}
			continue
		}
		if s, ok := l.match(strings.TrimRight(string(l.line), "\r")); ok {
			l.done = true
			l.line = nil
			l.found <- s
			return len(p), nil
		}
		l.line = l.line[:0]
	}
	return len(p), nil
}

// startContext bounds ctx by [StartTimeout].
func startContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(ctx, StartTimeout)
}
