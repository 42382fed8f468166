package codec

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/glue"
)

const testAvroSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`

// confluentServer is a Confluent Schema Registry speaking the documented REST API for
// GET /schemas/ids/{id}: the schema, its schemaType (omitted for AVRO) and references; an
// unknown ID is HTTP 404 with error code 40403.
type confluentServer struct {
	*httptest.Server
	requests atomic.Int64
	gate     chan struct{} // when not nil, requests wait for it to close
	failNext atomic.Int64  // this many requests fail with HTTP 500 first
	sent     atomic.Int64  // bytes of the last huge answer the client took
}

// The schema IDs whose answers are 64 MiB: a well-formed answer, with a schema of 64 MiB of
// spaces.
const (
	hugeConfluentID = "5"
	hugeGlueID      = "55555555-5555-5555-5555-555555555555"
)

// hugeAnswer writes prefix, 64 MiB of spaces and suffix to w, and returns how many bytes the
// client took before it hung up.
func hugeAnswer(w http.ResponseWriter, prefix, suffix string) int64 {
	chunk := []byte(strings.Repeat(" ", 64<<10))
	n, err := io.WriteString(w, prefix)
	sent := int64(n)
	for i := 0; i < 1024 && err == nil; i++ {
		n, err = w.Write(chunk)
		sent += int64(n)
	}
	if err == nil {
		n, _ = io.WriteString(w, suffix)
		sent += int64(n)
	}
	return sent
}

func newConfluentServer(t *testing.T) *confluentServer {
	cs := &confluentServer{}
	schemas := map[string]map[string]any{
		"1": {"schema": testAvroSchema},
		"2": {"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\nmessage Order { string id = 1; }\n"},
		"3": {"schemaType": "JSON", "schema": `{"type":"object"}`},
		"4": {"schemaType": "PROTOBUF", "schema": "syntax = \"proto3\";\nimport \"customer.proto\";\nmessage Order { Customer c = 1; }\n",
			"references": []map[string]any{{"name": "customer.proto", "subject": "customer-value", "version": 3}}},
	}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.requests.Add(1)
		if cs.gate != nil {
			select {
			case <-cs.gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
		id, ok := strings.CutPrefix(r.URL.Path, "/schemas/ids/")
		if r.Method != http.MethodGet || !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error_code":404,"message":"HTTP 404 Not Found"}`)
			return
		}
		if cs.failNext.Add(-1) >= 0 {
			w.WriteHeader(http.StatusInternalServerError)
			fmt.Fprintf(w, `{"error_code":50001,"message":"Error in the backend data store"}`)
			return
		}
		if id == hugeConfluentID {
			cs.sent.Store(hugeAnswer(w, `{"schema":"`, `"}`))
			return
		}
		s, ok := schemas[id]
		if !ok {
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprintf(w, `{"error_code":40403,"message":"Schema %s not found"}`, id)
			return
		}
		json.NewEncoder(w).Encode(s)
	}))
	t.Cleanup(cs.Close)
	return cs
}

func newConfluentTestRegistry(t *testing.T, cs *confluentServer) Registry {
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

	before := cs.requests.Load()
	for _, bad := range []string{"", "-1", "abc", "2147483648", " 1"} {
		if _, err := r.Schema(ctx, bad); err == nil || errors.Is(err, ErrSchemaNotFound) || !strings.Contains(err.Error(), "schema "+bad+" from") {
			t.Errorf("Schema(%q): %v", bad, err)
		}
	}
	if n := cs.requests.Load() - before; n != 0 {
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
		cs.gate = make(chan struct{})
		r := Cached(newConfluentTestRegistry(t, cs))
		stampede(t, r, "1", 100, cs.gate, cs.requests.Load, false)
		if n := cs.requests.Load(); n != 1 {
			t.Fatalf("100 concurrent misses made %d requests, want 1", n)
		}
		if _, err := r.Schema(context.Background(), "1"); err != nil || cs.requests.Load() != 1 {
			t.Fatalf("a later call asked again (%d requests) or failed: %v", cs.requests.Load(), err)
		}
	})
	t.Run("glue", func(t *testing.T) {
		gs := newGlueServer(t)
		gs.gate = make(chan struct{})
		r := Cached(NewGlueRegistry(newGlueTestClient(gs)))
		stampede(t, r, testUUID, 100, gs.gate, gs.requests.Load, false)
		if n := gs.requests.Load(); n != 1 {
			t.Fatalf("100 concurrent misses made %d requests, want 1", n)
		}
	})
	t.Run("uncached control", func(t *testing.T) {
		// The same stampede without Cached makes one request per call: the test above can fail.
		cs := newConfluentServer(t)
		cs.gate = make(chan struct{})
		stampede(t, newConfluentTestRegistry(t, cs), "1", 100, cs.gate, cs.requests.Load, true)
		if n := cs.requests.Load(); n != 100 {
			t.Fatalf("uncached: %d requests, want 100", n)
		}
	})
}

