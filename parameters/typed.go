package parameters

import (
	"context"
	"encoding/json"

	"github.com/kafkalambda/toolkit/parameters/internal/cache"
)

// Source is a provider as the typed getters use it: paramstore.Provider, secrets.Provider and
// appconfig.Provider are Sources.
type Source interface {
	// GetBinary returns the value's bytes: the decoded base64 of an SSM parameter, a secret's
	// SecretBinary (or its SecretString's bytes), a configuration's bytes.
	GetBinary(ctx context.Context, name string, opts ...GetOption) ([]byte, error)
	// Get returns the value as text.
	Get(ctx context.Context, name string, opts ...GetOption) (string, error)
	// Invalidate drops name's cached value: the next Get of it fetches at once.
	Invalidate(name string)
}

// GetJSON returns the value of name in s, read as the JSON of T with encoding/json (Powertools'
// transform="json"). The cache holds the text, so T is decoded at each call: keep the result
// if it is used often. An error is an *Error matching [ErrType] that says where the JSON
// went wrong, never what it held.
func GetJSON[T any](ctx context.Context, s Source, name string, opts ...GetOption) (T, error) {
	var v T
	text, err := s.Get(ctx, name, opts...)
	if err != nil {
		return v, err
	}
	if err := decodeJSON(text, &v); err != nil {
		return v, &Error{Provider: cache.NameOf(s), Name: name, Err: err}
	}
	return v, nil
}

func decodeJSON(text string, v any) error {
	if text == "" {
		return jsonError(errEmpty)
	}
	if err := json.Unmarshal([]byte(text), v); err != nil {
		return jsonError(err)
	}
	return nil
}
