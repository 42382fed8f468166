package producer_test

import (
	"context"
	"errors"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/producer"
)

var (
	credsA = aws.Credentials{AccessKeyID: "AKIAAAAAAAAAAAAAAAAA", SecretAccessKey: "secret-a", SessionToken: "session-a"}
	credsB = aws.Credentials{AccessKeyID: "AKIABBBBBBBBBBBBBBBB", SecretAccessKey: "secret-b", SessionToken: "session-b"}
)

// rotating is a credentials provider whose credentials the test changes, as a Lambda role's
// change; it counts Retrieve calls (one per token the signer makes).
type rotating struct {
	mu        sync.Mutex
	creds     aws.Credentials
	retrieved atomic.Int64
}

func (r *rotating) Retrieve(context.Context) (aws.Credentials, error) {
	r.retrieved.Add(1)
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.creds, nil
}

func (r *rotating) set(c aws.Credentials) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.creds = c
}

// connCounter counts successful broker connections (each one authenticates once).
type connCounter struct{ n atomic.Int64 }

// await returns the count once it reaches n, or after two seconds. kgo calls OnBrokerConnect
// when it is done loading a connection, after SASL, so the broker can already hold the token
// of a connection the hook has not counted yet.
func (c *connCounter) await(n int64) int64 {
	for deadline := time.Now().Add(2 * time.Second); c.n.Load() < n && time.Now().Before(deadline); {
		time.Sleep(5 * time.Millisecond)
	}
	return c.n.Load()
}

func (c *connCounter) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.n.Add(1)
	}
}

// reauthLog counts the re-authentications kgo logs ("sasl expiry limit reached, reauthenticating").
type reauthLog struct{ n atomic.Int64 }

func (*reauthLog) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (l *reauthLog) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if strings.HasPrefix(msg, "sasl expiry limit reached, reauthenticating") {
		l.n.Add(1)
	}
}

func iamClient(t *testing.T, b *standin.Kafka, creds aws.CredentialsProvider, extra ...kgo.Opt) *kgo.Client {
	t.Helper()
	cl, err := producer.NewClient(
		producer.WithBootstrapServers(b.Addrs()...),
		producer.WithIAM(creds),
		producer.WithRegion("eu-west-1"),
		producer.WithTLSConfig(b.ClientTLS()),
		producer.WithClientOptions(extra...),
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func startIAM(t *testing.T, opts ...standin.KafkaOption) *standin.Kafka {
	t.Helper()
	return standintest.StartKafka(t, append([]standin.KafkaOption{
		standin.WithIAMRegion("eu-west-1"),
		standin.WithTLS(),
		standin.WithClusterOptions(kfake.NumBrokers(2), kfake.SeedTopics(3, "orders")),
	}, opts...)...)
}

func records(n int) []*kgo.Record {
	out := make([]*kgo.Record, n)
	for i := range out {
		out[i] = &kgo.Record{Topic: "orders", Key: []byte{byte('a' + i%26)}, Value: []byte("v")}
	}
	return out
}

func TestIAMRightCredentialsProduce(t *testing.T) {
	b := startIAM(t, standin.WithCredentials(credsA))
	creds := &rotating{creds: credsA}
	attempts := &connAttempts{changed: make(chan struct{}, 1)}
	cl := iamClient(t, b, creds, kgo.WithHooks(attempts), kgo.WithLogger(attempts))

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	rs := producer.Produce(ctx, cl, records(10)...)
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	// kgo may be opening a connection as Produce returns (it has read the credentials and not
	// sent its token, or sent it and not heard back): count when no attempt is under way.
	// (The minute only ends a test whose attempt never ends; kgo bounds each one.)
	wait, cancelWait := context.WithTimeout(context.Background(), time.Minute)
	defer cancelWait()
	retrieved, tokens, conns := attempts.settled(wait, t, func() (int64, []standin.IAMToken) {
		return creds.retrieved.Load(), b.Tokens()
	})
	if len(tokens) == 0 {
		t.Fatal("no token reached the broker: the client did not authenticate")
	}
	for _, tok := range tokens {
		if tok.Err != nil || tok.AccessKeyID != credsA.AccessKeyID {
			t.Errorf("token on node %d: key %q, err %v", tok.Node, tok.AccessKeyID, tok.Err)
		}
	}
	// One token per connection, each made fresh from the provider.
	if got := int64(len(tokens)); got != conns {
		t.Errorf("%d tokens for %d connections", got, conns)
	}
	if got := int64(len(tokens)); retrieved != got {
		t.Errorf("credentials retrieved %d times for %d tokens", retrieved, got)
	}
}

// connAttempts follows kgo's connection attempts: kgo logs "opening connection to broker"
// (debug level) as one begins, before it dials, and calls OnBrokerConnect when it ends,
// after SASL, whether it failed or not; both in the goroutine that makes the connection, so
// every attempt that began and has not ended lies between the two. SASL runs inside an
// attempt (re-authentication aside, which these tests leave to TestIAMTokenPerReauthentication).
type connAttempts struct {
	begun, ended, ok atomic.Int64
	changed          chan struct{} // a token that an attempt ended
}

func (*connAttempts) Level() kgo.LogLevel { return kgo.LogLevelDebug }
func (a *connAttempts) Log(_ kgo.LogLevel, msg string, _ ...any) {
	if msg == "opening connection to broker" {
		a.begun.Add(1)
	}
}

func (a *connAttempts) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		a.ok.Add(1)
	}
	a.ended.Add(1)
	select {
	case a.changed <- struct{}{}:
	default:
	}
}

