// Package localsqs starts a real SQS API server, local-aws-sqs, for tests.
//
// Each [Start] runs its own local-aws-sqs process (queues in memory) on its own loopback port,
// so parallel tests and several test binaries running at once (go test ./...) never share
// queues. local-aws-sqs has no command line of its own; the process is started directly with
// [os/exec.Command] as
//
//	node <repo>/internal/localsqs/server.cjs --host 127.0.0.1 --port 0 --exit-on-stdin-close
//
// where <repo> is the directory of the nearest go.mod above the working directory (go test
// runs in the package directory). Port 0 lets the kernel choose a free port, which the server
// prints and uses in the queue URLs it returns, so no port can be lost to a race. The server
// exits when its stdin, a pipe from the test binary, closes, and on Linux when the test binary
// dies. local-aws-sqs is pinned in the repository's package.json and installed by
// `make node_modules` (npm ci); `make test` does that first. A missing node or local-aws-sqs
// fails the test: it never skips.
//
// local-aws-sqs 2.0.2 speaks the JSON protocol of the current aws-sdk-go-v2 sqs client
// (message attributes with their MD5, visibility, redrive, FIFO groups and deduplication, long
// polls). Known differences from real SQS: ReceiveMessage returns system attributes only for
// the deprecated AttributeNames field, not for MessageSystemAttributeNames ([Receive] sets
// both), there are no permission checks, and queue URLs are http://127.0.0.1:PORT/123456789012/NAME.
// Deleted queue names can be created again at once.
package localsqs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/internal/localaws"
)

// StartTimeout bounds how long [Start] waits for local-aws-sqs to answer ListQueues.
const StartTimeout = 15 * time.Second

// Region is the region of the clients made by [Server.Client].
const Region = "us-east-1"

// AccountID is the account in the server's queue URLs and ARNs.
const AccountID = "123456789012"

// readyPrefix starts the line server.cjs prints once it is listening.
const readyPrefix = "local-aws-sqs listening at: "

// Server is one running local-aws-sqs process. Its methods are safe for concurrent use.
type Server struct {
	endpoint string
	proc     *localaws.Process
}

// Start starts a local-aws-sqs server for t and registers a cleanup that stops it. It fails t
// (never skips) when node or local-aws-sqs is missing or the server does not answer within
// [StartTimeout].
func Start(t testing.TB) *Server {
	t.Helper()
	return localaws.StartT(t, "localsqs", StartServer)
}

// StartServer starts a local-aws-sqs server without a testing.TB, for TestMain. The caller
// must call [Server.Stop].
func StartServer() (*Server, error) {
	node, script, err := locate()
	if err != nil {
		return nil, err
	}
	return launch(node, script, time.Now().Add(StartTimeout))
}

// Endpoint returns the server's base URL, "http://127.0.0.1:PORT".
func (s *Server) Endpoint() string { return s.endpoint }

// Output returns what the server has printed so far (stdout and stderr), for diagnostics.
func (s *Server) Output() string { return s.proc.Output() }

// QueueURL returns the URL the server gives the queue called name (which need not exist).
func (s *Server) QueueURL(name string) string {
	return s.endpoint + "/" + AccountID + "/" + name
}

// Client returns an SQS client for the server: static credentials "test"/"test", region
// us-east-1, BaseEndpoint set to [Server.Endpoint], a 10 s HTTP timeout, and a retryer suited
// to tests (3 attempts, backoff at most 100 ms, no retry quota, so a stopped server fails
// within a fraction of a second). optFns run last and may override any of these.
func (s *Server) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	opts := append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.Retryer = localaws.Retryer()
	}}, optFns...)
	return sqs.NewFromConfig(localaws.Config(Region), opts...)
}

// Stop kills the server (and its process group) and waits for it to exit. Later calls on its
// clients fail with a connection error, which is how tests simulate an unreachable queue. Stop
// may be called more than once; the cleanup registered by [Start] calls it too.
func (s *Server) Stop() { s.proc.Stop() }

// Exited reports whether the server process has exited (after [Server.Stop] or on its own).
func (s *Server) Exited() bool { return s.proc.Exited() }

// QueueClient is what [CreateQueue] needs; *sqs.Client has it.
type QueueClient interface {
	CreateQueue(context.Context, *sqs.CreateQueueInput, ...func(*sqs.Options)) (*sqs.CreateQueueOutput, error)
}

