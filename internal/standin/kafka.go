package standin

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/hmac"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/base64"
	"errors"
	"fmt"
	"math/big"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	v4 "github.com/aws/aws-sdk-go-v2/aws/signer/v4"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// IAMMechanism is the SASL mechanism of MSK IAM through aws-msk-iam-sasl-signer-go.
const IAMMechanism = "OAUTHBEARER"

// ErrIAMRejected is wrapped by every error of [VerifyIAMToken].
var ErrIAMRejected = errors.New("MSK IAM token rejected")

// IAMToken is one authentication a client attempted.
type IAMToken struct {
	Node        int32     // the broker that received it
	AccessKeyID string    // from the credential scope; empty when the token did not parse
	Time        time.Time // when it arrived
	Err         error     // nil when accepted
}

// Kafka is an in-process Kafka cluster (franz-go's kfake) that authenticates clients with
// Amazon MSK IAM access control. Make one with [StartKafka]; its methods are safe for
// concurrent use.
//
// MSK IAM is SASL/OAUTHBEARER whose bearer token is a SigV4-presigned URL, base64url-encoded
// without padding (what aws-msk-iam-sasl-signer-go builds):
//
//	https://kafka.<region>.amazonaws.com/?Action=kafka-cluster%3AConnect&User-Agent=...
//	    &X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential=<key>/<date>/<region>/kafka-cluster/aws4_request
//	    &X-Amz-Date=<time>&X-Amz-Expires=900&X-Amz-Security-Token=...&X-Amz-SignedHeaders=host
//	    &X-Amz-Signature=<hex>
//
// kfake speaks PLAIN and SCRAM only, so [StartKafka] answers SASLHandshake and SASLAuthenticate
// through kfake's control hooks, and [VerifyIAMToken] checks each token the way MSK does, short of
// evaluating IAM policies: the encoding, the host, the action, the algorithm, the credential
// scope (date, region, service kafka-cluster), the 900-second expiry against the clock, and the
// signature, recomputed with aws-sdk-go-v2's SigV4 signer from the secret of the access key the
// broker was told to [Kafka.Allow]. A rejected token is answered with
// SASL_AUTHENTICATION_FAILED and the reason, as MSK answers.
//
// The broker can ask for re-authentication (KIP-368) by returning a session lifetime
// ([WithSessionLifetime]); clients such as franz-go then authenticate again on the same
// connection before it runs out. Every token presented is recorded ([Kafka.Tokens]), so tests
// count tokens per connection and per re-authentication.
//
// Limitation: kfake's control functions cannot tell which connection a request arrived on, so
// the broker validates and records every authentication but cannot refuse later requests on a
// connection that never authenticated. Tests assert on [Kafka.Tokens] for that.
type Kafka struct {
	// Cluster is the kfake cluster, for its other control hooks and administration.
	Cluster *kfake.Cluster

	clientTLS *tls.Config
	region    string
	lifetime  time.Duration
	now       func() time.Time

	mu      sync.Mutex
	secrets map[string]string // access key id -> secret access key
	tokens  []IAMToken
}

type kafkaConfig struct {
	region   string
	lifetime time.Duration
	now      func() time.Time
	kfake    []kfake.Opt
	creds    []aws.Credentials
	tls      bool
}

// KafkaOption configures [StartKafka].
type KafkaOption func(*kafkaConfig)

// WithIAMRegion sets the region tokens must be signed for (host kafka.<region>.amazonaws.com and
// the credential scope). Default: us-east-1.
func WithIAMRegion(region string) KafkaOption { return func(c *kafkaConfig) { c.region = region } }

// WithSessionLifetime makes every successful authentication answer with this session lifetime
// (SASLAuthenticate's SessionLifetimeMillis), which asks the client to re-authenticate before
// it runs out. Default: no lifetime, no re-authentication.
func WithSessionLifetime(d time.Duration) KafkaOption { return func(c *kafkaConfig) { c.lifetime = d } }

