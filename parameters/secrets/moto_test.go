package secrets_test

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/parameters/internal/ptest"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// The tests share one moto_server (ptest.Moto), a real local Secrets Manager, started on first
// use and stopped here.
func TestMain(m *testing.M) { ptest.Main(m) }

var ctx10 = ptest.Ctx10

type moto struct{ *standin.Moto }

func startMoto(t testing.TB) *moto {
	t.Helper()
	return &moto{ptest.Moto(t)}
}

// secretsClient is a client of the server: static test credentials, us-east-1, standin's
// retryer (3 attempts, backoff at most 100 ms). optFns run last.
func (m *moto) secretsClient(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(m.Endpoint())
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

func (m *moto) createSecret(t testing.TB, name, value string, binary []byte) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	in := &secretsmanager.CreateSecretInput{Name: aws.String(name)}
	if binary != nil {
		in.SecretBinary = binary
	} else {
		in.SecretString = aws.String(value)
	}
	out, err := m.secretsClient().CreateSecret(ctx, in)
	if err != nil {
		t.Fatalf("create secret %s: %v\nmoto_server output:\n%s", name, err, m.Output())
	}
	return aws.ToString(out.ARN)
}

func (m *moto) rotate(t testing.TB, id, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.secretsClient().PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("put secret value %s: %v", id, err)
	}
}

type countingSecrets struct {
	secrets.API
	n atomic.Int64
}

func (c *countingSecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.n.Add(1)
	return c.API.GetSecretValue(ctx, in, optFns...)
}
