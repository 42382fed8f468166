package producer

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"os"
	"strings"

	"github.com/aws/aws-msk-iam-sasl-signer-go/signer"
	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/oauth"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// Environment variables read by [Opts] when no option sets the same thing.
const (
	EnvBootstrapServers = "KAFKA_BOOTSTRAP_SERVERS" // brokers, host:port[,host:port...]
	EnvAuth             = "KAFKA_AUTH"              // iam | scram | tls | plaintext
	EnvSCRAMSecretARN   = "KAFKA_SCRAM_SECRET_ARN"  // Secrets Manager secret of KAFKA_AUTH=scram (see WithSCRAMSecret)
	EnvRegion           = "AWS_REGION"              // region of MSK IAM tokens, after WithRegion and the broker names
)

// invalid is the error of [Opts] and [NewClient] when the configuration is incomplete or
// contradicts itself: a *toolkit.OptionError whose Option names the option or environment
// variable at fault ("KAFKA_AUTH", "WithBootstrapServers") and whose Reason says why.
func invalid(option, reason string) error {
	return &toolkit.OptionError{Package: "producer", Option: option, Reason: reason}
}

// invalidCause is invalid with the error that makes the option unusable (a secret that
// cannot be read, a broker address that does not parse), kept in the chain.
func invalidCause(option string, err error) error {
	return &toolkit.OptionError{Package: "producer", Option: option, Err: err}
}

type auth int

const (
	authUnset auth = iota
	authIAM
	authSCRAM
	authTLS
	authPlaintext
)

func (a auth) String() string {
	switch a {
	case authIAM:
		return "iam"
	case authSCRAM:
		return "scram"
	case authTLS:
		return "tls"
	case authPlaintext:
		return "plaintext"
	}
	return "unset"
}

type config struct {
	brokers    []string
	brokersSet bool
	brokersErr error

	auth     auth
	authFrom string // the option that chose auth, for conflict messages
	creds    aws.CredentialsProvider
	region   string
	user     string
	password string

	secrets    secrets.API // WithSCRAMSecret's, or nil
	secretID   string
	secretFrom string // the option or variable that named the secret, for errors

	tls    *tls.Config
	tlsSet bool

	client []kgo.Opt
	errs   []error
}

func (c *config) choose(a auth, from string) {
	if c.auth != authUnset && c.auth != a {
		c.errs = append(c.errs, invalid(from, fmt.Sprintf("conflicts with %s: choose one authentication", c.authFrom)))
		return
	}
	c.auth, c.authFrom = a, from
}

// Option configures the connection to a cluster.
type Option func(*config)

// WithBootstrapServers sets the bootstrap servers (the brokers the client first connects to),
// each host:port. Default: $KAFKA_BOOTSTRAP_SERVERS (comma-separated, as Lambda's event source
// mapping writes BootstrapServers); with neither, [Opts] fails.
func WithBootstrapServers(addrs ...string) Option {
	return func(c *config) {
		c.brokersSet = true
		c.brokers, c.brokersErr = checkBrokers(addrs, "WithBootstrapServers")
	}
}

// WithIAM authenticates with Amazon MSK IAM access control: SASL/OAUTHBEARER over TLS, the
// token made by aws-msk-iam-sasl-signer-go's GenerateAuthTokenFromCredentialsProvider from
// creds on every new connection and on every re-authentication the broker asks for, so that
// rotating credentials (a Lambda role's, aws.Config.Credentials) are always current and a
// token (valid 15 minutes) never goes stale. Default: the authentication $KAFKA_AUTH names.
func WithIAM(creds aws.CredentialsProvider) Option {
	return func(c *config) {
		if creds == nil {
			c.errs = append(c.errs, invalid("WithIAM", "no credentials provider"))
			return
		}
		c.choose(authIAM, "WithIAM")
		c.creds = creds
	}
}

// WithRegion sets the region MSK IAM tokens are signed for. Default: the region in the broker
// host names (b-1.name.id.c2.kafka.<region>.amazonaws.com), else $AWS_REGION; with neither,
// [Opts] fails when IAM is chosen.
func WithRegion(region string) Option {
	return func(c *config) {
		if err := checkRegion(region); err != nil {
			c.errs = append(c.errs, invalidCause("WithRegion", err))
			return
		}
		c.region = region
	}
}

