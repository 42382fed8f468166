package secrets_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/internal/faulthttp"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

const opGetSecretValue = "secretsmanager.GetSecretValue"

// TestBlackHoleEndsByDeadline: a Secrets Manager that never answers ends the Get by the
// caller's deadline, with an *Error that names the secret and wraps DeadlineExceeded.
func TestBlackHoleEndsByDeadline(t *testing.T) {
	m := startMoto(t)
	m.createSecret(t, "fault/hole", "v", nil)
	ft := faulthttp.New(nil, faulthttp.Rule{Op: opGetSecretValue, Fault: faulthttp.BlackHole})
	p, err := secrets.New(m.secretsClient(func(o *secretsmanager.Options) { o.HTTPClient = ft.Client() }))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	_, err = p.Get(ctx, "fault/hole")
	took := time.Since(start)
	var pe *parameters.Error
	if !errors.Is(err, context.DeadlineExceeded) || !errors.As(err, &pe) || pe.Name != "fault/hole" {
		t.Fatalf("black-holed Get: %v; want an *Error naming fault/hole, wrapping DeadlineExceeded", err)
	}
	if took > 300*time.Millisecond+500*time.Millisecond {
		t.Fatalf("black-holed Get took %v; want about the 300 ms deadline", took)
	}
	if ft.Faults(opGetSecretValue) < 1 {
		t.Fatal("no call reached the black hole")
	}
}
