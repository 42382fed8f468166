package main

// Test support for "klt produce" and "klt consume": Kafka brokers (franz-go's kfake, in
// process) for Go tests and for scripts, with TLS, SCRAM or MSK IAM when asked.

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"flag"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/rogpeppe/go-internal/testscript"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/kafkalambda/toolkit/internal/standin"
)

// startKafka starts a one-broker kfake cluster with the given topics, each with partitions
// partitions, and closes it when t ends. Topics are never created automatically.
func startKafka(t *testing.T, partitions int32, topics ...string) *kfake.Cluster {
	t.Helper()
	c, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(partitions, topics...))
	if err != nil {
		t.Fatalf("starting kfake: %v", err)
	}
	t.Cleanup(c.Close)
	return c
}

// testCert makes a throwaway CA and a certificate it signs for 127.0.0.1 and localhost, and
// returns the server's TLS configuration and the CA in PEM.
func testCert() (*tls.Config, []byte, error) {
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	now := time.Now()
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "klt test CA"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	caCert, err := x509.ParseCertificate(caDER)
	if err != nil {
		return nil, nil, err
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "localhost"},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		DNSNames: []string{"localhost"}, IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, caCert, &key.PublicKey, caKey)
	if err != nil {
		return nil, nil, err
	}
	cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{{Certificate: [][]byte{leafDER}, PrivateKey: key}}}
	return cfg, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), nil
}

// cmdKafka is the script command
//
//	kafka [-tls] [-scram USER:PASSWORD] [-iam KEYID:SECRET] [-auto-create] TOPIC:PARTITIONS...
//
// It starts a one-broker kfake cluster with those topics, stopped when the script ends, and
// sets $BROKERS and $KAFKA_BOOTSTRAP_SERVERS to its address. With -tls the broker speaks TLS
// with a certificate that $SSL_CERT_FILE, set to $WORK/kafka-ca.pem, trusts; -scram adds a
// SCRAM-SHA-512 user; -iam makes it authenticate with MSK IAM (region us-east-1, through
// internal/kafkaiam) and accept tokens signed with that access key.
func cmdKafka(ts *testscript.TestScript, neg bool, args []string) {
	if neg {
		ts.Fatalf("unsupported: ! kafka")
	}
	fs := flag.NewFlagSet("kafka", flag.ContinueOnError)
	useTLS := fs.Bool("tls", false, "")
	scram := fs.String("scram", "", "")
	iam := fs.String("iam", "", "")
	autoCreate := fs.Bool("auto-create", false, "")
	if err := fs.Parse(args); err != nil {
		ts.Fatalf("kafka: %v", err)
	}
	var opts []kfake.Opt
	for _, arg := range fs.Args() {
		topic, n, ok := strings.Cut(arg, ":")
		parts, err := strconv.Atoi(n)
		if !ok || err != nil {
			ts.Fatalf("kafka: want TOPIC:PARTITIONS, got %q", arg)
		}
		opts = append(opts, kfake.SeedTopics(int32(parts), topic))
	}
	if *autoCreate {
		opts = append(opts, kfake.AllowAutoTopicCreation())
	}
	if *useTLS {
		cfg, caPEM, err := testCert()
		ts.Check(err)
		ca := filepath.Join(ts.Getenv("WORK"), "kafka-ca.pem")
		ts.Check(os.WriteFile(ca, caPEM, 0o644))
		ts.Setenv("SSL_CERT_FILE", ca)
		opts = append(opts, kfake.TLS(cfg))
	}
	if *scram != "" {
		user, pass, _ := strings.Cut(*scram, ":")
		opts = append(opts, kfake.EnableSASL(), kfake.Superuser("SCRAM-SHA-512", user, pass))
	}
	var addrs []string
	if *iam != "" {
		id, secret, _ := strings.Cut(*iam, ":")
		b, err := standin.StartKafka(context.Background(), standin.WithClusterOptions(opts...),
			standin.WithCredentials(aws.Credentials{AccessKeyID: id, SecretAccessKey: secret}))
		ts.Check(err)
		ts.Defer(b.Cluster.Close)
		addrs = b.Addrs()
	} else {
		c, err := kfake.NewCluster(append([]kfake.Opt{kfake.NumBrokers(1)}, opts...)...)
		ts.Check(err)
		ts.Defer(c.Close)
		addrs = c.ListenAddrs()
	}
	ts.Setenv("BROKERS", strings.Join(addrs, ","))
	ts.Setenv("KAFKA_BOOTSTRAP_SERVERS", strings.Join(addrs, ","))
}

// freePort returns a loopback address nothing listens on: a port the system handed out and
// that was closed again.
func freePort() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	addr := l.Addr().String()
	return addr, l.Close()
}

// cmdFreePort is the script command "freeport VAR": it sets $VAR to a loopback address nothing
// listens on.
func cmdFreePort(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 1 {
		ts.Fatalf("usage: freeport VAR")
	}
	addr, err := freePort()
	ts.Check(err)
	ts.Setenv(args[0], addr)
}

// cmdClock is the script command "clock start", which notes the time, and
// "clock within DURATION", which fails unless less than DURATION has passed since: a bound on
// the time the commands between them took.
func cmdClock(ts *testscript.TestScript, neg bool, args []string) {
	switch {
	case !neg && len(args) == 1 && args[0] == "start":
		ts.Setenv("KLT_TEST_CLOCK", strconv.FormatInt(time.Now().UnixNano(), 10))
	case !neg && len(args) == 2 && args[0] == "within":
		limit, err := time.ParseDuration(args[1])
		ts.Check(err)
		start, err := strconv.ParseInt(ts.Getenv("KLT_TEST_CLOCK"), 10, 64)
		if err != nil {
			ts.Fatalf("clock within: no clock start before")
		}
		if took := time.Since(time.Unix(0, start)); took >= limit {
			ts.Fatalf("took %v, want less than %v", took.Round(time.Millisecond), limit)
		}
	default:
		ts.Fatalf("usage: clock start | clock within DURATION")
	}
}

// scriptCmds are the commands scripts have beside testscript's own.
var scriptCmds = map[string]func(ts *testscript.TestScript, neg bool, args []string){
	"kafka":    cmdKafka,
	"freeport": cmdFreePort,
	"clock":    cmdClock,
}