// WithSCRAM authenticates with SASL/SCRAM-SHA-512 over TLS (MSK's SCRAM port, self-managed
// clusters). Default: the authentication $KAFKA_AUTH names.
func WithSCRAM(user, password string) Option {
	return func(c *config) {
		if user == "" || password == "" {
			c.errs = append(c.errs, invalid("WithSCRAM", "empty user or password"))
			return
		}
		if c.secrets != nil {
			c.errs = append(c.errs, invalid("WithSCRAM", "conflicts with WithSCRAMSecret: choose one"))
			return
		}
		c.choose(authSCRAM, "WithSCRAM")
		c.user, c.password = user, password
	}
}

// WithPlaintext connects without TLS and without SASL: local clusters and kfake. Default: the
// authentication $KAFKA_AUTH names.
func WithPlaintext() Option {
	return func(c *config) { c.choose(authPlaintext, "WithPlaintext") }
}

// WithTLSConfig sets the TLS configuration (a private CA, client certificates for mutual TLS).
// It is cloned; kgo fills ServerName per broker. Without WithIAM or WithSCRAM (and with
// KAFKA_AUTH unset) it also chooses TLS without SASL (mutual TLS, MSK's TLS port). Default:
// TLS 1.2 or later with the system roots, unless WithPlaintext or KAFKA_AUTH=plaintext, which
// conflict with this option.
func WithTLSConfig(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			c.errs = append(c.errs, invalid("WithTLSConfig", "nil *tls.Config"))
			return
		}
		c.tls, c.tlsSet = cfg.Clone(), true
	}
}

// WithClientOptions adds any other kgo options, applied after this package's (later wins), so
// every kgo setting stays in reach: kgo.WithHooks for tracing, kgo.DefaultProduceTopic,
// kgo.ProducerLinger, and the consumer options for a client that also consumes. Default: none.
func WithClientOptions(opts ...kgo.Opt) Option {
	return func(c *config) { c.client = append(c.client, opts...) }
}

// Defaults are the producer settings [Opts] puts after the connection ones, before the
// WithClientOptions ones (see the package documentation for why each).
func defaults() []kgo.Opt {
	return []kgo.Opt{
		kgo.RequiredAcks(kgo.AllISRAcks()),
		// Idempotence is kgo's default as long as acks are all; stated here through acks.
		kgo.RecordPartitioner(kgo.UniformBytesPartitioner(64<<10, true, true, nil)),
		kgo.ProducerBatchCompression(kgo.ZstdCompression(), kgo.NoCompression()),
		// No kgo.RecordDeliveryTimeout: kgo counts it from each record's Timestamp, so a
		// record keeping an old timestamp (a copy, a replay) would fail at once. Produce
		// bounds its own wait instead (NoDeadlineWait).
	}
}

// Opts returns the kgo options for the cluster (seeds, TLS, SASL) followed by the producer
// defaults (idempotent, acks from all in-sync replicas, murmur2 key partitioning as the Java
// client, zstd compression), then the WithClientOptions ones: to
// compose with kgo by hand. It reads the environment ($KAFKA_BOOTSTRAP_SERVERS, $KAFKA_AUTH,
// $KAFKA_SCRAM_SECRET_ARN, $AWS_REGION) for what no option sets, and fails with a
// *toolkit.OptionError (matching toolkit.ErrInvalidOption) naming the setting that is missing
// or wrong. With SCRAM from a secret
// ([WithSCRAMSecret], KAFKA_AUTH=scram), it reads the secret, and a secret it cannot read or
// use is such an error too.
func Opts(opts ...Option) ([]kgo.Opt, error) {
	return buildOpts(os.Getenv, defaultSecretsClient, opts)
}

// defaultSecretsClient is the Secrets Manager client of KAFKA_AUTH=scram: the default AWS
// configuration's (a Lambda function's role and region; AWS_ENDPOINT_URL_SECRETS_MANAGER
// points it at a local server).
func defaultSecretsClient() (secrets.API, error) {
	cfg, err := awsconfig.LoadDefaultConfig(context.Background())
	if err != nil {
		return nil, fmt.Errorf("load the default AWS configuration: %w", err)
	}
	return secretsmanager.NewFromConfig(cfg), nil
}

