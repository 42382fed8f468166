package secrets_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/parameters"
	"github.com/kafkalambda/toolkit/parameters/secrets"
)

type dbCreds struct {
	Username string `json:"username"`
	Password string `json:"password"`
	Port     int    `json:"port"`
}

// TestSecrets: a SecretString, a SecretBinary, JSON into a type, and the errors of a binary
// secret read as text, of JSON of another shape, and of a missing secret, none quoting the value.
func TestSecrets(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "secrets/db", `{"username":"app","password":"pw-Quokka-42","port":5432}`, nil)
	m.createSecret(t, "secrets/key", "", []byte{0xde, 0xad, 0xbe, 0xef})
	m.createSecret(t, "secrets/bad-json", `{"username":"app","password":"pw-Quokka-42","port":"not-a-port-Wombat"}`, nil)
	p, err := secrets.New(m.secretsClient())
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	for _, id := range []string{"secrets/db", arn} {
		got, err := parameters.GetJSON[dbCreds](ctx, p, id)
		if err != nil || got != (dbCreds{"app", "pw-Quokka-42", 5432}) {
			t.Fatalf("GetJSON(%s) = %+v, %v", id, got, err)
		}
	}
	if b, err := p.GetBinary(ctx, "secrets/key"); err != nil || string(b) != "\xde\xad\xbe\xef" {
		t.Fatalf("GetBinary(secrets/key) = %x, %v", b, err)
	}
	if b, err := p.GetBinary(ctx, "secrets/db"); err != nil || !strings.HasPrefix(string(b), `{"username"`) {
		t.Fatalf("GetBinary of a SecretString = %q, %v; want its bytes", b, err)
	}
	if _, err := p.Get(ctx, "secrets/key"); !errors.Is(err, parameters.ErrType) {
		t.Fatalf("Get of a binary secret: %v; want ErrType", err)
	}
	_, err = parameters.GetJSON[dbCreds](ctx, p, "secrets/bad-json")
	var pe *parameters.Error
	if !errors.Is(err, parameters.ErrType) || !errors.As(err, &pe) || pe.Provider != "secretsmanager" || pe.Name != "secrets/bad-json" {
		t.Fatalf("GetJSON of JSON of another shape: %v; want an *Error of secretsmanager secrets/bad-json matching ErrType", err)
	}
	if s := err.Error(); strings.Contains(s, "Quokka") || strings.Contains(s, "Wombat") {
		t.Fatalf("the error quotes the secret: %s", s)
	}
	_, err = parameters.GetJSON[dbCreds](ctx, p, "secrets/key") // binary, not text
	if !errors.Is(err, parameters.ErrType) {
		t.Fatalf("GetJSON of a binary secret: %v", err)
	}
	if _, err := p.Get(ctx, "secrets/missing"); !errors.Is(err, parameters.ErrNotFound) || !strings.Contains(err.Error(), "secrets/missing") {
		t.Fatalf("Get of a missing secret: %v; want ErrNotFound naming it", err)
	}
}

// TestSecretRotation: a rotated secret is served from the cache until the caller says the
// value was refused (Invalidate); the next Get reads the new one, with one call.
func TestSecretRotation(t *testing.T) {
	m := startMoto(t)
	arn := m.createSecret(t, "rotation/db", `{"username":"app","password":"old"}`, nil)
	c := &countingSecrets{API: m.secretsClient()}
	p, err := secrets.New(c)
	if err != nil {
		t.Fatal(err)
	}
	ctx := ctx10(t)
	pass := func() string {
		t.Helper()
		v, err := parameters.GetJSON[dbCreds](ctx, p, arn)
		if err != nil {
			t.Fatal(err)
		}
		return v.Password
	}
	if got := pass(); got != "old" {
		t.Fatalf("password %q; want old", got)
	}
	m.rotate(t, arn, `{"username":"app","password":"new"}`)
	if got := pass(); got != "old" || c.n.Load() != 1 {
		t.Fatalf("within the max age: password %q after %d calls; want old, 1 call", got, c.n.Load())
	}
	p.Invalidate(arn) // the database refused "old"
	if got := pass(); got != "new" || c.n.Load() != 2 {
		t.Fatalf("after Invalidate: password %q after %d calls; want new, 2 calls", got, c.n.Load())
	}
}
