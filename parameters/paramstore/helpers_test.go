package paramstore_test

import (
	"context"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/service/ssm"
	ssmtypes "github.com/aws/aws-sdk-go-v2/service/ssm/types"

	"github.com/kafkalambda/toolkit/parameters/internal/ptest"
	"github.com/kafkalambda/toolkit/parameters/paramstore"
)

var (
	newClock  = ptest.NewClock
	withClock = ptest.WithClock
	ctx10     = ptest.Ctx10
)

// countingSSM counts the calls made through it to the real client, and holds each call at
// gate (when set) until it is closed, so that concurrent Gets meet one call in flight.
type countingSSM struct {
	paramstore.API
	get, byPath atomic.Int64
	gate        chan struct{}
}

func (c *countingSSM) GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	c.get.Add(1)
	if c.gate != nil {
		<-c.gate
	}
	return c.API.GetParameter(ctx, in, optFns...)
}

func (c *countingSSM) GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error) {
	c.byPath.Add(1)
	return c.API.GetParametersByPath(ctx, in, optFns...)
}

// jsonValue answers every GetParameter with one JSON object.
type jsonValue struct{ endlessPages }

func (jsonValue) GetParameter(context.Context, *ssm.GetParameterInput, ...func(*ssm.Options)) (*ssm.GetParameterOutput, error) {
	v := `{"username":"app","password":"pw","port":5432}`
	return &ssm.GetParameterOutput{Parameter: &ssmtypes.Parameter{Value: &v}}, nil
}

type dbCreds struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Port     int    `json:"port"`
}