func buildOpts(getenv func(string) string, newSecrets func() (secrets.API, error), opts []Option) ([]kgo.Opt, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			return nil, invalid("Opts", "nil Option")
		}
		o(&c)
	}
	if err := errors.Join(c.errs...); err != nil {
		return nil, err
	}
	if c.brokersErr != nil {
		return nil, c.brokersErr
	}
	if !c.brokersSet {
		env := getenv(EnvBootstrapServers)
		if strings.TrimSpace(env) == "" {
			return nil, invalid(EnvBootstrapServers, "no bootstrap servers: use WithBootstrapServers or set "+EnvBootstrapServers)
		}
		b, err := ParseBootstrapServers(env)
		if err != nil {
			return nil, invalidCause(EnvBootstrapServers, err)
		}
		c.brokers = b
	}
	if c.auth == authUnset {
		env := getenv(EnvAuth)
		switch {
		case env != "":
			a, err := parseAuth(env)
			if err != nil {
				return nil, invalidCause(EnvAuth, err)
			}
			c.auth, c.authFrom = a, EnvAuth+"="+env
		case c.tlsSet:
			c.auth, c.authFrom = authTLS, "WithTLSConfig"
		default:
			return nil, invalid(EnvAuth, "no authentication chosen: use WithIAM, WithSCRAM, WithPlaintext or WithTLSConfig, or set "+EnvAuth+" to iam, scram, tls or plaintext")
		}
	}

	watch := &connWatch{}
	out := []kgo.Opt{kgo.SeedBrokers(c.brokers...), kgo.WithHooks(watch)}
	if c.auth == authPlaintext {
		if c.tlsSet {
			return nil, invalid("WithTLSConfig", fmt.Sprintf("conflicts with %s, which turns TLS off", c.authFrom))
		}
	} else {
		cfg := c.tls
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		out = append(out, kgo.DialTLSConfig(cfg))
	}

	switch c.auth {
	case authIAM:
		creds := c.creds
		if creds == nil { // KAFKA_AUTH=iam: the default credential chain (a Lambda role's)
			cfg, err := awsconfig.LoadDefaultConfig(context.Background())
			if err != nil {
				return nil, invalidCause(EnvAuth, fmt.Errorf("iam: load the default AWS credentials: %w", err))
			}
			if cfg.Credentials == nil {
				return nil, invalid(EnvAuth, "iam: no AWS credentials in the default chain")
			}
			creds = cfg.Credentials
		}
		region, err := pickRegion(c.region, c.brokers, getenv(EnvRegion))
		if err != nil {
			return nil, err
		}
		out = append(out, kgo.SASL(iamMechanism(region, creds)))
	case authSCRAM:
		if c.user != "" { // WithSCRAM
			out = append(out, kgo.SASL(scram.Auth{User: c.user, Pass: c.password}.AsSha512Mechanism()))
			break
		}
		if c.secrets == nil { // KAFKA_AUTH=scram
			c.secretID, c.secretFrom = getenv(EnvSCRAMSecretARN), EnvSCRAMSecretARN
			if c.secretID == "" {
				return nil, invalid(EnvSCRAMSecretARN, "empty, and KAFKA_AUTH=scram needs it")
			}
			if err := checkSecretID(c.secretID); err != nil {
				return nil, invalidCause(EnvSCRAMSecretARN, err)
			}
			sm, err := newSecrets()
			if err != nil {
				return nil, invalidCause(EnvAuth, fmt.Errorf("scram: %w", err))
			}
			c.secrets = sm
		}
		mech, err := newSecretSCRAM(c.secrets, c.secretID)
		if err != nil {
			return nil, invalidCause(c.secretFrom, err)
		}
		watch.scram = mech
		out = append(out, kgo.SASL(mech))
	}
	out = append(out, defaults()...)
	out = append(out, c.client...)
	return out, nil
}

// iamMechanism is OAUTHBEARER with a token signed for region from creds, made anew each time
// kgo authenticates a connection (new connections and KIP-368 re-authentications).
func iamMechanism(region string, creds aws.CredentialsProvider) sasl.Mechanism {
	return oauth.Oauth(func(ctx context.Context) (oauth.Auth, error) {
		tok, _, err := signer.GenerateAuthTokenFromCredentialsProvider(ctx, region, creds)
		if err != nil {
			return oauth.Auth{}, &tokenError{fmt.Errorf("producer: MSK IAM token for %s: %w", region, err)}
		}
		return oauth.Auth{Token: tok}, nil
	})
}

// NewClient is kgo.NewClient(Opts(opts...)...). In Lambda, make it once per execution
// environment (in main or a package variable, outside the handler) and reuse it across
// invocations: connections and authentication then cost only on a cold start.
func NewClient(opts ...Option) (*kgo.Client, error) {
	o, err := Opts(opts...)
	if err != nil {
		return nil, err
	}
	cl, err := kgo.NewClient(o...)
	if err != nil {
		return nil, fmt.Errorf("producer: %w", err)
	}
	return cl, nil
}

func parseAuth(v string) (auth, error) {
	switch v {
	case "iam":
		return authIAM, nil
	case "scram":
		return authSCRAM, nil
	case "tls":
		return authTLS, nil
	case "plaintext":
		return authPlaintext, nil
	}
	return authUnset, fmt.Errorf("%q: want iam, scram, tls or plaintext", v)
}
