package kafkaconn

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/input"
	"github.com/kafkalambda/toolkit/producer"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kgo"
	"github.com/twmb/franz-go/pkg/kmsg"
)

// ClusterFlags holds the flags of "klt produce" and "klt consume" that say which cluster to
// reach and how.
type ClusterFlags struct {
	brokers          string
	Topic            string
	iam              bool
	region           string
	scramUser        string
	scramPasswordEnv string
	noTLS            bool
	ConnectTimeout   time.Duration

	creds aws.CredentialsProvider // for --iam, set by options
}

// defaultConnectTimeout is how long klt waits for the brokers' first answer.
const defaultConnectTimeout = 10 * time.Second

// scramPasswordEnv is the variable --scram-password-env names by default. klt runs on a
// developer's machine, where an environment variable is the usual home of a password; a
// function reads its SCRAM credentials from Secrets Manager instead (producer.WithSCRAMSecret).
const scramPasswordEnv = "KAFKA_SCRAM_PASSWORD"

// Register adds the cluster flags to fs.
func (c *ClusterFlags) Register(fs *flag.FlagSet) {
	fs.StringVar(&c.brokers, "brokers", "", "comma-separated `host:port` list of bootstrap brokers (default $"+producer.EnvBootstrapServers+")")
	fs.StringVar(&c.Topic, "topic", "", "the `topic` (required)")
	fs.BoolVar(&c.iam, "iam", false, "authenticate with MSK IAM (SASL/OAUTHBEARER over TLS), with the credentials of the\ndefault AWS chain: environment, ~/.aws profile (AWS_PROFILE), SSO, role")
	fs.StringVar(&c.region, "region", "", "`region` of the MSK IAM token, with --iam (default: from the broker host names,\n...kafka.REGION.amazonaws.com, else $AWS_REGION)")
	fs.StringVar(&c.scramUser, "scram-user", "", "authenticate with SASL/SCRAM-SHA-512 over TLS as `user`")
	fs.StringVar(&c.scramPasswordEnv, "scram-password-env", scramPasswordEnv, "name of the environment `variable` that holds the SCRAM password (never a flag,\nwhich other users of the machine can read)")
	fs.BoolVar(&c.noTLS, "no-tls", false, "connect without TLS and without authentication (local clusters)")
	fs.DurationVar(&c.ConnectTimeout, "connect-timeout", defaultConnectTimeout, "give up when the brokers have not answered the first request within this `duration`")
}

// authName says how klt authenticates, for messages.
func (c *ClusterFlags) authName() string {
	switch {
	case c.iam:
		return "MSK IAM"
	case c.scramUser != "":
		return "SCRAM-SHA-512"
	case c.noTLS:
		return "no TLS"
	case os.Getenv(producer.EnvAuth) != "":
		return producer.EnvAuth + "=" + os.Getenv(producer.EnvAuth)
	}
	return "TLS"
}

// Options checks the cluster flags and turns them into producer options; it returns the
// brokers too. Its errors are command-line mistakes.
func (c *ClusterFlags) Options(ctx context.Context) ([]producer.Option, []string, error) {
	if c.Topic == "" {
		return nil, nil, errors.New("--topic is required")
	}
	brokersFrom := "--brokers"
	if c.brokers == "" {
		c.brokers, brokersFrom = os.Getenv(producer.EnvBootstrapServers), "$"+producer.EnvBootstrapServers
		if strings.TrimSpace(c.brokers) == "" {
			return nil, nil, fmt.Errorf("no brokers: give --brokers HOST:PORT[,...] or set %s", producer.EnvBootstrapServers)
		}
	}
	brokers, err := input.SplitServers(c.brokers)
	if err == nil && len(brokers) == 0 {
		err = errors.New("no brokers")
	}
	if err != nil {
		return nil, nil, fmt.Errorf("%s: %w", brokersFrom, err)
	}
	if c.ConnectTimeout <= 0 {
		return nil, nil, fmt.Errorf("--connect-timeout: want a positive duration, got %v", c.ConnectTimeout)
	}
	opts := []producer.Option{producer.WithBootstrapServers(brokers...)}
	switch {
	case c.iam && c.scramUser != "":
		return nil, nil, errors.New("--iam and --scram-user: choose one authentication")
	case c.noTLS && (c.iam || c.scramUser != ""):
		return nil, nil, errors.New("--no-tls turns off TLS and authentication; MSK IAM and SCRAM are sent over TLS")
	case c.region != "" && !c.iam:
		return nil, nil, errors.New("--region is the region of the MSK IAM token: use it with --iam")
	case c.iam:
		cfg, err := awsconfig.LoadDefaultConfig(ctx)
		if err != nil {
			return nil, nil, fmt.Errorf("--iam: loading the AWS credentials: %w", err)
		}
		c.creds = cfg.Credentials
		opts = append(opts, producer.WithIAM(cfg.Credentials))
		if c.region != "" {
			opts = append(opts, producer.WithRegion(c.region))
		}
	case c.scramUser != "":
		if c.scramPasswordEnv == "" {
			return nil, nil, errors.New("--scram-password-env: want the name of an environment variable")
		}
		pass := os.Getenv(c.scramPasswordEnv)
		if pass == "" {
			return nil, nil, fmt.Errorf("--scram-user: the password variable $%s is not set or empty", c.scramPasswordEnv)
		}
		opts = append(opts, producer.WithSCRAM(c.scramUser, pass))
	case c.noTLS:
		opts = append(opts, producer.WithPlaintext())
	case os.Getenv(producer.EnvAuth) != "":
		// No flag chooses: $KAFKA_AUTH does, as for the producer package in a function.
	default:
		opts = append(opts, producer.WithTLSConfig(&tls.Config{MinVersion: tls.VersionTLS12}))
	}
	return opts, brokers, nil
}

