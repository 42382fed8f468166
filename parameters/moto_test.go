package parameters_test

import (
	"context"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/internal/standin"
)

// The tests share one moto_server (moto 5, `pip install 'moto[server]'`), a real local SSM
// Parameter Store and Secrets Manager, started as producer's Secrets Manager tests start it
// (producer/moto_test.go), once for the package: Python's start costs seconds. Each test uses
// names of its own. moto does not serve the AppConfig Data API (moto 5.2.1 has appconfig's
// control plane only), so AppConfig is tested against an httptest server (appconfig_test.go).
var motoSrv *moto

func TestMain(m *testing.M) {
	code := m.Run()
	if motoSrv != nil {
		motoSrv.Stop()
	}
	os.Exit(code)
}

// moto is the package's moto_server (standin.Moto).
type moto struct{ *standin.Moto }

var (
	motoOnce sync.Once
	motoErr  error
)

// startMoto returns the package's moto_server, starting it on first use. A moto_server that
// is missing or does not start fails t; it never skips.
func startMoto(t testing.TB) *moto {
	t.Helper()
	motoOnce.Do(func() {
		var s *standin.Moto
		if s, motoErr = standin.StartMoto(context.Background()); motoErr == nil {
			motoSrv = &moto{s}
		}
	})
	if motoErr != nil {
		t.Fatal(motoErr)
	}
	return motoSrv
}

// ssmClient and secretsClient are clients of the server: static test credentials, us-east-1,
// standin's retryer (3 attempts, backoff at most 100 ms). optFns run last.
func (m *moto) ssmClient(optFns ...func(*ssm.Options)) *ssm.Client {
	return ssm.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*ssm.Options){func(o *ssm.Options) {
		o.BaseEndpoint = aws.String(m.Endpoint())
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

func (m *moto) secretsClient(optFns ...func(*secretsmanager.Options)) *secretsmanager.Client {
	return secretsmanager.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*secretsmanager.Options){func(o *secretsmanager.Options) {
		o.BaseEndpoint = aws.String(m.Endpoint())
		o.Retryer = standin.Retryer()
	}}, optFns...)...)
}

func (m *moto) putParameter(t testing.TB, name, value string, typ ssmtypes.ParameterType) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := m.ssmClient().PutParameter(ctx, &ssm.PutParameterInput{Name: aws.String(name), Value: aws.String(value), Type: typ, Overwrite: aws.Bool(true)}); err != nil {
		t.Fatalf("put parameter %s: %v\nmoto_server output:\n%s", name, err, m.Output())
	}
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
