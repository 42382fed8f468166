package paramstore

import (
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/ssm"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/internal/cache"
	"github.com/kafkalambda/toolkit/parameters/internal/errs"
)

const providerSSM = "ssm"

// MaxPathParameters is the most parameters [Provider.GetByPath] returns: a path holding more
// is an error matching [parameters.ErrTooLarge], not a truncated map (at 10 a page, 100 pages).
const MaxPathParameters = 1000

// API is the part of the aws-sdk-go-v2 SSM client (*ssm.Client) that [Provider] uses.
type API interface {
	GetParameter(ctx context.Context, in *ssm.GetParameterInput, optFns ...func(*ssm.Options)) (*ssm.GetParameterOutput, error)
	GetParametersByPath(ctx context.Context, in *ssm.GetParametersByPathInput, optFns ...func(*ssm.Options)) (*ssm.GetParametersByPathOutput, error)
}

// Provider reads parameters of SSM Parameter Store, decrypted (a SecureString's plain text),
// and caches them. Make one per execution environment; it is safe for concurrent use. It is a
// [parameters.Source].
//
// The function's role needs ssm:GetParameter (ssm:GetParametersByPath for a path) on the
// parameters, and kms:Decrypt on the key of a SecureString encrypted with a customer managed
// key.
type Provider struct {
	named  // "ssm", for parameters.GetJSON's errors
	client API
	one    *cache.Cache[string]
	paths  *cache.Cache[map[string]string]
}

// named is cache.Name under an unexported name: embedded, it tells parameters.GetJSON the
// provider's name while adding no exported field or method.
type named = cache.Name

// New returns a provider that reads with client (an *ssm.Client). A nil client or an invalid
// option is a *toolkit.OptionError.
func New(client API, opts ...parameters.Option) (*Provider, error) {
	cfg, err := cache.NewConfig(opts)
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errs.Option("parameters/paramstore", "New", "nil SSM client")
	}
	return &Provider{named: providerSSM, client: client, one: cache.New[string](cfg), paths: cache.New[map[string]string](cfg)}, nil
}

// Get returns the value of the parameter name (its name, path included, or its ARN),
// decrypted. A value over [limits.MaxSSMParameterValueBytes] is an error.
func (p *Provider) Get(ctx context.Context, name string, opts ...parameters.GetOption) (string, error) {
	if err := checkSSMName(name); err != nil {
		return "", errs.Wrap(providerSSM, name, err)
	}
	g := cache.Gets(opts)
	if v, ok := p.one.Cached(name, g); ok {
		return v, nil
	}
	v, err := p.one.Get(ctx, name, g, func(ctx context.Context) (string, error) {
		out, err := p.client.GetParameter(ctx, &ssm.GetParameterInput{Name: aws.String(name), WithDecryption: aws.Bool(true)})
		if err != nil {
			return "", errs.Wrap(providerSSM, name, errs.SDK("GetParameter", err, "ParameterNotFound"))
		}
		if out == nil || out.Parameter == nil || out.Parameter.Value == nil {
			return "", errs.Wrap(providerSSM, name, errors.New("GetParameter: an answer with no value"))
		}
		v := *out.Parameter.Value
		if len(v) > limits.MaxSSMParameterValueBytes {
			return "", errs.Wrap(providerSSM, name, fmt.Errorf("%w: %d bytes, at most %d (limits.MaxSSMParameterValueBytes)", parameters.ErrTooLarge, len(v), limits.MaxSSMParameterValueBytes))
		}
		return v, nil
	})
	return v, errs.Wrap(providerSSM, name, err)
}

// GetBinary returns the value of the parameter name decoded from standard base64, the way a
// binary value is kept in a String parameter (Powertools' transform="binary").
func (p *Provider) GetBinary(ctx context.Context, name string, opts ...parameters.GetOption) ([]byte, error) {
	v, err := p.Get(ctx, name, opts...)
	if err != nil {
		return nil, err
	}
	b, err := base64.StdEncoding.DecodeString(v)
	if err != nil {
		var ce base64.CorruptInputError
		errors.As(err, &ce)
		return nil, &parameters.Error{Provider: providerSSM, Name: name, Err: fmt.Errorf("%w: not standard base64 (at byte %d)", parameters.ErrType, int64(ce))}
	}
	return b, nil
}