func TestRegistryCachedErrorsNotCached(t *testing.T) {
	cs := newConfluentServer(t)
	cs.failNext.Store(1)
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
	if n := cs.requests.Load(); n != 4 {
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
	cs.gate = make(chan struct{})
	r := Cached(newConfluentTestRegistry(t, cs))
	ctx, cancel := context.WithCancel(context.Background())
	first := make(chan error, 1)
	go func() { _, err := r.Schema(ctx, "1"); first <- err }()
	for cs.requests.Load() == 0 {
		time.Sleep(time.Millisecond)
	}
	second := make(chan error, 1)
	go func() { _, err := r.Schema(context.Background(), "1"); second <- err }()
	time.Sleep(20 * time.Millisecond)
	cancel()
	if err := <-first; !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "codec: schema 1 from") {
		t.Fatalf("first caller: %v, want context.Canceled naming the ID", err)
	}
	for cs.requests.Load() < 2 {
		time.Sleep(time.Millisecond)
	}
	close(cs.gate)
	if err := <-second; err != nil {
		t.Fatalf("second caller: %v", err)
	}
}

// glueServer answers the AWS JSON 1.1 protocol of AWS Glue for GetSchemaVersion (POST /,
// X-Amz-Target: AWSGlue.GetSchemaVersion); an unknown SchemaVersionId is HTTP 400 with the
// EntityNotFoundException error type.
type glueServer struct {
	*httptest.Server
	requests atomic.Int64
	gate     chan struct{}
	sent     atomic.Int64 // bytes of the last huge answer the client took
}

func newGlueServer(t *testing.T) *glueServer {
	gs := &glueServer{}
	gs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		gs.requests.Add(1)
		if gs.gate != nil {
			select {
			case <-gs.gate:
			case <-r.Context().Done():
				return
			}
		}
		w.Header().Set("Content-Type", "application/x-amz-json-1.1")
		fail := func(status int, typ, msg string) {
			w.Header().Set("X-Amzn-ErrorType", typ)
			w.WriteHeader(status)
			json.NewEncoder(w).Encode(map[string]string{"__type": typ, "Message": msg})
		}
		if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSGlue.GetSchemaVersion" ||
			r.Header.Get("Content-Type") != "application/x-amz-json-1.1" ||
			!strings.HasPrefix(r.Header.Get("Authorization"), "AWS4-HMAC-SHA256 Credential=AKIDTEST/") {
			fail(http.StatusBadRequest, "InvalidInputException", fmt.Sprintf("unexpected request %s %s target %q", r.Method, r.URL, r.Header.Get("X-Amz-Target")))
			return
		}
		var in struct{ SchemaVersionId string }
		body, _ := io.ReadAll(r.Body)
		if err := json.Unmarshal(body, &in); err != nil {
			fail(http.StatusBadRequest, "InvalidInputException", err.Error())
			return
		}
		if in.SchemaVersionId == hugeGlueID {
			gs.sent.Store(hugeAnswer(w, `{"DataFormat":"AVRO","SchemaVersionId":"`+hugeGlueID+`","SchemaDefinition":"`, `"}`))
			return
		}
		var format, def string
		switch in.SchemaVersionId {
		case testUUID:
			format, def = "AVRO", testAvroSchema
		case "22222222-2222-2222-2222-222222222222":
			format, def = "PROTOBUF", "syntax = \"proto3\";\nmessage Order { string id = 1; }\n"
		case "33333333-3333-3333-3333-333333333333":
			format, def = "JSON", `{"type":"object"}`
		default:
			fail(http.StatusBadRequest, "EntityNotFoundException", "Schema version is not found.")
			return
		}
		json.NewEncoder(w).Encode(map[string]any{
			"SchemaVersionId":  in.SchemaVersionId,
			"SchemaDefinition": def,
			"DataFormat":       format,
			"SchemaArn":        "arn:aws:glue:us-east-1:123456789012:schema/registry/orders",
			"VersionNumber":    1,
			"Status":           "AVAILABLE",
			"CreatedTime":      "2025-06-20T10:00:00.000Z",
		})
	}))
	t.Cleanup(gs.Close)
	return gs
}

