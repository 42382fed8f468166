package codec

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/kafkalambda/toolkit/internal/registrytest"
)

const testAvroSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`

// The schema ID whose answer is 64 MiB: a well-formed answer, with a schema of 64 MiB of
// spaces (codec/glue's tests have the Glue one).
const hugeConfluentID = "5"

// newConfluentServer starts a Confluent Schema Registry holding schemas 1 (Avro), 2
// (Protobuf), 3 (JSON Schema), 4 (Protobuf with a reference) and 5 (huge).
func newConfluentServer(t *testing.T) *registrytest.Confluent {
	cs := registrytest.NewConfluent(t)
	cs.Add(1, registrytest.Schema{Text: testAvroSchema})
	cs.Add(2, registrytest.Schema{Type: "PROTOBUF", Text: "syntax = \"proto3\";\nmessage Order { string id = 1; }\n"})
	cs.Add(3, registrytest.Schema{Type: "JSON", Text: `{"type":"object"}`})
	cs.Add(4, registrytest.Schema{Type: "PROTOBUF", Text: "syntax = \"proto3\";\nimport \"customer.proto\";\nmessage Order { Customer c = 1; }\n",
		References: []registrytest.Reference{{Name: "customer.proto", Subject: "customer-value", Version: 3}}})
	cs.AddHuge(5)
	return cs
}

func newConfluentTestRegistry(t *testing.T, cs *registrytest.Confluent) Registry {
	t.Helper()
	r, err := NewConfluentRegistry(cs.URL)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestRegistryConfluent(t *testing.T) {
	cs := newConfluentServer(t)
	r := newConfluentTestRegistry(t, cs)
	ctx := context.Background()
	for _, c := range []struct{ id, format, prefix string }{
		{"1", FormatAvro, `{"type":"record"`},
		{"2", FormatProtobuf, `syntax = "proto3";`},
		{"3", FormatJSON, `{"type":"object"}`},
	} {
		s, err := r.Schema(ctx, c.id)
		if err != nil {
			t.Fatalf("Schema(%s): %v", c.id, err)
		}
		if s.ID != c.id || s.Format != c.format || !strings.HasPrefix(s.Text, c.prefix) || s.MessageIndexes != nil {
			t.Errorf("Schema(%s) = %+v", c.id, s)
		}
	}

	_, err := r.Schema(ctx, "99")
	want := "codec: schema 99 from " + cs.URL + ": codec: schema not found (HTTP 404, error code 40403: Schema 99 not found)"
	if !errors.Is(err, ErrSchemaNotFound) || err.Error() != want {
		t.Errorf("missing ID: %v\nwant %s", err, want)
	}
	var re *RegistryError
	if !errors.As(err, &re) || re.ID != "99" || re.Registry != cs.URL {
		t.Errorf("missing ID: %#v is not a *RegistryError naming the ID and the registry", err)
	}

	_, err = r.Schema(ctx, "4")
	if !errors.Is(err, errors.ErrUnsupported) || !strings.Contains(err.Error(), "customer.proto (subject customer-value version 3)") {
		t.Errorf("references: %v", err)
	}

	before := cs.Requests()
	for _, bad := range []string{"", "-1", "abc", "2147483648", " 1"} {
		if _, err := r.Schema(ctx, bad); err == nil || errors.Is(err, ErrSchemaNotFound) || !strings.Contains(err.Error(), "schema "+bad+" from") {
			t.Errorf("Schema(%q): %v", bad, err)
		}
	}
	if n := cs.Requests() - before; n != 0 {
		t.Errorf("malformed IDs made %d requests", n)
	}

	// A registry that answers 404 without Confluent's error code (a wrong URL) is not "not found".
	wrong, err := NewConfluentRegistry(cs.URL + "/nowhere")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := wrong.Schema(ctx, "1"); err == nil || errors.Is(err, ErrSchemaNotFound) {
		t.Errorf("wrong URL: %v", err)
	}
}

// stampede asks r for one ID from n goroutines while the server holds the request(s), then
// lets them go.
func stampede(t *testing.T, r Registry, id string, n int, gate chan struct{}, requests func() int64, uncached bool) {
	t.Helper()
	var wg, started sync.WaitGroup
	errs := make(chan error, n)
	started.Add(n)
	for range n {
		wg.Go(func() {
			started.Done()
			s, err := r.Schema(context.Background(), id)
			if err == nil && s.ID != id {
				err = fmt.Errorf("got schema %q", s.ID)
			}
			errs <- err
		})
	}
	started.Wait()
	deadline := time.Now().Add(10 * time.Second)
	if uncached {
		for requests() < int64(n) && time.Now().Before(deadline) {
			time.Sleep(time.Millisecond)
		}
	} else {
		time.Sleep(100 * time.Millisecond) // every goroutine is now waiting on the one request
	}
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestRegistryCachedStampede(t *testing.T) {
	t.Run("confluent", func(t *testing.T) {
		cs := newConfluentServer(t)
		gate := cs.Hold()
		r := Cached(newConfluentTestRegistry(t, cs))
		stampede(t, r, "1", 100, gate, cs.Requests, false)
		if n := cs.Requests(); n != 1 {
			t.Fatalf("100 concurrent misses made %d requests, want 1", n)
		}
		if _, err := r.Schema(context.Background(), "1"); err != nil || cs.Requests() != 1 {
			t.Fatalf("a later call asked again (%d requests) or failed: %v", cs.Requests(), err)
		}
	})
	t.Run("uncached control", func(t *testing.T) {
		// The same stampede without Cached makes one request per call: the test above can fail.
		cs := newConfluentServer(t)
		gate := cs.Hold()
		stampede(t, newConfluentTestRegistry(t, cs), "1", 100, gate, cs.Requests, true)
		if n := cs.Requests(); n != 100 {
			t.Fatalf("uncached: %d requests, want 100", n)
		}
	})
}

func TestRegistryCachedErrorsNotCached(t *testing.T) {
	cs := newConfluentServer(t)
	cs.FailNext(1)
	r := Cached(newConfluentTestRegistry(t, cs))
	ctx := context.Background()
	if _, err := r.Schema(ctx, "1"); err == nil || !strings.Contains(err.Error(), "HTTP 500") || !strings.Contains(err.Error(), "codec: schema 1 from") {
		t.Fatalf("first call: %v, want the HTTP 500", err)
	}
	if _, err := r.Schema(ctx, "99"); !errors.Is(err, ErrSchemaNotFound) {
		t.Fatalf("missing: %v", err)
	}
	if _, err := r.Schema(ctx, "99"); !errors.Is(err, ErrSchemaNotFound) {
		t.Fatalf("missing again: %v", err)
	}
	s, err := r.Schema(ctx, "1")
	if err != nil || s.Format != FormatAvro {
		t.Fatalf("second call: %+v, %v", s, err)
	}
	s.Text = "mutated by a caller"
	s, err = r.Schema(ctx, "1")
	if err != nil || s.Text != testAvroSchema {
		t.Fatalf("third call: %+v, %v", s, err)
	}
	if n := cs.Requests(); n != 4 {
		t.Fatalf("%d requests, want 4 (an error, two misses, one success, then the cache)", n)
	}
	if Cached(r) != r {
		t.Fatal("Cached(Cached(r)) wraps twice")
	}
}

func TestRegistryCachedLeaderCancelled(t *testing.T) {
	// The first caller's context ends while its request is in flight; a second caller sharing
	// that request asks again instead of failing with the first caller's error.
	cs := newConfluentServer(t)
	gate := cs.Hold()
	r := Cached(newConfluentTestRegistry(t, cs))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := r.Schema(ctx, "1"); first <- err }()
	for cs.Requests() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := r.Schema(context.Background(), "1"); second <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "codec: schema 1 from") {
		t.Fatalf("first caller: %v, want context.Canceled naming the ID", err)
	}
	for cs.Requests() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(gate)
	if err := <-second; err != nil {
		t.Fatalf("second caller: %v", err)
	}
}

// TestRegistryAnswerCap: an answer over 4 MiB (here a well-formed one of 64 MiB) is an error
// naming the cap, and the client stops reading there: a registry, or whatever answers at its
// URL, cannot make the function read without end.
func TestRegistryAnswerCap(t *testing.T) {
	ctx := context.Background()
	const want = "the registry's answer is over 4194304 bytes"
	cs := newConfluentServer(t)
	for _, c := range []struct {
		name string
		r    Registry
		id   string
		sent func() int64
	}{
		{"confluent", newConfluentTestRegistry(t, cs), hugeConfluentID, cs.Sent},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, err := c.r.Schema(ctx, c.id)
			var re *RegistryError
			if !errors.Is(err, errAnswerTooLarge) || !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
				var n int
				if s != nil {
					n = len(s.Text)
				}
				t.Fatalf("64 MiB answer: %d-byte schema, error %v; want a *RegistryError saying %q", n, err, want)
			}
			// The server's count is known once its handler has returned.
			deadline := time.Now().Add(10 * time.Second)
			for c.sent() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := c.sent(); n == 0 || n > 16<<20 {
				t.Errorf("the client took %d bytes of the 64 MiB answer", n)
			}
			if _, err := c.r.Schema(ctx, "1"); err != nil {
				t.Errorf("an ordinary answer after the huge one: %v", err)
			}
		})
	}
}

// panicRegistry is a Registry of the caller's that panics.
type panicRegistry struct{}

func (panicRegistry) Schema(context.Context, string) (*Schema, error) { panic("registry boom") }

// A panic of the caller's registry, on the goroutine the cache's request runs on, is the
// request's error: it does not end the process (Lambda Managed Instances: other invocations).
func TestCachedRegistryPanic(t *testing.T) {
	_, err := Cached(panicRegistry{}).Schema(context.Background(), "1")
	var re *RegistryError
	if !errors.As(err, &re) || !strings.Contains(err.Error(), "registry boom") || !strings.Contains(err.Error(), "panicked") {
		t.Fatalf("error %v, want a *RegistryError that says the registry panicked", err)
	}
}
