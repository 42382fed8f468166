package producer_test

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
	"github.com/kafkalambda/toolkit/producer"
)

// noSecrets is a Secrets Manager client for option checks that fail before any call.
type noSecrets struct{}

func (noSecrets) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return nil, errors.New("noSecrets: not called by a configuration check")
}

// clearEnv unsets every variable Opts reads, for the test.
func clearEnv(t *testing.T) {
	for _, k := range []string{producer.EnvBootstrapServers, producer.EnvAuth, producer.EnvSCRAMSecretARN, producer.EnvRegion} {
		t.Setenv(k, "")
	}
}

func TestOptsErrorsNameWhatIsMissing(t *testing.T) {
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return credsA, nil })
	for _, tc := range []struct {
		name    string
		env     map[string]string
		opts    []producer.Option
		setting string // toolkit.OptionError.Option
		text    string // in the message
	}{
		{"no brokers", nil, []producer.Option{producer.WithPlaintext()}, "KAFKA_BOOTSTRAP_SERVERS", "use WithBootstrapServers or set KAFKA_BOOTSTRAP_SERVERS"},
		{"empty broker in env", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092,,b:9092"}, []producer.Option{producer.WithPlaintext()}, "KAFKA_BOOTSTRAP_SERVERS", `broker 2 "": empty`},
		{"broker without port", nil, []producer.Option{producer.WithBootstrapServers("localhost"), producer.WithPlaintext()}, "WithBootstrapServers", "want host:port"},
		{"WithBootstrapServers of nothing", nil, []producer.Option{producer.WithBootstrapServers(), producer.WithPlaintext()}, "WithBootstrapServers", "no bootstrap servers"},
		{"no authentication", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092"}, nil, "KAFKA_AUTH", "no authentication chosen"},
		{"unknown KAFKA_AUTH", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092", "KAFKA_AUTH": "IAM"}, nil, "KAFKA_AUTH", `"IAM": want iam, scram, tls or plaintext`},
		{"scram without a secret", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092", "KAFKA_AUTH": "scram"}, nil, "KAFKA_SCRAM_SECRET_ARN", "KAFKA_AUTH=scram needs it"},
		// The password is never taken from the environment, where the function's configuration shows it.
		{"scram with a password variable", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092", "KAFKA_AUTH": "scram", "KAFKA_SCRAM_USERNAME": "u", "KAFKA_SCRAM_PASSWORD": "p"}, nil, "KAFKA_SCRAM_SECRET_ARN", "KAFKA_AUTH=scram needs it"},
		{"scram secret ARN with a space", map[string]string{"KAFKA_BOOTSTRAP_SERVERS": "a:9092", "KAFKA_AUTH": "scram", "KAFKA_SCRAM_SECRET_ARN": "arn:aws:secretsmanager:us-east-1:123456789012:secret:a b"}, nil, "KAFKA_SCRAM_SECRET_ARN", "space or control character"},
		{"WithSCRAMSecret without a client", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithSCRAMSecret(nil, "kafka/relay")}, "WithSCRAMSecret", "nil Secrets Manager client"},
		{"WithSCRAMSecret without a secret", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithSCRAMSecret(noSecrets{}, "")}, "WithSCRAMSecret", "empty secret ARN"},
		{"WithSCRAM and WithSCRAMSecret", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithSCRAM("u", "p"), producer.WithSCRAMSecret(noSecrets{}, "kafka/relay")}, "WithSCRAMSecret", "conflicts with WithSCRAM"},
		{"iam and scram secret", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithIAM(creds), producer.WithSCRAMSecret(noSecrets{}, "kafka/relay")}, "WithSCRAMSecret", "conflicts with WithIAM"},
		{"iam without region", nil, []producer.Option{producer.WithBootstrapServers("10.0.0.1:9098"), producer.WithIAM(creds)}, "WithRegion", "MSK IAM needs a region"},
		{"iam with a bad AWS_REGION", map[string]string{"AWS_REGION": "us east"}, []producer.Option{producer.WithBootstrapServers("10.0.0.1:9098"), producer.WithIAM(creds)}, "AWS_REGION", "want a name like us-east-1"},
		{"brokers in two regions", nil, []producer.Option{producer.WithBootstrapServers("b-1.x.y.c2.kafka.eu-west-1.amazonaws.com:9098", "b-2.x.y.c2.kafka.us-east-1.amazonaws.com:9098"), producer.WithIAM(creds)}, "bootstrap servers", "set WithRegion"},
		{"bad WithRegion", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithIAM(creds), producer.WithRegion("Frankfurt")}, "WithRegion", "want a name like us-east-1"},
		{"nil credentials", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithIAM(nil)}, "WithIAM", "no credentials provider"},
		{"iam and scram", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithIAM(creds), producer.WithSCRAM("u", "p")}, "WithSCRAM", "conflicts with WithIAM"},
		{"plaintext and iam", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithPlaintext(), producer.WithIAM(creds)}, "WithIAM", "conflicts with WithPlaintext"},
		{"plaintext and TLS config", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithPlaintext(), producer.WithTLSConfig(&tls.Config{})}, "WithTLSConfig", "turns TLS off"},
		{"KAFKA_AUTH=plaintext and TLS config", map[string]string{"KAFKA_AUTH": "plaintext"}, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithTLSConfig(&tls.Config{})}, "WithTLSConfig", "KAFKA_AUTH=plaintext"},
		{"empty scram user", nil, []producer.Option{producer.WithBootstrapServers("a:1"), producer.WithSCRAM("", "p")}, "WithSCRAM", "empty user or password"},
		{"nil option", nil, []producer.Option{producer.WithBootstrapServers("a:1"), nil}, "Opts", "nil Option"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			_, err := producer.Opts(tc.opts...)
			var ce *toolkit.OptionError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want a *toolkit.OptionError", err)
			}
			if ce.Option != tc.setting || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("error %q (setting %q), want setting %q and %q", err, ce.Option, tc.setting, tc.text)
			}
		})
	}
}

