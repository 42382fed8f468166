package appconfig_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/internal/standin"
	"github.com/kafkalambda/toolkit/limits"
	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/appconfig"
	"github.com/kafkalambda/toolkit/parameters/internal/ptest"
)

var ctx10 = ptest.Ctx10

// appConfigData is a local AppConfig Data API (moto 5.2.1 serves only AppConfig's control
// plane, not this API), written from its reference
// (https://docs.aws.amazon.com/appconfig/2019-10-09/APIReference/API_appconfigdata_StartConfigurationSession.html,
// .../API_appconfigdata_GetLatestConfiguration.html): a session's token is spent by the call
// that uses it (a spent or unknown token is a BadRequestException), each answer gives the
// next token and the poll interval, and the body is empty when the configuration has not
// changed since the session's last answer. Requests must be signed for "appconfig".
type appConfigData struct {
	*httptest.Server
	mu       sync.Mutex
	configs  map[string]string // "app/env/profile" -> configuration
	tokens   map[string]*acSession
	next     int
	interval int // Next-Poll-Interval-In-Seconds
	starts   atomic.Int64
	gets     atomic.Int64
	fault    atomic.Value // "", "blackhole", "throttle"
}

type acSession struct {
	key  string
	sent string // the configuration last answered; "" before the first
	any  bool
}

func newAppConfigData(t *testing.T) *appConfigData {
	s := &appConfigData{configs: map[string]string{}, tokens: map[string]*acSession{}, interval: 30}
	s.fault.Store("")
	s.Server = httptest.NewServer(http.HandlerFunc(s.serve))
	t.Cleanup(s.Close)
	return s
}

func (s *appConfigData) set(key, config string) {
	s.mu.Lock()
	s.configs[key] = config
	s.mu.Unlock()
}

func (s *appConfigData) fail(w http.ResponseWriter, status int, code, msg string) {
	w.Header().Set("X-Amzn-Errortype", code)
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(map[string]string{"Message": msg})
}

