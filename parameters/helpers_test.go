package parameters_test

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"
	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/parameters"
)

// clock is a test's time: it moves only when told.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func newClock() *clock { return &clock{t: time.Unix(1_800_000_000, 0)} }

func (c *clock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) add(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

// countingSSM counts the calls made through it to the real client, and holds each call at
// gate (when set) until it is closed, so that concurrent Gets meet one call in flight.
type countingSSM struct {
	parameters.SSMAPI
	get, byPath atomic.Int64
	gate        chan struct{}
}

func (c *countingSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	c.get.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.SSMAPI.GetParameter(ctx, in, optFns...)
}

func (c *countingSSM) GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	c.byPath.Add(1)
	return c.SSMAPI.GetParametersByPath(ctx, in, optFns...)
}

type countingSecrets struct {
	parameters.SecretsManagerAPI
	n atomic.Int64
}

func (c *countingSecrets) GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error) {
	c.n.Add(1)
	return c.SecretsManagerAPI.GetSecretValue(ctx, in, optFns...)
}

// jsonValue answers every GetParameter with one JSON object.
type jsonValue struct{ endlessPages }

func (jsonValue) GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	v := `{"username":"app","password":"pw","port":5432}`
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: &v}}, nil
}