func TestEnvironmentChoosesBrokersAndAuth(t *testing.T) {
	for _, tc := range []struct {
		name string
		env  map[string]string
		ok   bool
	}{
		{"plaintext to a SASL broker", map[string]string{"KAFKA_AUTH": "plaintext"}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := kfake.NewCluster(kfake.SeedTopics(1, "t"), kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", "admin", "pw"))
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			clearEnv(t)
			t.Setenv("KAFKA_BOOTSTRAP_SERVERS", strings.Join(c.ListenAddrs(), " , "))
			for k, v := range tc.env {
				t.Setenv(k, v)
			}
			cl, err := producer.NewClient(producer.WithClientOptions(kgo.DialTLSConfig(nil))) // kfake speaks plaintext
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Second)
			defer cancel()
			err = producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err()
			if (err == nil) != tc.ok {
				t.Fatalf("produce: %v, want ok=%v", err, tc.ok)
			}
			// kfake closes the connection on a failed SCRAM exchange (real brokers answer
			// SASL_AUTHENTICATION_FAILED): the error still names the last connection error.
			if err != nil && !strings.Contains(err.Error(), "last connection error: broker") {
				t.Fatalf("error does not name the connection failure: %v", err)
			}
			t.Log(err)
		})
	}
}

// TestIAMRegion connects to MSK-named brokers (redirected to a local one by the dialer) whose
// tokens verify only when signed for the broker's region.
func TestIAMRegion(t *testing.T) {
	for _, tc := range []struct {
		name, broker, brokerRegion, env string
		opts                            []producer.Option
	}{
		{"from the broker host name", "b-1.demo.abc123.c2.kafka.eu-central-1.amazonaws.com:9098", "eu-central-1", "us-east-1", nil},
		{"serverless host name", "boot-abc.c1.kafka-serverless.ap-south-1.amazonaws.com:9098", "ap-south-1", "", nil},
		{"from AWS_REGION", "localbroker:9098", "sa-east-1", "sa-east-1", nil},
		{"WithRegion wins", "b-1.demo.abc123.c2.kafka.eu-central-1.amazonaws.com:9098", "us-west-2", "eu-west-1", []producer.Option{producer.WithRegion("us-west-2")}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			clearEnv(t)
			t.Setenv("AWS_REGION", tc.env)
			b := standintest.StartKafka(t, standin.WithIAMRegion(tc.brokerRegion), standin.WithTLS(),
				standin.WithCredentials(credsA), standin.WithClusterOptions(kfake.SeedTopics(1, "t")))
			local := b.Addrs()[0]
			dialer := &tls.Dialer{Config: b.ClientTLS()}
			redirect := func(ctx context.Context, network, addr string) (net.Conn, error) {
				if addr == tc.broker {
					addr = local
				}
				return dialer.DialContext(ctx, network, addr)
			}
			opts := append([]producer.Option{
				producer.WithBootstrapServers(tc.broker),
				producer.WithIAM(aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return credsA, nil })),
				producer.WithClientOptions(kgo.DialTLSConfig(nil), kgo.Dialer(redirect)),
			}, tc.opts...)
			cl, err := producer.NewClient(opts...)
			if err != nil {
				t.Fatal(err)
			}
			defer cl.Close()
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			if err := producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err(); err != nil {
				t.Fatal(err)
			}
		})
	}
}

