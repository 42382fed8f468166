package producer

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/twmb/franz-go/pkg/sasl"
	"github.com/twmb/franz-go/pkg/sasl/scram"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

// Bounds of a SCRAM secret.
const (
	// MaxSecretSize is the largest SecretString a SCRAM secret may have: Secrets Manager's own
	// limit on a secret value (65,536 bytes), limits.MaxSecretsManagerSecretBytes, which the
	// Secrets Manager provider (parameters/secrets) enforces.
	MaxSecretSize = limits.MaxSecretsManagerSecretBytes
	// SecretReadTimeout bounds each GetSecretValue call (SDK retries included): the one in
	// [Opts] and each re-read before an authentication.
	SecretReadTimeout = 5 * time.Second
	// SecretRecheckInterval is how long a secret whose credentials have never been accepted is
	// trusted after a refused authentication: a secret that is wrong as read is re-read at
	// most this often, not on every connection attempt.
	SecretRecheckInterval = time.Minute
)

// WithSCRAMSecret authenticates with SASL/SCRAM-SHA-512 over TLS, as [WithSCRAM] does, with the
// user and password of the Secrets Manager secret id (its ARN, or its name): a SecretString that
// is the JSON object {"username": "...", "password": "..."}, the secret an event source
// mapping's SASL_SCRAM_512_AUTH source access configuration names, so one secret serves the
// mapping and the function. Other keys are ignored; a missing or empty username or password,
// a binary secret, or one over [MaxSecretSize] is an error. No error quotes the secret's text,
// not even that of an answer the SDK could not decode (a field of the wrong type).
//
// [Opts] (and so [NewClient]) reads the secret once, with client (a *secretsmanager.Client;
// the read is the Secrets Manager provider's, package parameters/secrets; the function's role needs
// secretsmanager:GetSecretValue on it, and kms:Decrypt when a customer managed key encrypts
// it), so a secret that is missing or unreadable fails the start with a *toolkit.OptionError rather
// than the first produce. The credentials are then kept for the client's life (the execution
// environment's) and never logged. When the broker refuses an authentication made with
// credentials it accepted before (the secret was rotated), the secret is read again before
// the next authentication, and that refusal does not end a [Produce] early; credentials that
// were refused without ever being accepted are read again at most every
// [SecretRecheckInterval]. Each read is bounded by [SecretReadTimeout].
//
// Default: the authentication $KAFKA_AUTH names; with KAFKA_AUTH=scram, the secret is
// $KAFKA_SCRAM_SECRET_ARN, read with a client from the default AWS configuration.
func WithSCRAMSecret(client secrets.API, id string) Option {
	return func(c *config) {
		if client == nil {
			c.errs = append(c.errs, invalid("WithSCRAMSecret", "nil Secrets Manager client"))
			return
		}
		if err := checkSecretID(id); err != nil {
			c.errs = append(c.errs, invalidCause("WithSCRAMSecret", err))
			return
		}
		if c.user != "" {
			c.errs = append(c.errs, invalid("WithSCRAMSecret", "conflicts with WithSCRAM: choose one"))
			return
		}
		c.choose(authSCRAM, "WithSCRAMSecret")
		c.secrets, c.secretID, c.secretFrom = client, id, "WithSCRAMSecret"
	}
}

// checkSecretID checks a SecretId as GetSecretValue takes it: 1 to 2048 characters, no
// control characters or spaces (neither names nor ARNs have them). The provider checks the
// same at each read; checking here makes a mistake the option's, said when the client is made.
func checkSecretID(id string) error {
	switch {
	case id == "":
		return errors.New("empty secret ARN")
	case len(id) > limits.MaxSecretsManagerSecretIDBytes:
		return fmt.Errorf("secret ARN of %d bytes: at most %d", len(id), limits.MaxSecretsManagerSecretIDBytes)
	case strings.ContainsFunc(id, func(r rune) bool { return r <= ' ' || r == 0x7f }):
		return fmt.Errorf("secret ARN %q has a space or control character", id)
	}
	return nil
}

// scramCredentials is the SecretString of a SCRAM secret.
type scramCredentials struct {
	Username string `json:"username"`
	Password string `json:"password"`
}

// parseSCRAMSecret reads a SecretString: a JSON object with non-empty string username and
// password. Errors never quote the secret.
func parseSCRAMSecret(s string) (user, pass string, err error) {
	if len(s) > MaxSecretSize {
		return "", "", fmt.Errorf("secret value of %d bytes: at most %d", len(s), MaxSecretSize)
	}
	var c scramCredentials
	if err := json.Unmarshal([]byte(s), &c); err != nil {
		// The JSON error can quote part of the value: say only what kind of mistake it is.
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return "", "", fmt.Errorf("secret value: %s is not a string", te.Field)
		}
		return "", "", errors.New(`secret value is not a JSON object {"username": ..., "password": ...}`)
	}
	switch {
	case c.Username == "":
		return "", "", errors.New("secret value has no username, or an empty one")
	case c.Password == "":
		return "", "", errors.New("secret value has no password, or an empty one")
	}
	return c.Username, c.Password, nil
}

