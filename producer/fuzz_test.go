package producer

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// FuzzParseBootstrapServers: ParseBootstrapServers never panics; what it accepts is
// host:port entries that parse again to the same list. The seed corpus is
// testdata/fuzz/FuzzParseBootstrapServers.
func FuzzParseBootstrapServers(f *testing.F) {
	for _, s := range []string{
		"b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com:9098,b-2.demo.abc123.c2.kafka.us-east-1.amazonaws.com:9098",
		"localhost:9092", " 127.0.0.1:9092 , [::1]:9093 ", "a:1,,b:2", "a", ":9092", "a:0", "a:65536", "a:+1", "[::1]", "a b:1",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		bs, err := ParseBootstrapServers(s)
		if err != nil {
			if len(bs) != 0 {
				t.Fatalf("error %v with brokers %q", err, bs)
			}
			if strings.ContainsRune(err.Error(), '\n') && !strings.ContainsRune(s, '\n') {
				t.Fatalf("error on several lines: %q", err)
			}
			return
		}
		if len(bs) == 0 {
			t.Fatal("no brokers and no error")
		}
		for _, b := range bs {
			if checkBroker(b) != nil || strings.Contains(b, ",") || strings.TrimSpace(b) != b {
				t.Fatalf("accepted %q", b)
			}
		}
		again, err := ParseBootstrapServers(strings.Join(bs, ","))
		if err != nil || strings.Join(again, ",") != strings.Join(bs, ",") {
			t.Fatalf("%q parses to %q, which parses to %q, %v", s, bs, again, err)
		}
	})
}

// FuzzRegionFromBroker: never panics; a region found is a valid region name that appears in
// the host as kafka[-serverless].<region>.amazonaws.com. The seed corpus is
// testdata/fuzz/FuzzRegionFromBroker.
func FuzzRegionFromBroker(f *testing.F) {
	for _, s := range []string{
		"b-1.demo.abc123.c2.kafka.us-east-1.amazonaws.com:9098",
		"boot-abc.c1.kafka-serverless.ap-south-1.amazonaws.com:9098",
		"b-1.demo.abc.c3.kafka.cn-north-1.amazonaws.com.cn:9098",
		"B-1.DEMO.KAFKA.US-GOV-WEST-1.AMAZONAWS.COM.:9094",
		"kafka.us-east-1.amazonaws.com", "localhost:9092", "127.0.0.1:9092", "[::1]:9092",
		"x.kafka..amazonaws.com:1", "x.kafka.us-east-.amazonaws.com", "x.kafka.1-east-us.amazonaws.com",
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, addr string) {
		r, ok := RegionFromBroker(addr)
		if !ok {
			if r != "" {
				t.Fatalf("region %q without ok", r)
			}
			return
		}
		if err := checkRegion(r); err != nil {
			t.Fatalf("region %q from %q: %v", r, addr, err)
		}
		host := strings.ToLower(addr)
		if !strings.Contains(host, "kafka."+r+".amazonaws.com") && !strings.Contains(host, "kafka-serverless."+r+".amazonaws.com") {
			t.Fatalf("region %q is not in %q", r, addr)
		}
	})
}

// FuzzOptsEnvironment: whatever the KAFKA_* and AWS_REGION variables hold, Opts either
// returns options or a *toolkit.OptionError on one line; it never panics. The seed corpus is
// testdata/fuzz/FuzzOptsEnvironment. Secrets Manager is not called: a KAFKA_AUTH=scram that
// gets that far reads the secret through a client that fails.
func FuzzOptsEnvironment(f *testing.F) {
	f.Add("localhost:9092", "plaintext", "", "")
	f.Add("b-1.x.y.c2.kafka.eu-west-1.amazonaws.com:9096", "scram", "arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka/relay-AbCdEf", "")
	f.Add("10.0.0.1:9098", "iam", "", "us-east-1")
	f.Add("10.0.0.1:9098", "iam", "", "")
	f.Add("a:1,", "tls", "", "")
	f.Add("", "", "", "")
	f.Add("a:1", "IAM", "", "")
	f.Fuzz(func(t *testing.T, brokers, auth, secretARN, region string) {
		env := map[string]string{
			EnvBootstrapServers: brokers, EnvAuth: auth, EnvSCRAMSecretARN: secretARN, EnvRegion: region,
		}
		if auth == "iam" {
			// The default credential chain reads the real environment; keep the fuzzer off it.
			env[EnvAuth] = ""
		}
		unreachable := func() (secrets.API, error) { return failingSecrets{}, nil }
		opts, err := buildOpts(func(k string) string { return env[k] }, unreachable, nil)
		if err != nil {
			var ce *toolkit.OptionError
			if !errors.As(err, &ce) || ce.Option == "" {
				t.Fatalf("error %v is not a *toolkit.OptionError naming a setting", err)
			}
			if strings.ContainsRune(err.Error(), '\n') {
				t.Fatalf("error on several lines: %q", err)
			}
			return
		}
		if len(opts) == 0 {
			t.Fatal("no options and no error")
		}
	})
}

// failingSecrets is the Secrets Manager of FuzzOptsEnvironment: every read fails.
type failingSecrets struct{}

func (failingSecrets) GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	return nil, errors.New("no Secrets Manager in the fuzzer")
}

// FuzzSCRAMSecret: parseSCRAMSecret never panics, accepts only non-empty string username and
// password, and its errors never quote the value. The seeds (f.Add) include 20,000 levels of
// nesting and values just under and over MaxSecretSize.
func FuzzSCRAMSecret(f *testing.F) {
	for _, s := range []string{
		`{"username":"relay","password":"pw"}`,
		`{"username":"relay","password":"pw","engine":"kafka"}`,
		`{"username":"relay"}`, `{"password":"pw"}`, `{"username":"","password":"pw"}`,
		`{"username":1,"password":"pw"}`, `{"username":"relay","password":null}`,
		`["relay","pw"]`, `"relay:pw"`, ``, `{`, `{"username":"relay","password":"pw"} trailing`,
		`{"username":"r\u0000","password":"\ud800"}`,
		`{"username":"relay","password":"pw","x":` + strings.Repeat("[", 20000) + strings.Repeat("]", 20000) + `}`,
		`{"username":"relay","password":"` + strings.Repeat("p", MaxSecretSize-35) + `"}`,
		`{"username":"relay","password":"` + strings.Repeat("p", MaxSecretSize) + `"}`,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		user, pass, err := parseSCRAMSecret(s)
		if err != nil {
			if user != "" || pass != "" {
				t.Fatalf("credentials with error %v", err)
			}
			if len(s) > 80 && strings.Contains(err.Error(), s) { // shorter inputs can be words of the fixed messages
				t.Fatalf("error %q quotes the value", err)
			}
			return
		}
		if user == "" || pass == "" || len(s) > MaxSecretSize {
			t.Fatalf("accepted %q: user %q, password of %d bytes", s, user, len(pass))
		}
	})
}