// WithClock sets the clock tokens' expiry is checked against. Default: time.Now.
func WithClock(now func() time.Time) KafkaOption { return func(c *kafkaConfig) { c.now = now } }

// WithCredentials allows these credentials from the start (see [Kafka.Allow]). Default: none.
func WithCredentials(creds ...aws.Credentials) KafkaOption {
	return func(c *kafkaConfig) { c.creds = append(c.creds, creds...) }
}

// WithTLS makes the brokers speak TLS, as MSK's IAM listeners do, with a certificate made for
// 127.0.0.1 and localhost by a throwaway CA that [Kafka.ClientTLS] trusts. Default: plaintext.
func WithTLS() KafkaOption { return func(c *kafkaConfig) { c.tls = true } }

// WithClusterOptions passes options to kfake.NewCluster. Default: one broker, no topics.
func WithClusterOptions(opts ...kfake.Opt) KafkaOption {
	return func(c *kafkaConfig) { c.kfake = append(c.kfake, opts...) }
}

// StartKafka starts a cluster that authenticates with MSK IAM; the caller must call
// [Kafka.Stop]. ctx is checked before the start (kfake starts in process, at once).
func StartKafka(ctx context.Context, opts ...KafkaOption) (*Kafka, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	cfg := kafkaConfig{region: "us-east-1", now: time.Now}
	for _, o := range opts {
		o(&cfg)
	}
	var clientTLS *tls.Config
	if cfg.tls {
		server, client, err := selfSigned()
		if err != nil {
			return nil, err
		}
		clientTLS = client
		cfg.kfake = append(cfg.kfake, kfake.TLS(server))
	}
	cluster, err := kfake.NewCluster(cfg.kfake...)
	if err != nil {
		return nil, fmt.Errorf("start kfake: %w", err)
	}
	b := &Kafka{
		clientTLS: clientTLS,
		Cluster:   cluster,
		region:    cfg.region,
		lifetime:  cfg.lifetime,
		now:       cfg.now,
		secrets:   make(map[string]string),
	}
	for _, c := range cfg.creds {
		b.Allow(c)
	}
	cluster.ControlKey(int16(kmsg.SASLHandshake), b.handshake)
	cluster.ControlKey(int16(kmsg.SASLAuthenticate), b.authenticate)
	return b, nil
}

// Stop closes the cluster. It may be called more than once.
func (b *Kafka) Stop() { b.Cluster.Close() }

// Addrs returns the brokers' host:port addresses.
func (b *Kafka) Addrs() []string { return b.Cluster.ListenAddrs() }

// ClientTLS returns a TLS configuration that trusts the brokers' certificate (see [WithTLS]),
// or nil when they speak plaintext.
func (b *Kafka) ClientTLS() *tls.Config {
	if b.clientTLS == nil {
		return nil
	}
	return b.clientTLS.Clone()
}

// selfSigned makes a CA-less self-signed certificate for 127.0.0.1 and localhost.
func selfSigned() (server, client *tls.Config, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, fmt.Errorf("tls key: %w", err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "klt local MSK IAM broker"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
		IPAddresses:           []net.IP{net.IPv4(127, 0, 0, 1), net.IPv6loopback},
		DNSNames:              []string{"localhost"},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, nil, fmt.Errorf("tls certificate: %w", err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, fmt.Errorf("tls certificate: %w", err)
	}
	pool := x509.NewCertPool()
	pool.AddCert(cert)
	server = &tls.Config{Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key, Leaf: cert}}, MinVersion: tls.VersionTLS12}
	client = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	return server, client, nil
}

// Allow accepts tokens signed with creds.SecretAccessKey under creds.AccessKeyID, as IAM
// would for an identity whose policy allows kafka-cluster:Connect.
func (b *Kafka) Allow(creds aws.Credentials) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.secrets[creds.AccessKeyID] = creds.SecretAccessKey
}

// Revoke stops accepting tokens of the access key id, as when a role's session expires.
func (b *Kafka) Revoke(accessKeyID string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.secrets, accessKeyID)
}

