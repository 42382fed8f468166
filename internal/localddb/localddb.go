// Package localddb starts a real DynamoDB API server, dynalite, for tests.
//
// Each [Start] runs its own dynalite process (in-memory store) on its own free loopback port, so
// parallel tests and several test binaries running at once (go test ./...) never share state.
// The process is started directly with [os/exec.Command] as
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
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/kafkalambda/toolkit/internal/localaws"
)

// StartTimeout bounds how long [Start] waits for dynalite to answer ListTables.
const StartTimeout = 15 * time.Second

// Region is the region of the clients made by [Server.Client].
const Region = "us-east-1"

// Server is one running dynalite process. Its methods are safe for concurrent use.
type Server struct {
	endpoint string
	proc     *localaws.Process
}

// Start starts a dynalite server for t and registers a cleanup that stops it. It fails t (never
// skips) when node or dynalite is missing or the server does not answer within [StartTimeout].
func Start(t testing.TB) *Server {
	t.Helper()
	return localaws.StartT(t, "localddb", StartServer)
}

// StartServer starts a dynalite server without a testing.TB, for TestMain. The caller must call
// [Server.Stop].
func StartServer() (*Server, error) {
	node, _, cli, err := localaws.Locate("dynalite", "cli.js")
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
func (s *Server) Output() string { return s.proc.Output() }

// Client returns a DynamoDB client for the server: static credentials "test"/"test", region
// us-east-1, BaseEndpoint set to [Server.Endpoint], a 10 s HTTP timeout, and a retryer suited to
// tests (3 attempts, backoff at most 100 ms, no retry quota, so a stopped server fails within a
// fraction of a second). optFns run last and may override any of these.
func (s *Server) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.Retryer = localaws.Retryer()
	}}, optFns...)
	return dynamodb.NewFromConfig(localaws.Config(Region), opts...)
}

// Stop kills the server (and its process group) and waits for it to exit. Later calls on its
// clients fail with a connection error, which is how tests simulate an unreachable store. Stop
// may be called more than once; the cleanup registered by [Start] calls it too.
func (s *Server) Stop() { s.proc.Stop() }

// Exited reports whether the dynalite process has exited (after [Server.Stop] or on its own).
func (s *Server) Exited() bool { return s.proc.Exited() }

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
	// dynalite prints this line once its HTTP server is bound: proof that the port is ours and
	// not another process's that won the race for it.
	listening := "Dynalite listening at: " + endpoint
	proc, err := localaws.Start(localaws.Command{
		Name:   "dynalite",
		Node:   node,
		Script: cli,
		Args: []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"},
		Ready: func(line string) (string, bool) { return "", line == listening },
	})
	if err != nil {
		return nil, err
	}
	s := &Server{endpoint: endpoint, proc: proc}

	died := func() (*Server, error) {
		o := proc.Output()
		if strings.Contains(o, "EADDRINUSE") {
			return nil, fmt.Errorf("dynalite on port %d: %w\n%s", port, errAddrInUse, strings.TrimSpace(o))
		}
		return nil, proc.Fail("dynalite exited before it answered (%v); if the installation is broken, %s", proc.WaitErr(), localaws.InstallHint)
	}

	switch _, err := proc.WaitReady(deadline); {
	case errors.Is(err, localaws.ErrExited):
		return died()
	case err != nil:
		return nil, proc.Fail("dynalite did not print its listening line on %s within %v", endpoint, StartTimeout)
	}

	// Listening; now poll the TCP port and ListTables until the API answers.
	client := s.Client(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	err = proc.Poll(deadline, func(ctx context.Context) error {
		var d net.Dialer
		conn, err := d.DialContext(ctx, "tcp", "127.0.0.1:"+strconv.Itoa(port))
		if err != nil {
			return err
		}
		conn.Close()
		_, err = client.ListTables(ctx, &dynamodb.ListTablesInput{})
		return err
	})
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, localaws.ErrExited):
		return died()
	default:
		return nil, proc.Fail("dynalite at %s did not answer ListTables within %v: %v", endpoint, StartTimeout, err)
	}
}
