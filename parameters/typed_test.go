package parameters_test

import (
	"context"
	"errors"
	"testing"

	"github.com/kafkalambda/toolkit/parameters"
)

// mapSource is a Source of the caller's own: values from a map, no cache.
type mapSource map[string]string

func (m mapSource) Get(_ context.Context, name string, _ ...parameters.GetOption) (string, error) {
	v, ok := m[name]
	if !ok {
		return "", &parameters.Error{Provider: "map", Name: name, Err: parameters.ErrNotFound}
	}
	return v, nil
}

func (m mapSource) GetBinary(ctx context.Context, name string, opts ...parameters.GetOption) ([]byte, error) {
	v, err := m.Get(ctx, name, opts...)
	return []byte(v), err
}

func (mapSource) Invalidate(string) {}

// TestGetJSONOfAnySource: GetJSON decodes the value of any Source; a value that is not the
// JSON of T is an *Error matching ErrType that names the name (and "source" for a Source that
// is none of the toolkit's providers), and an error of the Source is returned as it is.
func TestGetJSONOfAnySource(t *testing.T) {
	src := mapSource{"ok": `{"port":5432}`, "bad": `{"port":"x-Quokka"}`, "empty": ""}
	type conf struct {
		Port int `json:"port"`
	}
	ctx := context.Background()
	if c, err := parameters.GetJSON[conf](ctx, src, "ok"); err != nil || c.Port != 5432 {
		t.Fatalf("GetJSON(ok) = %+v, %v", c, err)
	}
	for _, name := range []string{"bad", "empty"} {
		_, err := parameters.GetJSON[conf](ctx, src, name)
		var pe *parameters.Error
		if !errors.Is(err, parameters.ErrType) || !errors.As(err, &pe) || pe.Provider != "source" || pe.Name != name {
			t.Fatalf("GetJSON(%s): %v; want an *Error of source %s matching ErrType", name, err, name)
		}
		if errors.Is(err, parameters.ErrNotFound) {
			t.Fatalf("GetJSON(%s): %v matches ErrNotFound", name, err)
		}
	}
	_, err := parameters.GetJSON[conf](ctx, src, "missing")
	var pe *parameters.Error
	if !errors.Is(err, parameters.ErrNotFound) || !errors.As(err, &pe) || pe.Provider != "map" {
		t.Fatalf("GetJSON(missing): %v; want the Source's own error", err)
	}
}
