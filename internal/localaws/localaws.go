// Package localaws holds what the test helpers localddb and localsqs share: finding node and an
// npm package under the repository root, running a Node.js server in its own process group
// with its output captured, waiting until it is ready, stopping it, and configuring AWS SDK
// clients for it.
//
// The repository root is the directory of the nearest go.mod above the working directory (go
// test runs in the package directory). The npm packages are pinned in the repository's
// package.json and installed by `make node_modules` (npm ci); `make test` does that first. A
// missing node or package is an error: callers fail their tests, they never skip.
package localaws

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
)

// InstallHint is appended to every error about a missing or broken installation.
const InstallHint = "run `make node_modules` (npm ci --no-audit --no-fund) at the repository root; `make test` does it for you"

// ErrExited is returned by [Process.WaitReady] and [Process.Poll] when the process exits first.
var ErrExited = errors.New("process exited")

// ErrTimeout is returned by [Process.WaitReady] when the deadline passes first.
var ErrTimeout = errors.New("deadline passed")

// Locate returns the path of node, the repository root, and root/node_modules/pkg/file, after
// checking that the last exists. Its errors name pkg and end in [InstallHint].
func Locate(pkg, file string) (node, root, path string, err error) {
	root, err = repoRoot()
	if err != nil {
		return "", "", "", err
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

// repoRoot walks up from the working directory to the nearest directory holding go.mod.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", fmt.Errorf("working directory: %w", err)
	}
	for dir := wd; ; {
		if _, err := os.Stat(filepath.Join(dir, "go.mod")); err == nil {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod in %s or any parent directory", wd)
		}
		dir = parent
	}
}

// StartT calls start for t and registers a cleanup that stops the server it returns. It fails t
// (never skips), naming prefix, when start returns an error.
func StartT[S interface{ Stop() }](t testing.TB, prefix string, start func() (S, error)) S {
	t.Helper()
	s, err := start()
	if err != nil {
		t.Fatalf("%s: %v", prefix, err)
	}
	t.Cleanup(s.Stop)
	return s
}

// Command describes a Node.js server process for [Start].
type Command struct {
	// Name names the server in error messages ("dynalite").
	Name string
	// Node is the node executable; Script the script it runs, whose directory is the working
	// directory; Args follow Script.
	Node, Script string
	Args         []string
	// Ready is called on each line of standard output (without its line ending) until it
	// reports true; [Process.WaitReady] then returns its string.
	Ready func(line string) (string, bool)
	// Stdin gives the process a pipe as standard input, closed by [Process.Stop].
	Stdin bool
}

// Process is one running server process. Its methods are safe for concurrent use.
type Process struct {
	name     string
	cmd      *exec.Cmd
	stdin    io.WriteCloser // nil without Command.Stdin
	out      *logBuffer
	ready    chan string   // buffered, capacity 1
	exited   chan struct{} // closed once cmd.Wait has returned
	waitErr  error         // cmd.Wait's result, set before exited is closed
	stopOnce sync.Once
}

// Start starts c in its own process group (on Linux, also killed when the calling process
// dies), its standard output and error captured (the first 64 KiB) for [Process.Output].
func Start(c Command) (*Process, error) {
	out := &logBuffer{max: 64 << 10}
	ready := make(chan string, 1)
	stdout := &lineWatcher{w: out, match: c.Ready, found: ready}

	cmd := exec.Command(c.Node, append([]string{c.Script}, c.Args...)...)
	cmd.Dir = filepath.Dir(c.Script)
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
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", c.Node, c.Script, err)
	}
	p := &Process{name: c.Name, cmd: cmd, stdin: stdin, out: out, ready: ready, exited: make(chan struct{})}
	go func() {
		p.waitErr = cmd.Wait()
		close(p.exited)
	}()
	return p, nil
}

// Output returns what the process has printed so far (stdout and stderr), for diagnostics.
func (p *Process) Output() string { return p.out.String() }

// WaitErr returns cmd.Wait's result once [Process.Exited] is true (nil before).
func (p *Process) WaitErr() error {
	if !p.Exited() {
		return nil
	}
	return p.waitErr
}

// Stop kills the process (and its process group), closes its stdin pipe if it has one, and
// waits for it to exit. It may be called more than once.
func (p *Process) Stop() {
	p.stopOnce.Do(func() {
		if !p.Exited() { // once reaped, its pid may belong to someone else
			killTree(p.cmd)
		}
		if p.stdin != nil {
			_ = p.stdin.Close()
		}
		select {
		case <-p.exited:
		case <-time.After(10 * time.Second):
			// Not expected after SIGKILL; do not hang the test binary over it.
		}
	})
}

// Exited reports whether the process has exited (after [Process.Stop] or on its own).
func (p *Process) Exited() bool {
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// Fail stops the process and returns an error with the formatted message followed by the
// process's output, if any.
func (p *Process) Fail(format string, args ...any) error {
	p.Stop()
	msg := fmt.Sprintf(format, args...)
	if o := strings.TrimSpace(p.out.String()); o != "" {
		msg += "\n" + p.name + " output:\n" + o
	}
	return errors.New(msg)
}

// WaitReady waits until Command.Ready has matched a line and returns its string. It returns
// [ErrExited] if the process exits first and [ErrTimeout] if deadline passes first.
func (p *Process) WaitReady(deadline time.Time) (string, error) {
	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case s := <-p.ready:
		return s, nil
	case <-p.exited:
		return "", ErrExited
	case <-timer.C:
		return "", ErrTimeout
	}
}

// Poll calls check every 20 ms until it returns nil (Poll then returns nil), the process
// exits ([ErrExited]), or deadline passes (check's last error). check gets a context with
// that deadline.
func (p *Process) Poll(deadline time.Time, check func(context.Context) error) error {
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	for {
		if p.Exited() {
			return ErrExited
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

// Config returns the AWS configuration of clients of a local server: static credentials
// "test"/"test", the given region and a 10 s HTTP timeout. It is a plain aws.Config rather
// than config.LoadDefaultConfig's: tests must not depend on the environment (AWS_PROFILE,
// AWS_ENDPOINT_URL_*, ~/.aws/config).
func Config(region string) aws.Config {
	return aws.Config{
		Region:      region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Timeout: 10 * time.Second},
	}
}

// Retryer returns a retryer suited to tests: 3 attempts, backoff at most 100 ms, and no retry
// quota, so a stopped server fails within a fraction of a second.
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
