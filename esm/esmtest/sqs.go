package esmtest

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-lambda-go/lambda"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/standin"
)

// DefaultQueue is the name of the queue NewSQS creates without one in the configuration.
const DefaultQueue = "queue"

// SQS is an emulated SQS event source mapping on a queue, invoking a handler in process.
// NewSQS starts it; it stops when the test ends.
type SQS struct {
	tb      testing.TB
	cfg     Queue
	client  *sqs.Client
	mapping *esm.SQS
	rec     *recorder
	cancel  context.CancelFunc
	done    chan struct{}

	mu     sync.Mutex
	runErr error
	dead   []types.Message
}

// NewSQS runs the mapping m on the queue of WithQueue (by default a new standard queue),
// invoking h in process; it stops when tb ends, and a mapping that stopped on an error fails
// tb. The queue is on WithSQS's endpoint, or on local-aws-sqs, which NewSQS starts when given
// none. It fails tb when the queue cannot be made or read, or the emulator refuses a setting.
func NewSQS(tb testing.TB, h lambda.Handler, m SQSMapping, opts ...Option) *SQS {
	tb.Helper()
	cfg := newConfig("SQS", opts)
	if len(cfg.bad) > 0 {
		tb.Fatalf("esmtest: %s", strings.Join(cfg.bad, "; "))
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	client := cfg.sqs
	if client == nil {
		srv, err := standin.StartSQS(ctx)
		if err != nil {
			tb.Fatalf("esmtest: starting local-aws-sqs: %v", err)
		}
		tb.Cleanup(srv.Stop)
		client = srv.Client()
	}
	q := cfg.queue
	if q.URL == "" {
		if err := createQueues(ctx, client, &q); err != nil {
			tb.Fatal(err)
		}
	}
	s := &SQS{tb: tb, cfg: q, client: client, done: make(chan struct{})}
	s.rec = newRecorder(tb, h, cfg, sqsRefs)
	mopts, err := m.sqsOptions()
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	s.mapping, err = esm.NewSQS(ctx, client, q.URL, s.rec, mopts...)
	if err != nil {
		tb.Fatalf("esmtest: %v", err)
	}
	rctx, stop := context.WithCancel(context.Background())
	s.cancel = stop
	go func() {
		defer close(s.done)
		err := s.mapping.Run(rctx)
		s.mu.Lock()
		s.runErr = err
		s.mu.Unlock()
	}()
	tb.Cleanup(s.close)
	return s
}

// createQueues creates cfg's queue, and its dead-letter queue when cfg asks for one.
func createQueues(ctx context.Context, client *sqs.Client, cfg *Queue) error {
	name := cfg.Name
	if name == "" {
		name = DefaultQueue
	}
	attrs := map[string]string{}
	for k, v := range cfg.Attributes {
		attrs[k] = v
	}
	if cfg.MaxReceiveCount > 0 {
		base, fifo := strings.CutSuffix(name, ".fifo")
		dlqName := base + "-dlq"
		if fifo {
			dlqName += ".fifo"
		}
		u, err := standin.CreateQueue(ctx, client, dlqName, nil)
		if err != nil {
			return fmt.Errorf("esmtest: %w", err)
		}
		arn, err := queueARN(ctx, client, u)
		if err != nil {
			return err
		}
		policy, _ := json.Marshal(map[string]string{"deadLetterTargetArn": arn, "maxReceiveCount": strconv.Itoa(cfg.MaxReceiveCount)})
		attrs[string(types.QueueAttributeNameRedrivePolicy)] = string(policy)
		cfg.DeadLetterQueueURL = u
	}
	u, err := standin.CreateQueue(ctx, client, name, attrs)
	if err != nil {
		return fmt.Errorf("esmtest: %w", err)
	}
	cfg.URL = u
	return nil
}

func queueARN(ctx context.Context, client *sqs.Client, url string) (string, error) {
	out, err := client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &url,
		AttributeNames: []types.QueueAttributeName{types.QueueAttributeNameQueueArn}})
	if err != nil {
		return "", fmt.Errorf("esmtest: reading the ARN of %s: %w", url, err)
	}
	return out.Attributes[string(types.QueueAttributeNameQueueArn)], nil
}

func (s *SQS) close() {
	s.cancel()
	select {
	case <-s.done:
	case <-time.After(requestTimeout):
		s.tb.Errorf("esmtest: the SQS mapping did not stop within %v", requestTimeout)
		return
	}
	if err := s.err(); err != nil {
		s.tb.Errorf("esmtest: the SQS mapping stopped: %v", err)
	}
}

func (s *SQS) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.runErr
}

// Client returns the client of the queue's endpoint.
func (s *SQS) Client() *sqs.Client { return s.client }