func TestIAMFromEnvironment(t *testing.T) {
	clearEnv(t)
	b := standintest.StartKafka(t, standin.WithIAMRegion("eu-north-1"), standin.WithCredentials(credsA),
		standin.WithClusterOptions(kfake.SeedTopics(1, "t")))
	// KAFKA_AUTH=iam with the default credential chain, as a Lambda function's role gives it.
	t.Setenv("KAFKA_BOOTSTRAP_SERVERS", strings.Join(b.Addrs(), ","))
	t.Setenv("KAFKA_AUTH", "iam")
	t.Setenv("AWS_REGION", "eu-north-1")
	t.Setenv("AWS_ACCESS_KEY_ID", credsA.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", credsA.SecretAccessKey)
	t.Setenv("AWS_SESSION_TOKEN", credsA.SessionToken)
	t.Setenv("AWS_CONFIG_FILE", "/nonexistent")
	t.Setenv("AWS_SHARED_CREDENTIALS_FILE", "/nonexistent")
	t.Setenv("AWS_EC2_METADATA_DISABLED", "true")
	cl, err := producer.NewClient(producer.WithClientOptions(kgo.DialTLSConfig(nil))) // MSK IAM broker (standin.Kafka) without TLS here
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err(); err != nil {
		t.Fatal(err)
	}
	if toks := b.Tokens(); len(toks) == 0 || toks[0].AccessKeyID != credsA.AccessKeyID {
		t.Fatalf("tokens %+v", toks)
	}
}

func TestTLSOnByDefault(t *testing.T) {
	// A TLS broker whose certificate the system roots do not trust: the default config must
	// refuse it (and say so at once), and trusting its CA must work.
	b := standintest.StartKafka(t, standin.WithTLS(), standin.WithCredentials(credsA), standin.WithIAMRegion("eu-west-1"),
		standin.WithClusterOptions(kfake.SeedTopics(1, "t")))
	creds := aws.CredentialsProviderFunc(func(context.Context) (aws.Credentials, error) { return credsA, nil })
	clearEnv(t)
	cl, err := producer.NewClient(producer.WithBootstrapServers(b.Addrs()...), producer.WithIAM(creds), producer.WithRegion("eu-west-1"))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	start := time.Now()
	err = producer.Produce(ctx, cl, &kgo.Record{Topic: "t", Value: []byte("v")}).Err()
	var verr *tls.CertificateVerificationError
	if !errors.As(err, &verr) || !errors.Is(err, producer.ErrNotAcknowledged) {
		t.Fatalf("%v, want a certificate verification error", err)
	}
	if took := time.Since(start); took > 5*time.Second {
		t.Errorf("took %v to fail", took)
	}
}
