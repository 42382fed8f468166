package producer_test

import (
	"context"
	"crypto/pbkdf2"
	"crypto/rand"
	"crypto/sha512"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	smtypes "github.com/aws/aws-sdk-go-v2/service/secretsmanager/types"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/parameters/secrets"
	"github.com/kafkalambda/toolkit/producer"
)

// scramCluster is a kfake cluster with SASL on, the SCRAM-SHA-512 user "relay" (the function's)
// with password pass and "admin" (the test's, to rotate relay's password), and the topic t.
// Connections re-authenticate every reauth (KIP-368) when it is positive.
func scramCluster(t *testing.T, brokers int, pass string, reauth time.Duration) *kfake.Cluster {
	t.Helper()
	opts := []kfake.Opt{
		kfake.NumBrokers(brokers), kfake.SeedTopics(6, "t"), kfake.EnableSASL(),
		kfake.Superuser("SCRAM-SHA-512", "admin", "admin-pw"), kfake.Superuser("SCRAM-SHA-512", "relay", pass),
	}
	if reauth > 0 {
		opts = append(opts, kfake.BrokerConfigs(map[string]string{"connections.max.reauth.ms": strconv.FormatInt(reauth.Milliseconds(), 10)}))
	}
	c, err := kfake.NewCluster(opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// setPassword changes relay's SCRAM-SHA-512 password on the cluster, as an operator rotating
// the secret does (AlterUserScramCredentials, the salted password made as Kafka makes it).
func setPassword(t *testing.T, c *kfake.Cluster, pass string) {
	t.Helper()
	admin, err := kgo.NewClient(kgo.SeedBrokers(c.ListenAddrs()...), kgo.SASL(scram.Auth{User: "admin", Pass: "admin-pw"}.AsSha512Mechanism()))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	salt := make([]byte, 32)
	_, _ = rand.Read(salt)
	const iterations = 4096
	salted, err := pbkdf2.Key(sha512.New, pass, salt, iterations, sha512.Size)
	if err != nil {
		t.Fatal(err)
	}
	req := kmsg.NewPtrAlterUserSCRAMCredentialsRequest()
	up := kmsg.NewAlterUserSCRAMCredentialsRequestUpsertion()
	up.Name, up.Mechanism, up.Iterations, up.Salt, up.SaltedPassword = "relay", 2, iterations, salt, salted // 2: SCRAM-SHA-512
	req.Upsertions = append(req.Upsertions, up)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	resp, err := req.RequestWith(ctx, admin)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range resp.Results {
		if err := kerr.ErrorForCode(r.ErrorCode); err != nil {
			t.Fatalf("alter SCRAM credentials of %s: %v", r.User, err)
		}
	}
}

// connCount counts connections that authenticated and those that failed.
type connCount struct{ ok, failed atomic.Int64 }

func (c *connCount) OnBrokerConnect(_ kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		c.ok.Add(1)
	} else {
		c.failed.Add(1)
	}
}

func secretClient(t *testing.T, c *kfake.Cluster, sm secrets.API, arn string, hooks ...kgo.Hook) *kgo.Client {
	t.Helper()
	cl, err := producer.NewClient(
		producer.WithBootstrapServers(c.ListenAddrs()...),
		producer.WithSCRAMSecret(sm, arn),
		producer.WithClientOptions(kgo.DialTLSConfig(nil), kgo.WithHooks(hooks...)), // kfake speaks plaintext
	)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cl.Close)
	return cl
}

func produceAll(t *testing.T, cl *kgo.Client, n int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	recs := make([]*kgo.Record, n)
	for i := range recs {
		recs[i] = &kgo.Record{Topic: "t", Partition: int32(i % 6), Value: []byte("v")}
	}
	if err := producer.Produce(ctx, cl, recs...).Err(); err != nil {
		t.Fatal(err)
	}
}

// TestSCRAMSecretReadOnce: the secret is read once, when the client is made, however many
// connections authenticate and however many invocations produce.
func TestSCRAMSecretReadOnce(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "kafka/relay", scramJSON("relay", "pw-1"))
	c := scramCluster(t, 3, "pw-1", 0)
	sm := &counting{producerSecrets: m.client()}
	conns := &connCount{}
	cl := secretClient(t, c, sm, arn, conns)
	if got := sm.n.Load(); got != 1 {
		t.Fatalf("%d GetSecretValue calls by NewClient, want 1", got)
	}
	for range 5 { // five invocations
		produceAll(t, cl, 12)
	}
	// Records to every partition of three brokers: a connection per broker and more.
	if conns.ok.Load() < 3 || conns.failed.Load() != 0 {
		t.Fatalf("%d connections, %d failed: want at least 3, none failed", conns.ok.Load(), conns.failed.Load())
	}
	if got := sm.n.Load(); got != 1 {
		t.Fatalf("%d GetSecretValue calls for %d connections, want 1", got, conns.ok.Load())
	}
}

