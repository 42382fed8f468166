// Package localddb starts a real DynamoDB API server, dynalite, for tests.
//
// Each [Start] runs its own dynalite process (in-memory store) on its own free loopback port, so
// parallel tests and several test binaries running at once (go test ./...) never share state.
// The process is started directly with [exec.Command] as
//
//	node <repo>/node_modules/dynalite/cli.js --host 127.0.0.1 --port N \
//	     --createTableMs 0 --deleteTableMs 0 --updateTableMs 0
//
// where <repo> is the directory of the nearest go.mod above the working directory (go test runs
// in the package directory). dynalite is pinned in the repository's package.json and installed
// by `make node_modules` (npm ci); `make test` does that first. A missing node or dynalite fails
// the test: it never skips.
//
// Known differences from real DynamoDB (dynalite 4.0.0): ReturnValuesOnConditionCheckFailure is
// accepted but ignored (a ConditionalCheckFailedException carries no Item), and there is no
// UpdateTimeToLive, no Transact* and no PartiQL.
package localddb

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/ratelimit"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// StartTimeout bounds how long [Start] waits for dynalite to answer ListTables.
const StartTimeout = 15 * time.Second

// Region is the region of the clients made by [Server.Client].
const Region = "us-east-1"

// installHint is appended to every error about a missing or broken installation.
const installHint = "run `make node_modules` (npm ci --no-audit --no-fund) at the repository root; `make test` does it for you"

// Server is one running dynalite process. Its methods are safe for concurrent use.
type Server struct {
	endpoint string
	cmd      *exec.Cmd
	out      *logBuffer
	exited   chan struct{} // closed once cmd.Wait has returned
	waitErr  error         // cmd.Wait's result, set before exited is closed
	stopOnce sync.Once
}

// Start starts a dynalite server for t and registers a cleanup that stops it. It fails t (never
// skips) when node or dynalite is missing or the server does not answer within [StartTimeout].
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		t.Fatalf("localddb: %v", err)
	}
	t.Cleanup(s.Stop)
	return s
}

// StartServer starts a dynalite server without a testing.TB, for TestMain. The caller must call
// [Server.Stop].
func StartServer() (*Server, error) {
	node, cli, err := locate()
	if err != nil {
		return nil, err
	}
	deadline := time.Now().Add(StartTimeout)
	// A free port found by listening on :0 may be taken by another process before dynalite binds
	// it; dynalite then exits with EADDRINUSE and another port is tried.
	for attempt := 1; ; attempt++ {
		s, err := launch(node, cli, deadline)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 || time.Now().After(deadline) {
			return nil, err
		}
	}
}

// Endpoint returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) Endpoint() string { return s.endpoint }

// Output returns what dynalite has printed so far (stdout and stderr), for diagnostics.
func (s *Server) Output() string { return s.out.String() }

// Client returns a DynamoDB client for the server: static credentials "test"/"test", region
// us-east-1, BaseEndpoint set to [Server.Endpoint], a 10 s HTTP timeout, and a retryer suited to
// tests (3 attempts, backoff at most 100 ms, no retry quota, so a stopped server fails within a
// fraction of a second). optFns run last and may override any of these.
func (s *Server) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	// A plain aws.Config rather than config.LoadDefaultConfig: tests must not depend on the
	// environment (AWS_PROFILE, AWS_ENDPOINT_URL_DYNAMODB, ~/.aws/config).
	cfg := aws.Config{
		Region:      Region,
		Credentials: credentials.NewStaticCredentialsProvider("test", "test", ""),
		HTTPClient:  &http.Client{Timeout: 10 * time.Second},
	}
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.Retryer = retry.NewStandard(func(so *retry.StandardOptions) {
			so.MaxAttempts = 3
			so.MaxBackoff = 100 * time.Millisecond
			so.RateLimiter = ratelimit.None
		})
	}}, optFns...)
	return dynamodb.NewFromConfig(cfg, opts...)
}

// Stop kills the server (and its process group) and waits for it to exit. Later calls on its
// clients fail with a connection error, which is how tests simulate an unreachable store. Stop
// may be called more than once; the cleanup registered by [Start] calls it too.
func (s *Server) Stop() {
	s.stopOnce.Do(func() {
		if !s.Exited() { // once reaped, its pid may belong to someone else
			killTree(s.cmd)
		}
		select {
		case <-s.exited:
		case <-time.After(10 * time.Second):
			// Not expected after SIGKILL; do not hang the test binary over it.
		}
	})
}

// Exited reports whether the dynalite process has exited (after [Server.Stop] or on its own).
func (s *Server) Exited() bool {
	select {
	case <-s.exited:
		return true
	default:
		return false
	}
}

// TableClient is what [CreateTable] needs; *dynamodb.Client has it.
type TableClient interface {
	CreateTable(context.Context, *dynamodb.CreateTableInput, ...func(*dynamodb.Options)) (*dynamodb.CreateTableOutput, error)
	DescribeTable(context.Context, *dynamodb.DescribeTableInput, ...func(*dynamodb.Options)) (*dynamodb.DescribeTableOutput, error)
}