// NewClient makes the client for c with the producer options opts and the kgo options extra,
// watched by diag.
func NewClient(opts []producer.Option, diag *ConnWatch, extra ...kgo.Opt) (*kgo.Client, error) {
	extra = append([]kgo.Opt{kgo.WithHooks(diag)}, extra...)
	cl, err := producer.NewClient(append(opts, producer.WithClientOptions(extra...))...)
	if err != nil {
		return nil, err
	}
	return cl, nil
}

// ConnWatch is a kgo hook that remembers why connections to the brokers fail, so that a
// request that times out can say why, and that cancels the first request when the brokers
// keep closing the connection during authentication, which is how some brokers (kfake among
// them) refuse credentials.
type ConnWatch struct {
	mu         sync.Mutex
	last       error // the latest connection failure
	lastSASL   error // the latest connection closed during authentication
	saslClosed int   // connections closed during authentication
	cancel     context.CancelFunc
}

// maxSASLClosed is how many connections closed during SASL authentication make klt give up
// before --connect-timeout: one can be a dropped connection, several are refused credentials.
const maxSASLClosed = 3

var (
	_ kgo.HookBrokerConnect = (*ConnWatch)(nil)
	_ kgo.HookBrokerRead    = (*ConnWatch)(nil)
)

// OnBrokerConnect records a connection that could not be made (kgo calls it also for one
// whose authentication failed).
func (w *ConnWatch) OnBrokerConnect(meta kgo.BrokerMetadata, _ time.Duration, _ net.Conn, err error) {
	if err == nil {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.last = fmt.Errorf("cannot connect to %s: %w", net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), err)
}