// secretSCRAM is the SCRAM-SHA-512 mechanism of [WithSCRAMSecret]: the secret's credentials,
// read through the Secrets Manager provider, kept, and read again when an authentication with
// them is refused. It tells a refusal from other connection failures by the connection's
// SCRAM exchange: one that started and did not end with the server's signature verified, on a
// connection that then failed (kgo reports connection failures through connWatch, which calls
// refused).
type secretSCRAM struct {
	secrets *secrets.Provider
	id      string

	mu       sync.Mutex
	user     string
	pass     string
	gen      uint64    // incremented by each successful read
	readAt   time.Time // of the last read attempt, successful or not
	accepted bool      // some authentication with gen's credentials succeeded
	stale    bool      // read again before the next authentication
	pending  map[string]uint64
}

// newSecretSCRAM reads the secret once; its error is the start's.
func newSecretSCRAM(client secrets.API, id string) (*secretSCRAM, error) {
	// The mechanism keeps the credentials itself and reads only when it must (at the start, and
	// after a refusal, with Force): the provider's cache would add nothing, so its max age is
	// zero, set here so that $POWERTOOLS_PARAMETERS_MAX_AGE (the function's own parameters'
	// setting) is not read.
	p, err := secrets.New(client, parameters.WithMaxAge(0), parameters.WithTimeout(SecretReadTimeout))
	if err != nil {
		return nil, err
	}
	s := &secretSCRAM{secrets: p, id: id, pending: map[string]uint64{}}
	s.mu.Lock()
	defer s.mu.Unlock()
	if err := s.readLocked(context.Background()); err != nil {
		return nil, err
	}
	return s, nil
}

// readLocked reads the secret now, whatever was read before (the provider's Force); s.mu is
// held. On failure the credentials held (if any) stay. The provider names the secret in its
// errors, and never quotes its text, not even that of an answer the SDK could not decode.
func (s *secretSCRAM) readLocked(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, SecretReadTimeout)
	defer cancel()
	s.readAt = time.Now()
	text, err := s.secrets.Get(ctx, s.id, parameters.Force())
	switch {
	case errors.Is(err, parameters.ErrType):
		return fmt.Errorf("read secret %s: no SecretString (a SCRAM secret is the JSON text {\"username\": ..., \"password\": ...}, not binary)", s.id)
	case err != nil:
		return fmt.Errorf("read secret: %w", err)
	}
	user, pass, err := parseSCRAMSecret(text)
	if err != nil {
		return fmt.Errorf("secret %s: %w", s.id, err)
	}
	s.user, s.pass, s.gen, s.accepted, s.stale = user, pass, s.gen+1, false, false
	return nil
}

func (*secretSCRAM) Name() string { return "SCRAM-SHA-512" }

// Authenticate starts a SCRAM-SHA-512 exchange with the current credentials, after reading
// the secret again if an authentication refused them.
func (s *secretSCRAM) Authenticate(ctx context.Context, host string) (sasl.Session, []byte, error) {
	s.mu.Lock()
	if s.stale && time.Since(s.readAt) >= time.Second {
		// At most one read a second however many connections retry: a secret that cannot be
		// read fails this attempt, and the cached credentials are tried on the next.
		if err := s.readLocked(ctx); err != nil {
			s.mu.Unlock()
			return nil, nil, err
		}
	}
	user, pass, gen := s.user, s.pass, s.gen
	s.pending[host] = gen
	s.mu.Unlock()
	sess, first, err := scram.Auth{User: user, Pass: pass}.AsSha512Mechanism().Authenticate(ctx, host)
	if err != nil {
		return nil, nil, err
	}
	return &secretSession{Session: sess, s: s, host: host, gen: gen}, first, nil
}

// secretSession marks its credentials accepted when the server's final message verifies.
type secretSession struct {
	sasl.Session
	s    *secretSCRAM
	host string
	gen  uint64
}

func (ss *secretSession) Challenge(resp []byte) (bool, []byte, error) {
	done, out, err := ss.Session.Challenge(resp)
	if done && err == nil {
		ss.s.mu.Lock()
		if ss.s.pending[ss.host] == ss.gen {
			delete(ss.s.pending, ss.host)
		}
		if ss.gen == ss.s.gen {
			ss.s.accepted = true
		}
		ss.s.mu.Unlock()
	}
	return done, out, err
}

// refused is called when a connection to host failed. If a SCRAM exchange on host had started
// and not succeeded, it was refused (or cut short), and refused reports whether new
// credentials will be tried: true when the secret will be read again (or was, since that
// exchange began), false when the credentials are as fresh as they get, and the refusal is
// final for now.
func (s *secretSCRAM) refused(host string) (retrying bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	gen, ok := s.pending[host]
	if !ok {
		return false // no exchange started: the failure is not about the credentials
	}
	delete(s.pending, host)
	switch {
	case gen != s.gen || s.stale:
		return true
	case s.accepted || time.Since(s.readAt) >= SecretRecheckInterval:
		s.stale = true
		return true
	}
	return false
}
