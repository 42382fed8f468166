package appconfig

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/internal/cache"
	"github.com/kafkalambda/toolkit/parameters/internal/errs"
)

const providerAppConfig = "appconfig"

// API is the AppConfig Data API as [Provider] uses it: its two calls, with the fields the
// provider reads. [NewClient] speaks it to AWS.
//
// It is not the SDK's *appconfigdata.Client: the toolkit speaks the API's two calls itself
// rather than require the module github.com/aws/aws-sdk-go-v2/service/appconfigdata. An
// adapter over that client is ten lines: StartConfigurationSession returns
// out.InitialConfigurationToken; GetLatestConfiguration returns out.Configuration,
// out.NextPollConfigurationToken and out.NextPollIntervalInSeconds.
type API interface {
	// StartConfigurationSession starts a session of the configuration profile of application
	// in environment and returns its first token.
	StartConfigurationSession(ctx context.Context, in Session) (token string, err error)
	// GetLatestConfiguration returns the configuration if it changed since the session's
	// last call (empty if not), the token for the next call and how long to wait before it.
	GetLatestConfiguration(ctx context.Context, token string) (Latest, error)
}

// Session is what StartConfigurationSession takes.
type Session struct {
	Application, Environment, Profile string // names or IDs
	// MinPollInterval is RequiredMinimumPollIntervalInSeconds: 15 s to 24 h; zero leaves
	// AppConfig's default (60 s).
	MinPollInterval time.Duration
}

// Latest is what GetLatestConfiguration answers.
type Latest struct {
	Configuration []byte        // empty when unchanged since the session's last call
	NextToken     string        // Next-Poll-Configuration-Token
	PollInterval  time.Duration // Next-Poll-Interval-In-Seconds
	ContentType   string
}

// Provider reads the configurations of one application in one environment from AppConfig
// (its AppConfig Data API), one session per configuration profile, and caches them. A
// configuration is fetched again once the max age has passed and AppConfig's poll interval
// too (a call sooner is one AppConfig refuses), and a configuration that has not changed
// keeps the value held. Make one per execution environment; it is safe for concurrent use. It
// is a [parameters.Source].
//
// The function's role needs appconfig:StartConfigurationSession and
// appconfig:GetLatestConfiguration on the configuration profiles.
type Provider struct {
	named            // "appconfig", for parameters.GetJSON's errors
	client           API
	application, env string
	c                *cache.Cache[[]byte]

	mu       sync.Mutex
	sessions map[string]*appConfigSession
}

// named is cache.Name under an unexported name: embedded, it tells parameters.GetJSON the
// provider's name while adding no exported field or method.
type named = cache.Name

// appConfigSession is a profile's token, kept between calls as the API requires, and the
// last configuration it returned.
type appConfigSession struct {
	mu       sync.Mutex // one call at a time uses the token, even when Force starts a second fetch
	token    string
	last     []byte
	notUntil time.Time // the poll interval: no call before
}

// New returns a provider of application's configurations in environment (names or IDs), read
// with client (a [Client] of [NewClient]). A nil client, an empty application or environment,
// or an invalid option is a *toolkit.OptionError.
func New(client API, application, environment string, opts ...parameters.Option) (*Provider, error) {
	cfg, err := cache.NewConfig(opts)
	if err != nil {
		return nil, err
	}
	switch {
	case client == nil:
		return nil, errs.Option("parameters/appconfig", "New", "nil AppConfig Data client")
	case checkID(application) != nil:
		return nil, errs.Option("parameters/appconfig", "New", "application: "+checkID(application).Error())
	case checkID(environment) != nil:
		return nil, errs.Option("parameters/appconfig", "New", "environment: "+checkID(environment).Error())
	}
	return &Provider{named: providerAppConfig, client: client, application: application, env: environment, c: cache.New[[]byte](cfg), sessions: map[string]*appConfigSession{}}, nil
}

// Get returns the configuration of profile as text. A configuration over
// [limits.MaxAppConfigConfigurationBytes] is an error.
func (p *Provider) Get(ctx context.Context, profile string, opts ...parameters.GetOption) (string, error) {
	b, err := p.GetBinary(ctx, profile, opts...)
	return string(b), err
}

// GetBinary returns the configuration of profile. The slice is the cache's: do not change it.
func (p *Provider) GetBinary(ctx context.Context, profile string, opts ...parameters.GetOption) ([]byte, error) {
	if err := checkID(profile); err != nil {
		return nil, errs.Wrap(providerAppConfig, profile, err)
	}
	g := cache.Gets(opts)
	if b, ok := p.c.Cached(profile, g); ok {
		return b, nil
	}
	b, err := p.c.Get(ctx, profile, g, func(ctx context.Context) ([]byte, error) { return p.fetch(ctx, profile) })
	return b, errs.Wrap(providerAppConfig, profile, err)
}

// Invalidate drops the cached configuration of profile: the next Get fetches it, as soon as
// AppConfig's poll interval allows.
func (p *Provider) Invalidate(profile string) { p.c.Invalidate(profile) }

// fetch runs under the cache's single flight for profile, so one call at a time uses a token.
func (p *Provider) fetch(ctx context.Context, profile string) ([]byte, error) {
	p.mu.Lock()
	s := p.sessions[profile]
	if s == nil {
		s = &appConfigSession{}
		p.sessions[profile] = s
	}
	p.mu.Unlock()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.last != nil && p.c.Now().Before(s.notUntil) {
		return s.last, nil
	}
	for attempt := 0; ; attempt++ {
		if s.token == "" {
			tok, err := p.client.StartConfigurationSession(ctx, Session{Application: p.application, Environment: p.env, Profile: profile})
			if err != nil {
				return nil, fmt.Errorf("StartConfigurationSession: %w", err)
			}
			if tok == "" {
				return nil, errors.New("StartConfigurationSession: an answer with no token")
			}
			s.token = tok
		}
		out, err := p.client.GetLatestConfiguration(ctx, s.token)
		if err != nil {
			// A token expires after 24 hours, and one that was spent is refused: start a new
			// session once, and fail if that does not help.
			var ae *APIError
			if attempt == 0 && errors.As(err, &ae) && ae.Code == "BadRequestException" {
				s.token = ""
				continue
			}
			return nil, fmt.Errorf("GetLatestConfiguration: %w", err)
		}
		s.token = out.NextToken // empty: the next fetch starts a new session
		s.notUntil = p.c.Now().Add(out.PollInterval)
		if len(out.Configuration) > limits.MaxAppConfigConfigurationBytes {
			return nil, fmt.Errorf("%w: %d bytes, at most %d (limits.MaxAppConfigConfigurationBytes)", parameters.ErrTooLarge, len(out.Configuration), limits.MaxAppConfigConfigurationBytes)
		}
		if len(out.Configuration) > 0 || s.last == nil {
			s.last = append([]byte{}, out.Configuration...)
		}
		return s.last, nil
	}
}

// checkID checks an application, environment or profile name or ID: 1 to 128
// characters (AppConfig's limit on names), no control characters.
func checkID(id string) error {
	switch {
	case id == "":
		return errors.New("empty name")
	case len(id) > 128:
		return fmt.Errorf("name of %d bytes: at most 128", len(id))
	case strings.ContainsFunc(id, func(r rune) bool { return r < ' ' || r == 0x7f }):
		return errors.New("name has a control character")
	}
	return nil
}
