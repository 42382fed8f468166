package producer_test

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/internal/standintest"
)

// moto is one moto_server (standin.Moto): a real local Secrets Manager, on a free loopback
// port, for one test.
type moto struct{ *standin.Moto }

// startMoto starts moto_server for t and stops it when t ends. A moto_server that is missing
// or does not start fails t; it never skips.
func startMoto(t testing.TB) *moto {
	t.Helper()
	return &moto{standintest.StartMoto(t)}
}

// client returns a Secrets Manager client of the server: static test credentials, us-east-1,
// and standin's retryer (a stopped server fails at once). optFns run last.
func (m *moto) client(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsClient(m.Endpoint(), optFns...)
}

// secretsClient is a Secrets Manager client of endpoint, as [moto.client] makes one.
func secretsClient(endpoint string, optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(endpoint)
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

// createSecret creates a secret with the given SecretString and returns its ARN.
func (m *moto) createSecret(t testing.TB, name, value string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	out, err := m.client().CreateSecret(ctx, &secretsmanager.CreateSecretInput{Name: aws.String(name), SecretString: aws.String(value)})
	if err != nil {
		t.Fatalf("create secret %s: %v\nmoto_server output:\n%s", name, err, m.Output())
	}
	return aws.ToString(out.ARN)
}

// rotate puts a new current value, as a rotation function's last step does.
func (m *moto) rotate(t testing.TB, id, value string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.client().PutSecretValue(ctx, &secretsmanager.PutSecretValueInput{SecretId: aws.String(id), SecretString: aws.String(value)}); err != nil {
		t.Fatalf("put secret value %s: %v", id, err)
	}
}

// counting counts the GetSecretValue calls made through it to the real client.
type counting struct {
	producerSecrets
	n atomic.Int64
}

type producerSecrets interface {
	GetSecretValue(context.Context, *secretsmanager.GetSecretValueInput, ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

func (c *counting) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.n.Add(1)
	return c.producerSecrets.GetSecretValue(ctx, in, optFns...)
}

func scramJSON(user, pass string) string {
	return fmt.Sprintf(`{"username":%q,"password":%q}`, user, pass)
}
