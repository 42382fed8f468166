package standin

import (
	"context"
	"errors"
	"fmt"
	"net"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
)

// DynamoDB is one running dynalite process, a DynamoDB API server. Its methods are safe for
// concurrent use.
//
// Each [StartDynamoDB] runs its own dynalite process (in-memory store) on its own free
// loopback port, started as
//
//	node <node_modules>/dynalite/cli.js --host 127.0.0.1 --port N \
//	     --createTableMs 0 --deleteTableMs 0 --updateTableMs 0
//
// Known differences from real DynamoDB (dynalite 4.0.0): ReturnValuesOnConditionCheckFailure
// is accepted but ignored (a ConditionalCheckFailedException carries no Item), and there is no
// UpdateTimeToLive, no Transact* and no PartiQL.
type DynamoDB struct {
	endpoint string
	proc     *process
}

// StartDynamoDB starts a dynalite server and returns once it answers ListTables. ctx bounds
// the start (at most [StartTimeout], after the first use's installation, at most
// [InstallTimeout]), not the server's life: the caller must call [DynamoDB.Stop]. opts say
// where dynalite is (see the package doc). It fails when node or dynalite is missing and
// cannot be installed (the error says what to install or set) or the server does not answer
// in time.
func StartDynamoDB(ctx context.Context, opts ...NodeOption) (*DynamoDB, error) {
	ns, err := locateServers(ctx, opts)
	if err != nil {
		return nil, err
	}
	node, cli := ns.node, filepath.Join(ns.modules, "dynalite", "cli.js")
	ctx, cancel := startContext(ctx)
	defer cancel()
	// A free port found by listening on :0 may be taken by another process before dynalite binds
	// it; dynalite then exits with EADDRINUSE and another port is tried.
	for attempt := 1; ; attempt++ {
		s, err := launchDynalite(ctx, node, cli, ns.env)
		if err == nil {
			return s, nil
		}
		if !errors.Is(err, errAddrInUse) || attempt == 5 || ctx.Err() != nil {
			return nil, err
		}
	}
}

// Endpoint returns the server's base URL, "http://127.0.0.1:PORT".
func (s *DynamoDB) Endpoint() string { return s.endpoint }

// Output returns what dynalite has printed so far (stdout and stderr), for diagnostics.
func (s *DynamoDB) Output() string { return s.proc.output() }

// Client returns a DynamoDB client for the server: [ClientConfig] of [Region], BaseEndpoint
// set to [DynamoDB.Endpoint], and [Retryer] (a stopped server fails within a fraction of a
// second). optFns run last and may override any of these.
func (s *DynamoDB) Client(optFns ...func(*dynamodb.Options)) *dynamodb.Client {
	opts := append([]func(*dynamodb.Options){func(o *dynamodb.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.Retryer = Retryer()
	}}, optFns...)
	return dynamodb.NewFromConfig(ClientConfig(Region), opts...)
}

// Stop kills the server (and its process group) and waits for it to exit. Later calls on its
// clients fail with a connection error, which is how tests simulate an unreachable store. Stop
// may be called more than once.
func (s *DynamoDB) Stop() { s.proc.stop() }

// Exited reports whether the dynalite process has exited (after [Server.Stop] or on its own).
func (s *DynamoDB) Exited() bool { return s.proc.exited() }

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

// dynaliteGuard keeps dynalite up when a client abandons a request mid-body. dynalite 4.0.0's
// request handler throws on the request's error event (index.js: req.on('error', function
// (err) { throw err })), so a client that gives up, as a caller whose deadline ends does,
// ended the whole server with "Error: aborted" (ECONNRESET) and failed every later call of
// the test that ran it. Real DynamoDB just drops such a request. Any other uncaught error
// still ends the process, as it did.
const dynaliteGuard = `process.on('uncaughtException', function (err) {
  if (err && (err.code === 'ECONNRESET' || err.message === 'aborted')) {
    console.error('dynalite: a client closed its connection mid-request (' + err.message + '); request dropped');
    return;
  }
  console.error(err && err.stack ? err.stack : err);
  process.exit(1);
});`

// launchDynalite starts one dynalite process and waits until it answers, or kills it.
func launchDynalite(ctx context.Context, node, cli string, env []string) (*DynamoDB, error) {
	port, err := freePort()
	if err != nil {
		return nil, fmt.Errorf("find a free port: %w", err)
	}
	endpoint := "http://127.0.0.1:" + strconv.Itoa(port)
	// dynalite prints this line once its HTTP server is bound: proof that the port is ours and
	// not another process's that won the race for it.
	listening := "Dynalite listening at: " + endpoint
	proc, err := startProcess(command{
		Name:   "dynalite",
		Node:   node,
		Script: cli,
		Args: []string{"--host", "127.0.0.1", "--port", strconv.Itoa(port),
			"--createTableMs", "0", "--deleteTableMs", "0", "--updateTableMs", "0"},
		Ready:    func(line string) (string, bool) { return "", line == listening },
		Env:      env,
		Preamble: dynaliteGuard,
	})
	if err != nil {
		return nil, err
	}
	s := &DynamoDB{endpoint: endpoint, proc: proc}

	died := func() (*DynamoDB, error) {
		o := proc.output()
		if strings.Contains(o, "EADDRINUSE") {
			return nil, fmt.Errorf("dynalite on port %d: %w\n%s", port, errAddrInUse, strings.TrimSpace(o))
		}
		return nil, proc.fail("dynalite exited before it answered (%v); if the installation is broken, %s", proc.waitErr(), InstallHint)
	}

	switch _, err := proc.waitReady(ctx); {
	case errors.Is(err, errExited):
		return died()
	case err != nil:
		return nil, proc.fail("dynalite did not print its listening line on %s: %v", endpoint, err)
	}

	// Listening; now poll the TCP port and ListTables until the API answers.
	client := s.Client(func(o *dynamodb.Options) { o.Retryer = aws.NopRetryer{} })
	err = proc.poll(ctx, func(ctx context.Context) error {
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
	case errors.Is(err, errExited):
		return died()
	default:
		return nil, proc.fail("dynalite at %s did not answer ListTables in time: %v", endpoint, err)
	}
}