func (s *appConfigData) serve(w http.ResponseWriter, r *http.Request) {
	switch s.fault.Load() {
	case "blackhole":
		// Read the body first: the server notices the client hanging up only once it has.
		_, _ = io.Copy(io.Discard, r.Body)
		select {
		case <-r.Context().Done():
		case <-time.After(5 * time.Second):
		}
		return
	case "throttle":
		if r.URL.Path == "/configuration" {
			s.gets.Add(1)
		}
		s.fail(w, http.StatusTooManyRequests, "ThrottlingException", "Rate exceeded")
		return
	}
	if a := r.Header.Get("Authorization"); !strings.HasPrefix(a, "AWS4-HMAC-SHA256 Credential=test/") || !strings.Contains(a, "/us-east-1/appconfig/aws4_request") {
		s.fail(w, http.StatusForbidden, "AccessDeniedException", "unsigned request: "+a)
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch {
	case r.Method == http.MethodPost && r.URL.Path == "/configurationsessions":
		s.starts.Add(1)
		var in struct{ ApplicationIdentifier, EnvironmentIdentifier, ConfigurationProfileIdentifier string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil {
			s.fail(w, http.StatusBadRequest, "BadRequestException", err.Error())
			return
		}
		key := in.ApplicationIdentifier + "/" + in.EnvironmentIdentifier + "/" + in.ConfigurationProfileIdentifier
		if _, ok := s.configs[key]; !ok {
			s.fail(w, http.StatusNotFound, "ResourceNotFoundException", "no profile "+key)
			return
		}
		w.WriteHeader(http.StatusCreated)
		_ = json.NewEncoder(w).Encode(map[string]string{"InitialConfigurationToken": s.token(&acSession{key: key})})
	case r.Method == http.MethodGet && r.URL.Path == "/configuration":
		s.gets.Add(1)
		sess, ok := s.tokens[r.URL.Query().Get("configuration_token")]
		if !ok {
			s.fail(w, http.StatusBadRequest, "BadRequestException", "Request contains an invalid or expired token")
			return
		}
		delete(s.tokens, r.URL.Query().Get("configuration_token"))
		w.Header().Set("Next-Poll-Configuration-Token", s.token(sess))
		w.Header().Set("Next-Poll-Interval-In-Seconds", strconv.Itoa(s.interval))
		w.Header().Set("Content-Type", "application/json")
		if c := s.configs[sess.key]; !sess.any || c != sess.sent {
			sess.sent, sess.any = c, true
			_, _ = w.Write([]byte(c))
		}
	default:
		s.fail(w, http.StatusNotFound, "UnknownOperationException", r.Method+" "+r.URL.Path)
	}
}

func (s *appConfigData) token(sess *acSession) string {
	s.next++
	t := fmt.Sprintf("token-%d", s.next)
	s.tokens[t] = sess
	return t
}

// expire forgets every token, as 24 hours would.
func (s *appConfigData) expire() {
	s.mu.Lock()
	clear(s.tokens)
	s.mu.Unlock()
}

func (s *appConfigData) client() *appconfig.Client {
	cfg := standin.ClientConfig("us-east-1")
	cfg.Retryer = standin.Retryer
	return appconfig.NewClient(cfg, s.URL)
}

type features struct {
	Checkout bool `json:"checkout"`
	Limit    int  `json:"limit"`
}

// TestAppConfig: a profile's configuration as JSON into a type; a token kept per profile
// and spent once; no call before the max age, nor before AppConfig's poll interval; an
// unchanged configuration (an empty answer) keeps the value; a changed one replaces it.
func TestAppConfig(t *testing.T) {
	srv := newAppConfigData(t)
	srv.set("orders/prod/features", `{"checkout":true,"limit":10}`)
	srv.set("orders/prod/other", `plain text`)
	clk := ptest.NewClock()
	p, err := appconfig.New(srv.client(), "orders", "prod", ptest.WithClock(clk))
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	get := func(want features, gets int64) {
		t.Helper()
		f, err := parameters.GetJSON[features](ctx, p, "features")
		if err != nil || f != want || srv.gets.Load() != gets {
			t.Fatalf("GetJSON = %+v, %v after %d GetLatestConfiguration; want %+v after %d", f, err, srv.gets.Load(), want, gets)
		}
	}
	get(features{true, 10}, 1)
	if v, err := p.Get(ctx, "other"); err != nil || v != "plain text" {
		t.Fatalf("Get(other) = %q, %v", v, err)
	}
	if n := srv.starts.Load(); n != 2 {
		t.Fatalf("%d sessions for 2 profiles; want 2", n)
	}
	srv.set("orders/prod/features", `{"checkout":false,"limit":20}`)
	clk.Add(parameters.DefaultMaxAge)
	get(features{true, 10}, 2) // past the max age but within the 30 s poll interval: no call
	clk.Add(30 * time.Second)
	get(features{false, 20}, 3) // the next token, the new configuration
	clk.Add(31 * time.Second)
	get(features{false, 20}, 4) // unchanged: an empty answer keeps the value
	if n := srv.starts.Load(); n != 2 {
		t.Fatalf("%d sessions; want the 2 first, their tokens kept", n)
	}
	srv.expire()
	clk.Add(31 * time.Second)
	get(features{false, 20}, 6) // the token was refused: a new session, once
	if n := srv.starts.Load(); n != 3 {
		t.Fatalf("%d sessions after an expired token; want 3", n)
	}
}

// TestAppConfigErrors: a missing profile is ErrNotFound naming it; a configuration over
// limits.MaxAppConfigConfigurationBytes is ErrTooLarge; bad settings are OptionErrors.
func TestAppConfigErrors(t *testing.T) {
	srv := newAppConfigData(t)
	srv.set("orders/prod/big", strings.Repeat("x", limits.MaxAppConfigConfigurationBytes+1))
	p, err := appconfig.New(srv.client(), "orders", "prod")
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	_, err = p.Get(ctx, "missing")
	var pe *parameters.Error
	if !errors.Is(err, parameters.ErrNotFound) || !errors.As(err, &pe) || pe.Provider != "appconfig" || pe.Name != "missing" {
		t.Fatalf("missing profile: %v", err)
	}
	if _, err := p.Get(ctx, "big"); !errors.Is(err, parameters.ErrTooLarge) || strings.Contains(err.Error(), "xxxx") {
		t.Fatalf("a configuration over the limit: %v", err)
	}
	for _, c := range []struct{ app, env string }{{"", "prod"}, {"orders", ""}, {"orders", "pr\nod"}} {
		if _, err := appconfig.New(srv.client(), c.app, c.env); err == nil {
			t.Errorf("NewAppConfig(%q, %q): no error", c.app, c.env)
		}
	}
	if _, err := appconfig.New(nil, "a", "b"); err == nil {
		t.Error("NewAppConfig(nil): no error")
	}
}

// TestAppConfigFaults: a black-holed call ends by the deadline; a throttled one is retried
// (3 attempts with the test retryer) and then fails saying so.
func TestAppConfigFaults(t *testing.T) {
	srv := newAppConfigData(t)
	srv.interval = 0 // a poll interval would keep Force from calling
	srv.set("orders/prod/features", `{}`)
	p, _ := appconfig.New(srv.client(), "orders", "prod")
	srv.fault.Store("blackhole")
	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	start := time.Now()
	if _, err := p.Get(ctx, "features"); !errors.Is(err, context.DeadlineExceeded) || time.Since(start) > 800*time.Millisecond {
		t.Fatalf("black-holed Get: %v after %v; want DeadlineExceeded after about 300 ms", err, time.Since(start))
	}
	srv.fault.Store("")
	if _, err := p.Get(ctx10(t), "features"); err != nil { // a session and its token
		t.Fatal(err)
	}
	srv.fault.Store("throttle")
	gets := srv.gets.Load()
	_, err := p.Get(ctx10(t), "features", parameters.Force())
	if err == nil || !strings.Contains(err.Error(), "ThrottlingException") || srv.gets.Load()-gets != 3 {
		t.Fatalf("throttled Get: %v after %d attempts; want ThrottlingException after 3", err, srv.gets.Load()-gets)
	}
}