// CreateTable creates a table and waits until it is ACTIVE (at most 30 s, or ctx's deadline).
// When input.BillingMode and input.ProvisionedThroughput are both unset it uses PAY_PER_REQUEST;
// input itself is not modified.
func CreateTable(ctx context.Context, client TableClient, input *dynamodb.CreateTableInput) error {
	in := *input
	if in.BillingMode == "" && in.ProvisionedThroughput == nil {
		in.BillingMode = "PAY_PER_REQUEST"
	}
	if _, err := client.CreateTable(ctx, &in); err != nil {
		return fmt.Errorf("create table %s: %w", aws.ToString(in.TableName), err)
	}
	w := dynamodb.NewTableExistsWaiter(client, func(o *dynamodb.TableExistsWaiterOptions) {
		o.MinDelay = 10 * time.Millisecond
		o.MaxDelay = 200 * time.Millisecond
	})
	err := w.Wait(ctx, &dynamodb.DescribeTableInput{TableName: in.TableName}, 30*time.Second)
	if err != nil {
		return fmt.Errorf("wait for table %s to be ACTIVE: %w", aws.ToString(in.TableName), err)
	}
	return nil
}

var errAddrInUse = errors.New("address in use")

// locate finds node and dynalite's cli.js under the repository root.
func locate() (node, cli string, err error) {
	root, err := repoRoot()
	if err != nil {
		return "", "", err
	}
	node, err = exec.LookPath("node")
	if err != nil {
		return "", "", fmt.Errorf("node (Node.js >= 20) not found on PATH: %v; install it, then %s", err, installHint)
	}
	cli = filepath.Join(root, "node_modules", "dynalite", "cli.js")
	if _, err := os.Stat(cli); err != nil {
		return "", "", fmt.Errorf("dynalite is not installed (%v); %s", err, installHint)
	}
	return node, cli, nil
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

// freePort asks the kernel for a free loopback TCP port.
func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// launch starts one dynalite process and waits until it answers, or kills it.
func launch(node, cli string, deadline time.Time) (*Server, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	out := &logBuffer{max: 64 << 10}
	// dynalite prints this line once its HTTP server is bound: proof that the port is ours and
	// not another process's that won the race for it.
	ready := make(chan struct{})
	stdout := &lineWatcher{w: out, want: "Dynalite listening at: " + endpoint, found: ready}

	cmd := exec.Command(node, cli,
		"--host", "127.0.0.1", "--port", strconv.Itoa(port),
		"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0")
	cmd.Dir = filepath.Dir(cli)
	cmd.Stdout = stdout
	cmd.Stderr = out
	cmd.WaitDelay = 2 * time.Second
	setProcAttr(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s %s: %w", node, cli, err)
	}
	s := &Server{endpoint: endpoint, cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		s.waitErr = cmd.Wait()
		close(s.exited)
	}()

	fail := func(format string, args ...any) (*Server, error) {
		s.Stop()
		msg := fmt.Sprintf(format, args...)
		if o := strings.TrimSpace(out.String()); o != "" {
			msg += "\ndynalite output:\n" + o
		}
		return nil, errors.New(msg)
	}
	died := func() (*Server, error) {
		o := out.String()
		if strings.Contains(o, "EADDRINUSE") {
			return nil, fmt.Errorf("dynalite on port %d: %w\n%s", port, errAddrInUse, strings.TrimSpace(o))
		}
		return fail("dynalite exited before it answered (%v); if the installation is broken, %s", s.waitErr, installHint)
	}

	timer := time.NewTimer(time.Until(deadline))
	defer timer.Stop()
	select {
	case <-ready:
	case <-s.exited:
		return died()
	case <-timer.C:
		return fail("dynalite did not print its listening line on %s within %v", endpoint, StartTimeout)
	}

	// Listening; now poll the TCP port and ListTables until the API answers.
	ctx, cancel := context.WithDeadline(context.Background(), deadline)
	defer cancel()
	client := s.Client(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	var lastErr error
	for {
		select {
		case <-s.exited:
			return died()
		default:
		}
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err == nil {
			conn.Close()
			_, err = client.ListTables(ctx, &dynamodb.ListTablesInput{})
			if err == nil {
				return s, nil
			}
		}
		lastErr = err
		select {
		case <-time.After(20 * time.Millisecond):
		case <-ctx.Done():
			return fail("dynalite at %s did not answer ListTables within %v: %v", endpoint, StartTimeout, lastErr)
		}
	}
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

// lineWatcher passes writes to w and closes found once the stream has contained the line want.
type lineWatcher struct {
	w     *logBuffer
	want  string
	found chan struct{}
	line  []byte // the current, unfinished line, until found
	done  bool
}

// Write is called from one goroutine only (os/exec copies a stream sequentially).
func (l *lineWatcher) Write(p []byte) (int, error) {
	l.w.Write(p)
	if l.done {
		return len(p), nil
	}
	for _, c := range p {
		if c != '\n' {
			if len(l.line) < 4096 {
				l.line = append(l.line, c)
			}
			continue
		}
		if strings.TrimRight(string(l.line), "\r") == l.want {
			l.done = true
			l.line = nil
			close(l.found)
			return len(p), nil
		}
		l.line = l.line[:0]
	}
	return len(p), nil
}