// GetByPath returns every parameter under path, recursively, decrypted, keyed by its name
// with path and the "/" after it taken off ("/app/db/url" under "/app" is "db/url"), as
// Powertools' get_parameters returns them. It reads every page; a path with more than
// [MaxPathParameters] parameters, or a value over [limits.MaxSSMParameterValueBytes], is an
// error rather than a partial map. The map is the cache's: do not change it.
func (p *Provider) GetByPath(ctx context.Context, path string, opts ...parameters.GetOption) (map[string]string, error) {
	if err := checkSSMPath(path); err != nil {
		return nil, errs.Wrap(providerSSM, path, err)
	}
	g := cache.Gets(opts)
	if m, ok := p.paths.Cached(path, g); ok {
		return m, nil
	}
	m, err := p.paths.Get(ctx, path, g, func(ctx context.Context) (map[string]string, error) {
		m := map[string]string{}
		prefix := strings.TrimSuffix(path, "/") + "/"
		var next *string
		for page := 0; ; page++ {
			out, err := p.client.GetParametersByPath(ctx, &ssm.GetParametersByPathInput{
				Path: aws.String(path), Recursive: aws.Bool(true), WithDecryption: aws.Bool(true),
				MaxResults: aws.Int32(limits.MaxSSMGetParametersByPathResults), NextToken: next,
			})
			if err != nil {
				return nil, errs.SDK("GetParametersByPath", err, "ParameterNotFound")
			}
			for _, prm := range out.Parameters {
				name, v := aws.ToString(prm.Name), aws.ToString(prm.Value)
				if len(v) > limits.MaxSSMParameterValueBytes {
					return nil, fmt.Errorf("%w: parameter %s of %d bytes, at most %d (limits.MaxSSMParameterValueBytes)", parameters.ErrTooLarge, name, len(v), limits.MaxSSMParameterValueBytes)
				}
				if len(m) >= MaxPathParameters {
					return nil, fmt.Errorf("%w: more than %d parameters under the path (MaxPathParameters)", parameters.ErrTooLarge, MaxPathParameters)
				}
				m[strings.TrimPrefix(name, prefix)] = v
			}
			if aws.ToString(out.NextToken) == "" {
				return m, nil
			}
			if next != nil && *next == *out.NextToken {
				return nil, errors.New("GetParametersByPath: the same NextToken twice (the pages would never end)")
			}
			next = out.NextToken
		}
	})
	return m, errs.Wrap(providerSSM, path, err)
}

// Invalidate drops the cached value of name, a parameter's name or a path: the next Get or
// GetByPath of it fetches at once. Call it when a value was refused (a password that no
// longer works).
func (p *Provider) Invalidate(name string) {
	p.one.Invalidate(name)
	p.paths.Invalidate(name)
}

// checkSSMName checks a parameter name as GetParameter takes it, so that a mistake is said
// before a call: not empty, at most [limits.MaxSSMParameterNameBytes] bytes, no space or control
// character, at most [limits.MaxSSMParameterPathDepth] levels. A version or label selector
// ("name:3", "name:label") passes, as SSM takes it.
func checkSSMName(name string) error {
	switch {
	case name == "":
		return errors.New("empty parameter name")
	case len(name) > limits.MaxSSMParameterNameBytes:
		return fmt.Errorf("parameter name of %d bytes: at most %d", len(name), limits.MaxSSMParameterNameBytes)
	case strings.ContainsFunc(name, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("parameter name has a space or control character")
	case !strings.HasPrefix(name, "arn:") && strings.Count(name, "/") > limits.MaxSSMParameterPathDepth:
		return fmt.Errorf("parameter name of %d levels: at most %d", strings.Count(name, "/"), limits.MaxSSMParameterPathDepth)
	}
	return nil
}

// checkSSMPath checks a path as GetParametersByPath takes it: a name that starts with "/".
func checkSSMPath(path string) error {
	if !strings.HasPrefix(path, "/") {
		return errors.New(`a path starts with "/"`)
	}
	return checkSSMName(path)
}