// TestSCRAMSecretRotation: the secret and the broker's password change while the client lives;
// the next authentication (a KIP-368 re-authentication) is refused, the producer reads the
// secret again, and the same Produce succeeds with the new password.
func TestSCRAMSecretRotation(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "kafka/relay", scramJSON("relay", "pw-1"))
	const reauth = 2 * time.Second
	c := scramCluster(t, 1, "pw-1", reauth)
	sm := &counting{producerSecrets: m.client()}
	conns := &connCount{}
	cl := secretClient(t, c, sm, arn, conns)
	produceAll(t, cl, 6)

	m.rotate(t, arn, scramJSON("relay", "pw-2"))
	setPassword(t, c, "pw-2")
	time.Sleep(reauth) // the session ends: the next request re-authenticates
	start := time.Now()
	produceAll(t, cl, 6)
	if got := sm.n.Load(); got != 2 {
		t.Fatalf("%d GetSecretValue calls, want 2 (the start, and once after the refusal)", got)
	}
	t.Logf("produced %v after the rotation; %d connections, %d failed", time.Since(start).Round(time.Millisecond), conns.ok.Load(), conns.failed.Load())
	produceAll(t, cl, 6)
	if got := sm.n.Load(); got != 2 {
		t.Fatalf("%d GetSecretValue calls after another produce, want still 2", got)
	}
}

// TestSCRAMSecretWrongPassword: credentials refused without ever having been accepted are not
// read again at once: the secret is wrong, not rotated, and Produce fails rather than reading
// it on every connection attempt.
func TestSCRAMSecretWrongPassword(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "kafka/relay", scramJSON("relay", "not-the-password"))
	c := scramCluster(t, 1, "pw-1", 0)
	sm := &counting{producerSecrets: m.client()}
	cl := secretClient(t, c, sm, arn)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	err := producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err()
	if !errors.Is(err, producer.ErrNotAcknowledged) {
		t.Fatalf("produce with a wrong password: %v, want ErrNotAcknowledged", err)
	}
	if got := sm.n.Load(); got != 1 {
		t.Fatalf("%d GetSecretValue calls, want 1", got)
	}
}

// TestSCRAMSecretStartFails: a secret that is missing, unreadable or not SCRAM credentials
// fails NewClient with a *toolkit.OptionError naming the option and the secret, never quoting its
// value, and no client is made.
func TestSCRAMSecretStartFails(t *testing.T) {
	m := startMoto(t)
	for _, tc := range []struct {
		name, value string
		binary      bool
		want        string
		is          any
	}{
		{name: "missing", want: "ResourceNotFoundException", is: new(*smtypes.ResourceNotFoundException)},
		{name: "no password", value: `{"username":"relay","pass":"s3cr3t-value"}`, want: "no password"},
		{name: "empty user", value: `{"username":"","password":"s3cr3t-value"}`, want: "no username"},
		{name: "not JSON", value: `username=relay password=s3cr3t-value`, want: "not a JSON object"},
		{name: "password a number", value: `{"username":"relay","password":12345}`, want: "password is not a string"},
		{name: "binary", binary: true, want: "no SecretString"},
		{name: "too large", value: `{"username":"relay","password":"s3cr3t-value","x":"` + strings.Repeat("a", 64<<10) + `"}`, want: "at most 65536"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			id := "kafka/" + strings.ReplaceAll(tc.name, " ", "-")
			switch {
			case tc.binary:
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				defer cancel()
				out, err := m.client().CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(id), SecretBinary: []byte(scramJSON("relay", "s3cr3t-value"))})
				if err != nil {
					t.Fatal(err)
				}
				id = aws.ToString(out.ARN)
			case tc.value != "":
				id = m.createSecret(t, id, tc.value)
			}
			sm := &counting{producerSecrets: m.client()}
			cl, err := producer.NewClient(producer.WithBootstrapServers("127.0.0.1:1"), producer.WithSCRAMSecret(sm, id))
			if cl != nil {
				cl.Close()
				t.Fatal("a client for a secret it cannot use")
			}
			var ce *toolkit.OptionError
			if !errors.As(err, &ce) || ce.Option != "WithSCRAMSecret" {
				t.Fatalf("%v, want a *toolkit.OptionError for WithSCRAMSecret", err)
			}
			if !strings.Contains(err.Error(), tc.want) || !strings.Contains(err.Error(), id) {
				t.Fatalf("%v, want it to say %q and name %s", err, tc.want, id)
			}
			if strings.Contains(err.Error(), "s3cr3t") {
				t.Fatalf("the error quotes the secret: %v", err)
			}
			if tc.is != nil && !errors.As(err, tc.is) {
				t.Fatalf("%v does not wrap %T", err, tc.is)
			}
			if sm.n.Load() != 1 {
				t.Fatalf("%d GetSecretValue calls, want 1", sm.n.Load())
			}
		})
	}
}