// OnBrokerRead records a connection that failed while authenticating.
func (w *ConnWatch) OnBrokerRead(meta kgo.BrokerMetadata, key int16, _ int, _, _ time.Duration, err error) {
	if err == nil || key != int16(kmsg.SASLAuthenticate) && key != int16(kmsg.SASLHandshake) {
		return
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.lastSASL = fmt.Errorf("%s closed the connection during authentication (%w): the credentials were refused, or the broker does not take this authentication",
		net.JoinHostPort(meta.Host, fmt.Sprint(meta.Port)), err)
	w.saslClosed++
	if w.saslClosed >= maxSASLClosed && w.cancel != nil {
		w.cancel()
	}
}

// state returns the latest connection failure: the latest one during authentication when
// authentication was refused (refused is then true).
func (w *ConnWatch) state() (refused bool, last error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.saslClosed >= maxSASLClosed {
		return true, w.lastSASL
	}
	return false, w.last
}

// clusterError is a failure to reach, authenticate to or find the topic on the cluster.
type clusterError struct{ msg string }

func (e *clusterError) Error() string { return e.msg }

// CheckTopic asks the brokers for topic's metadata, within timeout, without creating the
// topic, and returns its number of partitions. Its errors say what failed: no answer from the
// brokers (and the last connection failure), refused authentication, an unknown topic, or an
// error code of the broker.
func CheckTopic(ctx context.Context, cl *kgo.Client, diag *ConnWatch, c *ClusterFlags) (int, error) {
	ctx, cancel := context.WithTimeout(ctx, c.ConnectTimeout)
	defer cancel()
	if c.creds != nil {
		// Without credentials every connection fails the same way; say it once, plainly.
		if _, err := c.creds.Retrieve(ctx); err != nil {
			return 0, &clusterError{fmt.Sprintf("--iam: no AWS credentials from the default chain (environment, ~/.aws, SSO, role): %v", err)}
		}
	}
	diag.mu.Lock()
	diag.cancel = cancel
	diag.mu.Unlock()

	req := kmsg.NewPtrMetadataRequest()
	req.AllowAutoTopicCreation = false
	t := kmsg.NewMetadataRequestTopic()
	t.Topic = kmsg.StringPtr(c.Topic)
	req.Topics = append(req.Topics, t)
	resp, err := req.RequestWith(ctx, cl)
	if err != nil {
		refused, last := diag.state()
		switch {
		case refused:
			return 0, &clusterError{fmt.Sprintf("authentication (%s) failed: %v", c.authName(), last)}
		case ctx.Err() != nil && last != nil:
			return 0, &clusterError{fmt.Sprintf("no answer from the brokers (%s) within %v: %v", c.brokers, c.ConnectTimeout, last)}
		case ctx.Err() != nil && c.authName() == "TLS":
			return 0, &clusterError{fmt.Sprintf("no answer from the brokers (%s) within %v over TLS (--no-tls for a plaintext listener)", c.brokers, c.ConnectTimeout)}
		case ctx.Err() != nil:
			return 0, &clusterError{fmt.Sprintf("no answer from the brokers (%s) within %v (%s)", c.brokers, c.ConnectTimeout, c.authName())}
		case isAuthError(err):
			return 0, &clusterError{fmt.Sprintf("authentication (%s) failed: %v", c.authName(), err)}
		}
		return 0, &clusterError{fmt.Sprintf("brokers %s: %v", c.brokers, err)}
	}
	for _, rt := range resp.Topics {
		if rt.Topic == nil || *rt.Topic != c.Topic {
			continue
		}
		switch err := kerr.ErrorForCode(rt.ErrorCode); {
		case errors.Is(err, kerr.UnknownTopicOrPartition):
			return 0, &clusterError{fmt.Sprintf("topic %q does not exist on %s (klt does not create topics)", c.Topic, c.brokers)}
		case err != nil:
			return 0, &clusterError{fmt.Sprintf("topic %q: %v", c.Topic, err)}
		case len(rt.Partitions) == 0:
			return 0, &clusterError{fmt.Sprintf("topic %q has no partitions", c.Topic)}
		}
		return len(rt.Partitions), nil
	}
	return 0, &clusterError{fmt.Sprintf("topic %q: the brokers' metadata does not list it", c.Topic)}
}

// isAuthError reports whether err is an authentication or authorization error of Kafka.
func isAuthError(err error) bool {
	for _, e := range []error{kerr.SaslAuthenticationFailed, kerr.IllegalSaslState, kerr.UnsupportedSaslMechanism,
		kerr.ClusterAuthorizationFailed, kerr.TopicAuthorizationFailed, kerr.GroupAuthorizationFailed} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// UsageClusterFlags explains the cluster flags, in the help of produce and consume.
const UsageClusterFlags = `
Brokers come from --brokers, else $KAFKA_BOOTSTRAP_SERVERS (comma-separated, as the event
source mapping's bootstrapServers). Authentication, one of:

  --iam                 MSK IAM: SASL/OAUTHBEARER over TLS, a token signed with
                        aws-msk-iam-sasl-signer-go from the default AWS credentials for every
                        connection; region from --region, the broker names or $AWS_REGION
  --scram-user U        SASL/SCRAM-SHA-512 over TLS, the password in $KAFKA_SCRAM_PASSWORD or
                        the variable --scram-password-env names
  --no-tls              plaintext, no authentication: a local cluster
  (none)                $KAFKA_AUTH (iam, scram, tls or plaintext) when set, as the producer
                        package reads it in a function; else TLS without authentication

TLS checks the brokers' certificates against the system roots (SSL_CERT_FILE names another
bundle). Before anything else klt asks the brokers about the topic: brokers that do not answer
within --connect-timeout, refused credentials and a topic that does not exist (klt never
creates one) end the command with a message and exit status 1.
`