// settled reads what read returns, with the successful connections, at a moment when no
// attempt was under way: every attempt begun before the read had ended, and none began
// during it. It waits for attempts under way to end (they end: kgo gives every dial and
// SASL exchange a timeout), not for a count to be reached.
func (a *connAttempts) settled(ctx context.Context, t *testing.T, read func() (int64, []standin.IAMToken)) (int64, []standin.IAMToken, int64) {
	t.Helper()
	for {
		begun := a.begun.Load()
		if a.ended.Load() == begun {
			retrieved, tokens := read()
			conns := a.ok.Load()
			if a.begun.Load() == begun {
				return retrieved, tokens, conns
			}
			continue
		}
		select {
		case <-a.changed:
		case <-ctx.Done():
			t.Fatalf("%d connection attempts begun, %d ended, when the test's context ended", a.begun.Load(), a.ended.Load())
		}
	}
}

func TestIAMWrongSecretFailsFast(t *testing.T) {
	b := startIAM(t, standin.WithCredentials(credsA))
	wrong := credsA
	wrong.SecretAccessKey = "not-the-secret"
	cl := iamClient(t, b, &rotating{creds: wrong})

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	rs := producer.Produce(ctx, cl, records(3)...)
	took := time.Since(start)
	err := rs.Err()
	if err == nil {
		t.Fatal("produced with a wrong secret")
	}
	for i, r := range rs {
		if !errors.Is(r.Err, kerr.SaslAuthenticationFailed) {
			t.Errorf("record %d: %v, want SASL_AUTHENTICATION_FAILED", i, r.Err)
		}
	}
	if !strings.Contains(err.Error(), "signature mismatch") {
		t.Errorf("error does not say why: %v", err)
	}
	if took > 5*time.Second {
		t.Errorf("took %v to fail: not fast", took)
	}
	t.Logf("failed in %v: %v", took, rs[0].Err)
}

