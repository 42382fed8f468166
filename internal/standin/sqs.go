package standin

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// AccountID is the account in the server's queue URLs and ARNs.
const AccountID = "123456789012"

// readyPrefix starts the line server.cjs prints once it is listening.
const readyPrefix = "local-aws-sqs listening at: "

// SQS is one running local-aws-sqs process, an SQS API server. Its methods are safe for
// concurrent use.
//
// Each [StartSQS] runs its own local-aws-sqs process (queues in memory) on its own loopback port,
// so parallel tests and several test binaries running at once (go test ./...) never share
// queues. local-aws-sqs has no command line of its own; the process is started directly with
// [os/exec.Command] as
//
//	node <dir>/server.cjs --host 127.0.0.1 --port 0 --exit-on-stdin-close
//
// (server.cjs is this package's launcher, embedded in the binary: see the package doc for
// where it and local-aws-sqs are.)
//
// Port 0 lets the kernel choose a free port, which the server
// prints and uses in the queue URLs it returns, so no port can be lost to a race. The server
// exits when its stdin, a pipe from the calling process, closes, and on Linux when that process
// dies.
//
// local-aws-sqs 2.0.2 speaks the JSON protocol of the current aws-sdk-go-v2 sqs client
// (message attributes with their MD5, visibility, redrive, FIFO groups and deduplication, long
// polls). Known differences from real SQS: ReceiveMessage returns system attributes only for
// the deprecated AttributeNames field, not for MessageSystemAttributeNames (standintest.Receive
// sets both), there are no permission checks, and queue URLs are http://127.0.0.1:PORT/123456789012/NAME.
// Deleted queue names can be created again at once.
type SQS struct {
	endpoint string
	proc     *process
}

// StartSQS starts a local-aws-sqs server and returns once it answers ListQueues. ctx bounds
// the start (at most [StartTimeout], after the first use's installation, at most
// [InstallTimeout]), not the server's life: the caller must call [SQS.Stop]. opts say where
// local-aws-sqs is (see the package doc). It fails when node or local-aws-sqs is missing and
// cannot be installed (the error says what to install or set) or the server does not answer
// in time.
func StartSQS(ctx context.Context, opts ...NodeOption) (*SQS, error) {
	ns, err := locateServers(ctx, opts)
	if err != nil {
		return nil, err
	}
	ctx, cancel := startContext(ctx)
	defer cancel()
	return launchSQS(ctx, ns.node, ns.sqsScript, ns.env)
}

// Endpoint returns the server's base URL, "http://127.0.0.1:PORT".
func (s *SQS) Endpoint() string { return s.endpoint }

// Output returns what the server has printed so far (stdout and stderr), for diagnostics.
func (s *SQS) Output() string { return s.proc.output() }

// QueueURL returns the URL the server gives the queue called name (which need not exist).
func (s *SQS) QueueURL(name string) string {
	return s.endpoint + "/" + AccountID + "/" + name
}

// Client returns an SQS client for the server: [ClientConfig] of [Region], BaseEndpoint set
// to [SQS.Endpoint], and [Retryer] (a stopped server fails within a fraction of a second).
// optFns run last and may override any of these.
func (s *SQS) Client(optFns ...func(*sqs.Options)) *sqs.Client {
	opts := append([]func(*sqs.Options){func(o *sqs.Options) {
		o.BaseEndpoint = aws.String(s.endpoint)
		o.Retryer = Retryer()
	}}, optFns...)
	return sqs.NewFromConfig(ClientConfig(Region), opts...)
}

// Stop kills the server (and its process group) and waits for it to exit. Later calls on its
// clients fail with a connection error, which is how tests simulate an unreachable queue. Stop
// may be called more than once.
func (s *SQS) Stop() { s.proc.stop() }

// Exited reports whether the server process has exited (after [Server.Stop] or on its own).
func (s *SQS) Exited() bool { return s.proc.exited() }

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

// launchSQS starts one server process and waits until it answers ListQueues, or kills it.
func launchSQS(ctx context.Context, node, script string, env []string) (*SQS, error) {
	proc, err := startProcess(command{
		Name:   "local-aws-sqs",
		Node:   node,
		Script: script,
		Args:   []string{"--host", "127.0.0.1", "--port", "0", "--exit-on-stdin-close"},
		Ready:  func(line string) (string, bool) { return strings.CutPrefix(line, readyPrefix) },
		Stdin:  true,
		Env:    env,
	})
	if err != nil {
		return nil, err
	}
	s := &SQS{proc: proc}

	url, err := proc.waitReady(ctx)
	switch {
	case errors.Is(err, errExited):
		return nil, proc.fail("local-aws-sqs exited before it answered (%v); if the installation is broken, %s", proc.waitErr(), InstallHint)
	case err != nil:
		return nil, proc.fail("local-aws-sqs did not print its listening line: %v", err)
	case !strings.HasPrefix(url, "http://127.0.0.1:"):
		return nil, proc.fail("local-aws-sqs printed an unexpected address %q", url)
	}
	s.endpoint = url

	// Listening; check that the API answers.
	client := s.Client(func(o *sqs.Options) { o.Retryer = aws.NopRetryer{} })
	err = proc.poll(ctx, func(ctx context.Context) error {
		_, err := client.ListQueues(ctx, &sqs.ListQueuesInput{})
		return err
	})
	switch {
	case err == nil:
		return s, nil
	case errors.Is(err, errExited):
		return nil, proc.fail("local-aws-sqs exited (%v)", proc.waitErr())
	default:
		return nil, proc.fail("local-aws-sqs at %s did not answer ListQueues in time: %v", s.endpoint, err)
	}
}