// CreateQueue creates the queue called name and returns its URL. A name ending in ".fifo"
// makes a FIFO queue (FifoQueue "true", unless attributes say otherwise); attributes (nil for
// none) are the queue's other attributes, such as "VisibilityTimeout" or "RedrivePolicy", and
// are not modified.
func CreateQueue(ctx context.Context, client QueueClient, name string, attributes map[string]string) (string, error) {
	attrs := make(map[string]string, len(attributes)+1)
	for k, v := range attributes {
		attrs[k] = v
	}
	if _, ok := attrs[string(types.QueueAttributeNameFifoQueue)]; !ok && strings.HasSuffix(name, ".fifo") {
		attrs[string(types.QueueAttributeNameFifoQueue)] = "true"
	}
	out, err := client.CreateQueue(ctx, &sqs.CreateQueueInput{QueueName: aws.String(name), Attributes: attrs})
	if err != nil {
		return "", fmt.Errorf("create queue %s: %w", name, err)
	}
	return aws.ToString(out.QueueUrl), nil
}

// ReceiveClient is what [Receive] needs; *sqs.Client has it.
type ReceiveClient interface {
	ReceiveMessage(context.Context, *sqs.ReceiveMessageInput, ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
}

// Receive receives messages from the queue until it has max of them or wait has passed, with
// every system attribute (asked for through both AttributeNames, which local-aws-sqs reads,
// and MessageSystemAttributeNames) and every message attribute. It neither deletes the
// messages nor changes their visibility timeout, so they are not received again until that
// (30 s by default) has passed. It returns what it received, and an error only if a
// ReceiveMessage call failed.
func Receive(ctx context.Context, client ReceiveClient, queueURL string, max int, wait time.Duration) ([]types.Message, error) {
	deadline := time.Now().Add(wait)
	var got []types.Message
	for len(got) < max {
		left := time.Until(deadline)
		if left <= 0 {
			break
		}
		secs := int32(min(left.Round(time.Second)/time.Second, 20))
		in := &sqs.ReceiveMessageInput{
			QueueUrl:                    aws.String(queueURL),
			MaxNumberOfMessages:         int32(min(max-len(got), 10)),
			WaitTimeSeconds:             secs,
			MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
			MessageAttributeNames:       []string{"All"},
		}
		//lint:ignore SA1019 local-aws-sqs 2.0.2 reads system attribute names only from this field
		in.AttributeNames = []types.QueueAttributeName{types.QueueAttributeNameAll}
		out, err := client.ReceiveMessage(ctx, in)
		if err != nil {
			return got, fmt.Errorf("receive from %s: %w", queueURL, err)
		}
		got = append(got, out.Messages...)
		if len(out.Messages) == 0 && secs == 0 {
			// Less than half a second left: a short pause rather than a busy loop.
			select {
			case <-time.After(min(left, 50*time.Millisecond)):
			case <-ctx.Done():
				return got, ctx.Err()
			}
		}
	}
	return got, nil
}

// locate finds node and server.cjs under the repository root, and checks that local-aws-sqs is
// installed there.
func locate() (node, script string, err error) {
	node, root, _, err := localaws.Locate("local-aws-sqs", "package.json")
	if err != nil {
		return "", "", err
	}
	script = filepath.Join(root, "internal", "localsqs", "server.cjs")
	if _, err := os.Stat(script); err != nil {
		return "", "", fmt.Errorf("the launcher script is missing: %v", err)
	}
	return node, script, nil
}

// launch starts one server process and waits until it answers ListQueues, or kills it.
func launch(node, script string, deadline time.Time) (*Server, error) {
	proc, err := localaws.Start(localaws.Command{
		Name:   "local-aws-sqs",
		Node:   node,
		Script: script,
		Args:   []string{"--host", "127.0.0.1", "--port", "0", "--exit-on-stdin-close"},
		Ready:  func(line string) (string, bool) { return strings.CutPrefix(line, readyPrefix) },
		Stdin:  true,
	})
	if err != nil {
		return nil, err
	}
	s := &Server{proc: proc}

	url, err := proc.WaitReady(deadline)
	switch {
	case errors.Is(err, localaws.ErrExited):
		return nil, proc.Fail("local-aws-sqs exited before it answered (%v); if the installation is broken, %s", proc.WaitErr(), localaws.InstallHint)
	case err != nil:
		return nil, proc.Fail("local-aws-sqs did not print its listening line within %v", StartTimeout)
	case !strings.HasPrefix(url, "http://127.0.0.1:"):
		return nil, proc.Fail("local-aws-sqs printed an unexpected address %q", url)
	}
	s.endpoint = url

	// Listening; check that the API answers.
	client := s.Client(func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
	err = proc.Poll(deadline, func(ctx context.Context) error {
		_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
		return err
	})
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, localaws.ErrExited):
		return nil, proc.Fail("local-aws-sqs exited (%v)", proc.WaitErr())
	default:
		return nil, proc.Fail("local-aws-sqs at %s did not answer ListQueues within %v: %v", s.endpoint, StartTimeout, err)
	}
}
