package secrets

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/secretsmanager"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/internal/cache"
	"github.com/kafkalambda/toolkit/parameters/internal/errs"
)

const providerSecrets = "secretsmanager"

// API is the part of the aws-sdk-go-v2 Secrets Manager client (*secretsmanager.Client) that
// [Provider] uses, and that producer.WithSCRAMSecret takes.
type API interface {
	GetSecretValue(ctx context.Context, in *secretsmanager.GetSecretValueInput, optFns ...func(*secretsmanager.Options)) (*secretsmanager.GetSecretValueOutput, error)
}

// Provider reads the current version (AWSCURRENT) of Secrets Manager secrets and caches
// them. Make one per execution environment; it is safe for concurrent use. It is a
// [parameters.Source].
//
// The function's role needs secretsmanager:GetSecretValue on the secrets, and kms:Decrypt on
// the key of a secret encrypted with a customer managed key.
type Provider struct {
	named  // "secretsmanager", for parameters.GetJSON's errors
	client API
	c      *cache.Cache[secret]
}

// named is cache.Name under an unexported name: embedded, it tells parameters.GetJSON the
// provider's name while adding no exported field or method.
type named = cache.Name

// secret is a SecretString or a SecretBinary.
type secret struct {
	text   string
	bin    []byte
	binary bool
}

// New returns a provider that reads with client (a *secretsmanager.Client). A nil client or
// an invalid option is a *toolkit.OptionError.
func New(client API, opts ...parameters.Option) (*Provider, error) {
	cfg, err := cache.NewConfig(opts)
	if err != nil {
		return nil, err
	}
	if client == nil {
		return nil, errs.Option("parameters/secrets", "New", "nil Secrets Manager client")
	}
	return &Provider{named: providerSecrets, client: client, c: cache.New[secret](cfg)}, nil
}

// Get returns the SecretString of the secret id (its name or ARN). A binary secret is an
// error matching [parameters.ErrType]; a value over [limits.MaxSecretsManagerSecretBytes] one matching
// [parameters.ErrTooLarge].
func (p *Provider) Get(ctx context.Context, id string, opts ...parameters.GetOption) (string, error) {
	s, err := p.get(ctx, id, opts)
	if err != nil {
		return "", err
	}
	if s.binary {
		return "", &parameters.Error{Provider: providerSecrets, Name: id, Err: fmt.Errorf("%w: a binary secret (SecretBinary): use GetBinary", parameters.ErrType)}
	}
	return s.text, nil
}

// GetBinary returns the SecretBinary of the secret id (the SDK has decoded the base64 of the
// wire), or the bytes of its SecretString. The slice is the cache's: do not change it.
func (p *Provider) GetBinary(ctx context.Context, id string, opts ...parameters.GetOption) ([]byte, error) {
	s, err := p.get(ctx, id, opts)
	if err != nil {
		return nil, err
	}
	if s.binary {
		return s.bin, nil
	}
	return []byte(s.text), nil
}

func (p *Provider) get(ctx context.Context, id string, opts []parameters.GetOption) (secret, error) {
	if err := checkSecretID(id); err != nil {
		return secret{}, errs.Wrap(providerSecrets, id, err)
	}
	g := cache.Gets(opts)
	if s, ok := p.c.Cached(id, g); ok {
		return s, nil
	}
	s, err := p.c.Get(ctx, id, g, func(ctx context.Context) (secret, error) {
		out, err := p.client.GetSecretValue(ctx, &secretsmanager.GetSecretValueInput{SecretId: aws.String(id)}, secretRegion(id))
		if err != nil {
			return secret{}, errs.Wrap(providerSecrets, id, errs.SDK("GetSecretValue", err, "ResourceNotFoundException"))
		}
		var s secret
		switch {
		case out == nil:
			return secret{}, errs.Wrap(providerSecrets, id, errors.New("GetSecretValue: an empty answer"))
		case out.SecretString != nil:
			s.text = *out.SecretString
		case out.SecretBinary != nil:
			s.bin, s.binary = out.SecretBinary, true
		default:
			return secret{}, errs.Wrap(providerSecrets, id, errors.New("GetSecretValue: neither SecretString nor SecretBinary"))
		}
		if n := len(s.text) + len(s.bin); n > limits.MaxSecretsManagerSecretBytes {
			return secret{}, errs.Wrap(providerSecrets, id, fmt.Errorf("%w: %d bytes, at most %d (limits.MaxSecretsManagerSecretBytes)", parameters.ErrTooLarge, n, limits.MaxSecretsManagerSecretBytes))
		}
		return s, nil
	})
	return s, errs.Wrap(providerSecrets, id, err)
}

// Invalidate drops the cached value of the secret id: the next Get fetches at once. Call it
// when the secret's credentials were refused (the secret was rotated).
func (p *Provider) Invalidate(id string) { p.c.Invalidate(id) }

// secretRegion sends a request for a secret's ARN to the ARN's region, whatever the client's.
func secretRegion(id string) func(*secretsmanager.Options) {
	parts := strings.SplitN(id, ":", 7)
	if len(parts) != 7 || parts[0] != "arn" || parts[2] != "secretsmanager" || parts[5] != "secret" || parts[3] == "" {
		return func(*secretsmanager.Options) {}
	}
	return func(o *secretsmanager.Options) { o.Region = parts[3] }
}

// checkSecretID checks a SecretId as GetSecretValue takes it: 1 to
// [limits.MaxSecretsManagerSecretIDBytes] characters, no space or control character.
func checkSecretID(id string) error {
	switch {
	case id == "":
		return errors.New("empty secret ID")
	case len(id) > limits.MaxSecretsManagerSecretIDBytes:
		return fmt.Errorf("secret ID of %d bytes: at most %d", len(id), limits.MaxSecretsManagerSecretIDBytes)
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return errors.New("secret ID has a space or control character")
	}
	return nil
}