// Tokens returns every authentication attempted so far, in the order they arrived.
func (b *Kafka) Tokens() []IAMToken {
	b.mu.Lock()
	defer b.mu.Unlock()
	return append([]IAMToken(nil), b.tokens...)
}

func (b *Kafka) handshake(req kmsg.Request) (kmsg.Response, error, bool) {
	b.Cluster.KeepControl()
	r := req.(*kmsg.SASLHandshakeRequest)
	resp := r.ResponseKind().(*kmsg.SASLHandshakeResponse)
	resp.SupportedMechanisms = []string{IAMMechanism}
	if r.Mechanism != IAMMechanism {
		resp.ErrorCode = kerr.UnsupportedSaslMechanism.Code
	}
	return resp, nil, true
}

func (b *Kafka) authenticate(req kmsg.Request) (kmsg.Response, error, bool) {
	b.Cluster.KeepControl()
	r := req.(*kmsg.SASLAuthenticateRequest)
	resp := r.ResponseKind().(*kmsg.SASLAuthenticateResponse)

	tok := IAMToken{Node: b.Cluster.CurrentNode(), Time: b.now()}
	bearer, err := bearerToken(r.SASLAuthBytes)
	if err == nil {
		b.mu.Lock()
		tok.AccessKeyID, err = verify(bearer, b.region, tok.Time, func(id string) (string, bool) {
			s, ok := b.secrets[id]
			return s, ok
		})
		b.mu.Unlock()
	}
	tok.Err = err

	b.mu.Lock()
	b.tokens = append(b.tokens, tok)
	b.mu.Unlock()

	if err != nil {
		resp.ErrorCode = kerr.SaslAuthenticationFailed.Code
		msg := err.Error()
		resp.ErrorMessage = &msg
		return resp, nil, true
	}
	if b.lifetime > 0 {
		resp.SessionLifetimeMillis = b.lifetime.Milliseconds()
	}
	return resp, nil, true
}

// bearerToken reads the token out of an RFC 7628 client first message:
// "n,[a=authzid],\x01auth=Bearer <token>\x01[key=value\x01]...\x01".
func bearerToken(msg []byte) (string, error) {
	s := string(msg)
	gs2, rest, ok := strings.Cut(s, "\x01")
	if !ok || !strings.HasPrefix(gs2, "n,") || !strings.HasSuffix(gs2, ",") {
		return "", fmt.Errorf("%w: not an OAUTHBEARER client message", ErrIAMRejected)
	}
	for kv := range strings.SplitSeq(rest, "\x01") {
		if tok, ok := strings.CutPrefix(kv, "auth=Bearer "); ok {
			return tok, nil
		}
	}
	return "", fmt.Errorf("%w: no auth=Bearer in the OAUTHBEARER message", ErrIAMRejected)
}

// VerifyIAMToken checks an MSK IAM token as MSK does, short of IAM policies: it must be a base64url
// (unpadded) https URL to kafka.<region>.amazonaws.com with Action=kafka-cluster:Connect,
// presigned with AWS4-HMAC-SHA256 for service kafka-cluster in region, for 900 seconds, not
// expired at now (nor dated more than 5 minutes after it), with the signature that secret(key
// id) gives. It returns the access key id, and an error wrapping [ErrIAMRejected] that says what
// is wrong.
func VerifyIAMToken(token, region string, now time.Time, secret func(accessKeyID string) (string, bool)) (string, error) {
	return verify(token, region, now, secret)
}