// TestSCRAMSecretBlackHole: a Secrets Manager endpoint that accepts connections and never
// answers fails NewClient within SecretReadTimeout, not later.
func TestSCRAMSecretBlackHole(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ln.Close() })
	go func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { conn.Close() }) // held open, never answered
		}
	}()
	sm := startMotoless(ln.Addr().String())
	start := time.Now()
	_, err = producer.NewClient(producer.WithBootstrapServers("127.0.0.1:1"), producer.WithSCRAMSecret(sm, "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/relay-AbCdEf"))
	took := time.Since(start)
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v, want the read to end at its deadline", err)
	}
	if took > producer.SecretReadTimeout+2*time.Second {
		t.Fatalf("NewClient took %v, want at most SecretReadTimeout (%v)", took, producer.SecretReadTimeout)
	}
}

// startMotoless is a Secrets Manager client of an endpoint that is not moto_server, for the
// fault tests.
func startMotoless(addr string) *secretsmanager.Client {
	return secretsClient("http://" + addr)
}

// TestSCRAMSecretFromEnvironment: KAFKA_AUTH=scram with KAFKA_SCRAM_SECRET_ARN, the
// template's ProducerFunction environment, reads the secret with the default AWS
// configuration (AWS_ENDPOINT_URL_SECRETS_MANAGER points it at moto_server).
func TestSCRAMSecretFromEnvironment(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "kafka/relay", scramJSON("relay", "pw-1"))
	c := scramCluster(t, 1, "pw-1", 0)
	clearEnv(t)
	for k, v := range map[string]string{
		"KAFKA_BOOTSTRAP_SERVERS":          strings.Join(c.ListenAddrs(), ","),
		"KAFKA_AUTH":                       "scram",
		"KAFKA_SCRAM_SECRET_ARN":           arn,
		"AWS_ENDPOINT_URL_SECRETS_MANAGER": m.Endpoint(),
		"AWS_REGION":                       "us-east-1",
		"AWS_ACCESS_KEY_ID":                "test",
		"AWS_SECRET_ACCESS_KEY":            "test",
		"AWS_CONFIG_FILE":                  "/nonexistent",
		"AWS_SHARED_CREDENTIALS_FILE":      "/nonexistent",
		"AWS_EC2_METADATA_DISABLED":        "true",
	} {
		t.Setenv(k, v)
	}
	cl, err := producer.NewClient(producer.WithClientOptions(kgo.DialTLSConfig(nil)))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	produceAll(t, cl, 1)

	t.Setenv("KAFKA_SCRAM_SECRET_ARN", "")
	_, err = producer.NewClient()
	var ce *toolkit.OptionError
	if !errors.As(err, &ce) || ce.Option != producer.EnvSCRAMSecretARN {
		t.Fatalf("KAFKA_AUTH=scram without a secret: %v, want a *toolkit.OptionError for %s", err, producer.EnvSCRAMSecretARN)
	}
	t.Setenv("KAFKA_SCRAM_SECRET_ARN", arn+"-gone")
	_, err = producer.NewClient()
	if !errors.As(err, &ce) || ce.Option != producer.EnvSCRAMSecretARN || !errors.As(err, new(*smtypes.ResourceNotFoundException)) {
		t.Fatalf("KAFKA_AUTH=scram with a missing secret: %v, want a *toolkit.OptionError for %s wrapping ResourceNotFoundException", err, producer.EnvSCRAMSecretARN)
	}
}

// TestSCRAMSecretMalformedAnswer: a Secrets Manager endpoint (a real HTTP server) that
// answers GetSecretValue with a 200 whose fields have the wrong JSON type fails NewClient with
// an error that says what kind of failure it was and never quotes the answer's text, whose
// fields are the secret itself.
func TestSCRAMSecretMalformedAnswer(t *testing.T) {
	// A secret whose text is a number: the token the SDK's decoder quotes is the secret.
	const secret = "4111111111111111"
	for _, tc := range []struct{ name, body string }{
		{"SecretString a number", `{"ARN":"arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/relay-AbCdEf","SecretString":` + secret + `}`},
		{"SecretString an object", `{"SecretString":{"username":"relay","password":"` + secret + `"}}`},
		{"SecretString a list", `{"SecretString":[` + secret + `]}`},
		{"SecretBinary a number", `{"SecretBinary":` + secret + `}`},
		{"not JSON", `{"SecretString":"` + secret},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				w.Header().Set("Content-Type", "application/x-amz-json-1.1")
				io.WriteString(w, tc.body)
			}))
			t.Cleanup(srv.Close)
			sm := startMotoless(srv.Listener.Addr().String())
			cl, err := producer.NewClient(producer.WithBootstrapServers("127.0.0.1:1"),
				producer.WithSCRAMSecret(sm, "arn:aws:secretsmanager:us-east-1:123456789012:secret:kafka/relay-AbCdEf"))
			if cl != nil {
				cl.Close()
				t.Fatal("a client from a malformed answer")
			}
			var ce *toolkit.OptionError
			if !errors.As(err, &ce) || ce.Option != "WithSCRAMSecret" {
				t.Fatalf("%v, want a *toolkit.OptionError for WithSCRAMSecret", err)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(fmt.Sprintf("%+v", err), secret) {
				t.Fatalf("the error quotes the secret: %v", err)
			}
			if !strings.Contains(err.Error(), "malformed answer") {
				t.Fatalf("%v, want it to say the answer was malformed", err)
			}
		})
	}
}
