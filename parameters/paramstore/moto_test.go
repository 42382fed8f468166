package paramstore_test

import (
	"context"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/parameters/internal/ptest"
)

// The tests share one moto_server (ptest.Moto), a real local SSM Parameter Store, started on
// first use and stopped here.
func TestMain(m *testing.M) { ptest.Main(m) }

type moto struct{ *standin.Moto }

func startMoto(t testing.TB) *moto {
	t.Helper()
	return &moto{ptest.Moto(t)}
}

// ssmClient is a client of the server: static test credentials, us-east-1, standin's retryer
// (3 attempts, backoff at most 100 ms). optFns run last.
func (m *moto) ssmClient(optFns ...func(*ssm.Options)) *ssm.Client {
	return ssm.NewFromConfig(standin.ClientConfig("us-east-1"), append([]func(*ssm.Options){func(o *ssm.Options) {
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