func verify(token, region string, now time.Time, secret func(string) (string, bool)) (string, error) {
	reject := func(format string, args ...any) (string, error) {
		return "", fmt.Errorf("%w: "+format, append([]any{ErrIAMRejected}, args...)...)
	}
	raw, err := base64.RawURLEncoding.Strict().DecodeString(token)
	if err != nil {
		return reject("not base64url without padding: %v", err)
	}
	u, err := url.Parse(string(raw))
	if err != nil {
		return reject("not a URL: %v", err)
	}
	if u.Scheme != "https" {
		return reject("scheme %q, want https", u.Scheme)
	}
	if want := "kafka." + region + ".amazonaws.com"; u.Host != want {
		return reject("host %q, want %q", u.Host, want)
	}
	if u.Path != "/" && u.Path != "" {
		return reject("path %q, want /", u.Path)
	}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return reject("query: %v", err)
	}
	one := func(k string) (string, error) {
		v := q[k]
		if len(v) != 1 {
			return "", fmt.Errorf("%w: %s given %d times, want once", ErrIAMRejected, k, len(v))
		}
		return v[0], nil
	}
	fields := map[string]string{}
	for _, k := range []string{"Action", "X-Amz-Algorithm", "X-Amz-Credential", "X-Amz-Date", "X-Amz-Expires", "X-Amz-SignedHeaders", "X-Amz-Signature"} {
		v, err := one(k)
		if err != nil {
			return "", err
		}
		fields[k] = v
	}
	if v := fields["Action"]; v != "kafka-cluster:Connect" {
		return reject("Action %q, want kafka-cluster:Connect", v)
	}
	if v := fields["X-Amz-Algorithm"]; v != "AWS4-HMAC-SHA256" {
		return reject("X-Amz-Algorithm %q, want AWS4-HMAC-SHA256", v)
	}
	if v := fields["X-Amz-SignedHeaders"]; v != "host" {
		return reject("X-Amz-SignedHeaders %q, want host", v)
	}
	if v := fields["X-Amz-Expires"]; v != "900" {
		return reject("X-Amz-Expires %q, want 900", v)
	}
	date, err := time.Parse("20060102T150405Z", fields["X-Amz-Date"])
	if err != nil {
		return reject("X-Amz-Date %q: %v", fields["X-Amz-Date"], err)
	}
	if expiry := date.Add(900 * time.Second); !now.Before(expiry) {
		return reject("expired at %s", expiry.Format(time.RFC3339))
	}
	if date.After(now.Add(5 * time.Minute)) {
		return reject("dated %s, in the future", date.Format(time.RFC3339))
	}
	scope := strings.Split(fields["X-Amz-Credential"], "/")
	if len(scope) != 5 || scope[0] == "" {
		return reject("X-Amz-Credential %q is not key/date/region/service/aws4_request", fields["X-Amz-Credential"])
	}
	keyID := scope[0]
	if scope[1] != date.Format("20060102") || scope[2] != region || scope[3] != "kafka-cluster" || scope[4] != "aws4_request" {
		return reject("credential scope %q, want %s/%s/kafka-cluster/aws4_request", strings.Join(scope[1:], "/"), date.Format("20060102"), region)
	}
	sec, ok := secret(keyID)
	if !ok {
		return reject("unknown access key id %q", keyID)
	}

	// Presign the same request again with the known secret and compare signatures.
	base := url.Values{"Action": {"kafka-cluster:Connect"}, "X-Amz-Expires": {"900"}}
	req, err := http.NewRequest(http.MethodGet, "https://"+u.Host+"/?"+base.Encode(), nil)
	if err != nil {
		return reject("rebuild request: %v", err)
	}
	creds := aws.Credentials{AccessKeyID: keyID, SecretAccessKey: sec}
	if st := q["X-Amz-Security-Token"]; len(st) == 1 {
		creds.SessionToken = st[0]
	} else if len(st) > 1 {
		return reject("X-Amz-Security-Token given %d times", len(st))
	}
	const emptySHA256 = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	signed, _, err := v4.NewSigner().PresignHTTP(context.Background(), creds, req, emptySHA256, "kafka-cluster", region, date)
	if err != nil {
		return reject("presign: %v", err)
	}
	su, err := url.Parse(signed)
	if err != nil {
		return reject("presigned URL: %v", err)
	}
	want := su.Query().Get("X-Amz-Signature")
	if !hmac.Equal([]byte(want), []byte(fields["X-Amz-Signature"])) {
		return reject("signature mismatch for access key id %q", keyID)
	}
	return keyID, nil
}