func TestIAMRotatedCredentialsOnReconnection(t *testing.T) {
	b := startIAM(t, standin.WithCredentials(credsA))
	creds := &rotating{creds: credsA}
	cl := iamClient(t, b, creds)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := producer.Produce(ctx, cl, records(3)...).Err(); err != nil {
		t.Fatal(err)
	}
	// A connection kgo opens as Produce returns may have read credsA and not yet sent its
	// token: were the rotation to come between the two, the broker would see a revoked key
	// (CI saw it under load). Wait until every read has reached the broker as a token.
	for end := time.Now().Add(2 * time.Second); creds.retrieved.Load() != int64(len(b.Tokens())) && time.Now().Before(end); {
		time.Sleep(10 * time.Millisecond)
	}
	before := len(b.Tokens())

	// The role's credentials rotate: the old ones stop working.
	creds.set(credsB)
	b.Revoke(credsA.AccessKeyID)
	b.Allow(credsB)
	// The broker drops the next produce request's connection, so the client reconnects.
	var dropped atomic.Bool
	b.Cluster.ControlKey(int16(kmsg.Produce), func(kmsg.Request) (kmsg.Response, error, bool) {
		dropped.Store(true)
		return nil, errors.New("drop the connection"), true
	})
	if err := producer.Produce(ctx, cl, records(3)...).Err(); err != nil {
		t.Fatal(err)
	}
	if !dropped.Load() {
		t.Fatal("the connection was never dropped")
	}
	after := b.Tokens()[before:]
	if len(after) == 0 {
		t.Fatal("no new authentication after the reconnection")
	}
	for _, tok := range after {
		if tok.Err != nil || tok.AccessKeyID != credsB.AccessKeyID {
			t.Errorf("token after rotation: key %q, err %v; want the rotated key accepted", tok.AccessKeyID, tok.Err)
		}
	}
}

func TestIAMTokenPerReauthentication(t *testing.T) {
	// A 1.5 s session lifetime: franz-go re-authenticates once less than 1 s of it is left.
	b := startIAM(t, standin.WithCredentials(credsA), standin.WithSessionLifetime(1500*time.Millisecond))
	creds := &rotating{creds: credsA}
	conns := &connCounter{}
	reauths := &reauthLog{}
	cl := iamClient(t, b, creds, kgo.WithHooks(conns), kgo.WithLogger(reauths))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	if err := producer.Produce(ctx, cl, records(3)...).Err(); err != nil {
		t.Fatal(err)
	}
	first := len(b.Tokens())
	if n := conns.await(int64(first)); int64(first) != n {
		t.Fatalf("%d tokens for %d connections", first, n)
	}
	time.Sleep(800 * time.Millisecond)
	if err := producer.Produce(ctx, cl, records(3)...).Err(); err != nil {
		t.Fatal(err)
	}
	toks := b.Tokens()
	if reauths.n.Load() == 0 {
		t.Fatal("the client never re-authenticated")
	}
	if got, want := int64(len(toks)), conns.await(int64(len(toks))-reauths.n.Load())+reauths.n.Load(); got != want {
		t.Fatalf("%d tokens for %d connections and %d re-authentications", got, conns.n.Load(), reauths.n.Load())
	}
	for _, tok := range toks {
		if tok.Err != nil {
			t.Errorf("token rejected: %v", tok.Err)
		}
	}
	if got := creds.retrieved.Load(); got != int64(len(toks)) {
		t.Errorf("credentials retrieved %d times for %d tokens: a token was reused", got, len(toks))
	}
	t.Logf("%d connections, %d re-authentications, %d tokens", conns.n.Load(), reauths.n.Load(), len(toks))
}

// Credentials the provider cannot give fail Produce at once, naming the cause.
func TestIAMCredentialsErrorFailsFast(t *testing.T) {
	b := startIAM(t, standin.WithCredentials(credsA))
	cl := iamClient(t, b, aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) {
		return aws.Credentials{}, errors.New("no role session")
	}))
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	start := time.Now()
	err := producer.Produce(ctx, cl, records(1)...).Err()
	if err == nil || !strings.Contains(err.Error(), "no role session") || !errors.Is(err, producer.ErrNotAcknowledged) {
		t.Fatalf("%v, want the credentials error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Fatalf("took %v", took)
	}
	t.Log(err)
}