func newGlueTestClient(gs *glueServer) *glue.Client {
	return glue.New(glue.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(gs.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", ""),
		RetryMaxAttempts: 1,
	})
}

func TestRegistryGlue(t *testing.T) {
	gs := newGlueServer(t)
	r := NewGlueRegistry(newGlueTestClient(gs))
	ctx := context.Background()
	for _, c := range []struct{ id, format, prefix string }{
		{testUUID, FormatAvro, `{"type":"record"`},
		{"22222222-2222-2222-2222-222222222222", FormatProtobuf, `syntax = "proto3";`},
		{"33333333-3333-3333-3333-333333333333", FormatJSON, `{"type":"object"}`},
	} {
		s, err := r.Schema(ctx, c.id)
		if err != nil {
			t.Fatalf("Schema(%s): %v", c.id, err)
		}
		if s.ID != c.id || s.Format != c.format || !strings.HasPrefix(s.Text, c.prefix) {
			t.Errorf("Schema(%s) = %+v", c.id, s)
		}
	}

	const missing = "99999999-9999-9999-9999-999999999999"
	_, err := r.Schema(ctx, missing)
	var re *RegistryError
	if !errors.Is(err, ErrSchemaNotFound) || !errors.As(err, &re) || re.ID != missing ||
		!strings.HasPrefix(err.Error(), "codec: schema "+missing+" from AWS Glue Schema Registry: codec: schema not found: ") {
		t.Errorf("missing ID: %v", err)
	}

	before := gs.requests.Load()
	for _, bad := range []string{"", "1", "12345678123412341234123456789012"} {
		if _, err := r.Schema(ctx, bad); err == nil || errors.Is(err, ErrSchemaNotFound) || !strings.Contains(err.Error(), "not a Glue schema version ID") {
			t.Errorf("Schema(%q): %v", bad, err)
		}
	}
	if n := gs.requests.Load() - before; n != 0 {
		t.Errorf("malformed IDs made %d requests", n)
	}
	if _, err := NewGlueRegistry(nil).Schema(ctx, testUUID); err == nil {
		t.Error("a nil client gave no error")
	}
}

// TestRegistryAnswerCap: an answer over 4 MiB (here a well-formed one of 64 MiB) is an error
// naming the cap, and the client stops reading there: a registry, or whatever answers at its
// URL, cannot make the function read without end.
func TestRegistryAnswerCap(t *testing.T) {
	ctx := context.Background()
	const want = "the registry's answer is over 4194304 bytes"
	cs := newConfluentServer(t)
	gs := newGlueServer(t)
	for _, c := range []struct {
		name string
		r    Registry
		id   string
		sent *atomic.Int64
	}{
		{"confluent", newConfluentTestRegistry(t, cs), hugeConfluentID, &cs.sent},
		{"glue", NewGlueRegistry(newGlueTestClient(gs)), hugeGlueID, &gs.sent},
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
			for c.sent.Load() == 0 && time.Now().Before(deadline) {
				time.Sleep(10 * time.Millisecond)
			}
			if n := c.sent.Load(); n == 0 || n > 16<<20 {
				t.Errorf("the client took %d bytes of the 64 MiB answer", n)
			}
			if _, err := c.r.Schema(ctx, map[string]string{"confluent": "1", "glue": testUUID}[c.name]); err != nil {
				t.Errorf("an ordinary answer after the huge one: %v", err)
			}
		})
	}
}