// QueueURL returns the mapping's queue.
func (s *SQS) QueueURL() string { return s.cfg.URL }

// Counters returns the mapping's running totals.
func (s *SQS) Counters() Counters { return counters(s.mapping.Counters().Snapshot()) }

// Metrics returns the metrics of the groups SQSMapping.MetricsConfig enabled, by the names
// Lambda publishes them under, as CloudWatch would show them since the mapping started.
func (s *SQS) Metrics() map[string]int64 { return s.mapping.Metrics() }

// Send sends one message per body to the queue, in order; a FIFO queue's messages all go
// to message group "group", deduplicated by their position in the call. It fails the test
// when a message cannot be sent.
func (s *SQS) Send(bodies ...string) {
	s.tb.Helper()
	fifo := strings.HasSuffix(s.cfg.URL, ".fifo")
	for i, b := range bodies {
		in := &sqs.SendMessageInput{MessageBody: aws.String(b)}
		if fifo {
			in.MessageGroupId = aws.String("group")
			in.MessageDeduplicationId = aws.String(strconv.FormatInt(time.Now().UnixNano(), 36) + "-" + strconv.Itoa(i))
		}
		s.SendMessage(in)
	}
}

// SendMessage sends in to the queue (its QueueUrl is set); it fails the test on an error.
func (s *SQS) SendMessage(in *sqs.SendMessageInput) {
	s.tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	in.QueueUrl = aws.String(s.cfg.URL)
	if _, err := s.client.SendMessage(ctx, in); err != nil {
		s.tb.Fatalf("esmtest: sending to %s: %v", s.cfg.URL, err)
	}
}

// Invocations returns the invocations that have ended, in the order they ended.
func (s *SQS) Invocations() []Invocation {
	done, _ := s.rec.invocations()
	return done
}

// Environments returns the emulated execution environments of a Lambda Managed Instances
// function (WithLMIConcurrency), in the order they were first used; nil without it.
func (s *SQS) Environments() []Environment { return s.rec.environments() }

// WaitIdle waits until the mapping is idle: no message left in the queue (visible, in
// flight or delayed, as the queue's approximate counts say: each was deleted or moved to the
// dead-letter queue) and no invocation under way. A message that failed is idle only once
// its visibility timeout has passed and the mapping has deleted it or the queue has moved it.
// It returns an error saying what is left when that does not happen within timeout, and at
// once when the mapping stopped on an error.
func (s *SQS) WaitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		if err := s.err(); err != nil {
			return fmt.Errorf("esmtest: the SQS mapping stopped: %w", err)
		}
		left, err := s.left()
		if err != nil {
			return err
		}
		if left == "" {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("esmtest: the SQS mapping is not idle after %v: %s", timeout, left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

func (s *SQS) left() (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	names := []types.QueueAttributeName{types.QueueAttributeNameApproximateNumberOfMessages,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible, types.QueueAttributeNameApproximateNumberOfMessagesDelayed}
	out, err := s.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: &s.cfg.URL, AttributeNames: names})
	if err != nil {
		return "", fmt.Errorf("esmtest: reading the counts of %s: %w", s.cfg.URL, err)
	}
	var parts []string
	for _, n := range names {
		v := out.Attributes[string(n)]
		if c, err := strconv.Atoi(v); err != nil || c != 0 {
			parts = append(parts, fmt.Sprintf("%s %s", n, v))
		}
	}
	if _, n := s.rec.invocations(); n > 0 {
		parts = append(parts, fmt.Sprintf("%d invocation(s) under way", n))
	}
	return strings.Join(parts, ", "), nil
}

// DeadLetters returns the messages the dead-letter queue (Queue.MaxReceiveCount or
// DeadLetterQueueURL) has received so far; they are received and deleted, so each call
// returns what earlier calls did and what came since. It fails the test when there is no
// dead-letter queue or it cannot be read.
func (s *SQS) DeadLetters() []types.Message {
	s.tb.Helper()
	if s.cfg.DeadLetterQueueURL == "" {
		s.tb.Fatal("esmtest: DeadLetters: the queue has no dead-letter queue (Queue.MaxReceiveCount)")
	}
	ctx, cancel := context.WithTimeout(context.Background(), requestTimeout)
	defer cancel()
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		msgs, err := receive(ctx, s.client, s.cfg.DeadLetterQueueURL)
		if err != nil {
			s.tb.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			s.dead = append(s.dead, m)
			if _, err := s.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: &s.cfg.DeadLetterQueueURL, ReceiptHandle: m.ReceiptHandle}); err != nil {
				s.tb.Fatalf("esmtest: deleting from %s: %v", s.cfg.DeadLetterQueueURL, err)
			}
		}
	}
	return append([]types.Message(nil), s.dead...)
}
