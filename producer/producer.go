package producer

import (
	"context"
	"crypto/tls"
	"errors"

	"github.com/aws/aws-msk-iam-sasl-signer-go/signer"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/twmb/franz-go/pkg/kgo"
)

// ErrNotAcknowledged is the error of a record that [Produce] gave up waiting for at the
// context's deadline: its outcome is unknown (it may still land).
var ErrNotAcknowledged = errors.New("producer: not acknowledged before the deadline")

type config struct{}

// Option configures the connection to a cluster.
type Option func(*config)

// WithBrokers sets the bootstrap servers. Default: $KAFKA_BOOTSTRAP_SERVERS (comma-separated).
func WithBrokers(addrs ...string) Option { return func(*config) {} }

// WithIAM authenticates with MSK IAM. Default: $KAFKA_AUTH.
func WithIAM(creds aws.CredentialsProvider) Option { return func(*config) {} }

// WithRegion sets the region of the MSK IAM token. Default: from the broker host names, else $AWS_REGION.
func WithRegion(region string) Option { return func(*config) {} }

// WithSCRAM authenticates with SASL/SCRAM-SHA-512. Default: $KAFKA_AUTH.
func WithSCRAM(user, password string) Option { return func(*config) {} }

// WithPlaintext turns off TLS and SASL. Default: TLS on.
func WithPlaintext() Option { return func(*config) {} }

// WithTLSConfig sets the TLS configuration. Default: TLS with the system roots.
func WithTLSConfig(c *tls.Config) Option { return func(*config) {} }

// WithClientOptions appends kgo options after the defaults. Default: none.
func WithClientOptions(opts ...kgo.Opt) Option { return func(*config) {} }

// Opts returns the kgo options for the cluster.
func Opts(opts ...Option) ([]kgo.Opt, error) { return nil, errors.New("producer: not implemented") }

// NewClient is kgo.NewClient(Opts(opts...)...).
func NewClient(opts ...Option) (*kgo.Client, error) {
	return nil, errors.New("producer: not implemented")
}

// Produce produces records on cl and waits until each is acknowledged or has failed.
func Produce(ctx context.Context, cl *kgo.Client, records ...*kgo.Record) Results {
	rs := make(Results, len(records))
	for i, r := range records {
		rs[i] = Result{Record: r, Err: errors.New("producer: not implemented")}
	}
	return rs
}

// Result is the outcome of one record.
type Result struct {
	Record *kgo.Record
	Err    error
}

// Results are the outcomes of the records of one [Produce] call, in their order.
type Results []Result

// Err is nil when every record succeeded, else an error naming the failures.
func (rs Results) Err() error {
	var errs []error
	for _, r := range rs {
		if r.Err != nil {
			errs = append(errs, r.Err)
		}
	}
	return errors.Join(errs...)
}

var generateToken = signer.GenerateAuthTokenFromCredentialsProvider
