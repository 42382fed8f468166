package glue

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	awsglue "github.com/aws/aws-sdk-go-v2/service/glue"

	"github.com/kafkalambda/toolkit/codec"
	"github.com/kafkalambda/toolkit/codec/internal/answercap"
	"github.com/kafkalambda/toolkit/internal/registrytest"
)

const (
	testAvroSchema = `{"type":"record","name":"Order","fields":[{"name":"id","type":"string"}]}`
	testUUID       = "12345678-1234-1234-1234-123456789012"
	// hugeGlueID's answer is 64 MiB: a well-formed answer, with a schema of 64 MiB of spaces.
	hugeGlueID = "55555555-5555-5555-5555-555555555555"
)

// newGlueServer starts a Glue Schema Registry holding schema versions testUUID (Avro),
// 2222... (Protobuf), 3333... (JSON Schema) and hugeGlueID, that takes requests signed with
// the access key AKIDTEST only.
func newGlueServer(t *testing.T) *registrytest.Glue {
	gs := registrytest.NewGlue(t)
	gs.AccessKey = "AKIDTEST"
	gs.Add(testUUID, registrytest.Schema{Type: "AVRO", Text: testAvroSchema})
	gs.Add("22222222-2222-2222-2222-222222222222", registrytest.Schema{Type: "PROTOBUF", Text: "syntax = \"proto3\";\nmessage Order { string id = 1; }\n"})
	gs.Add("33333333-3333-3333-3333-333333333333", registrytest.Schema{Type: "JSON", Text: `{"type":"object"}`})
	gs.AddHuge(hugeGlueID)
	return gs
}

func newGlueTestClient(gs *registrytest.Glue) *awsglue.Client {
	return awsglue.New(awsglue.Options{
		Region:           "us-east-1",
		BaseEndpoint:     aws.String(gs.URL),
		Credentials:      credentials.NewStaticCredentialsProvider("AKIDTEST", "SECRET", ""),
		RetryMaxAttempts: 1,
	})
}

func TestRegistry(t *testing.T) {
	gs := newGlueServer(t)
	r := NewRegistry(newGlueTestClient(gs))
	ctx := context.Background()
	for _, c := range []struct{ id, format, prefix string }{
		{testUUID, codec.FormatAvro, `{"type":"record"`},
		{"22222222-2222-2222-2222-222222222222", codec.FormatProtobuf, `syntax = "proto3";`},
		{"33333333-3333-3333-3333-333333333333", codec.FormatJSON, `{"type":"object"}`},
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
	var re *codec.RegistryError
	if !errors.Is(err, codec.ErrSchemaNotFound) || !errors.As(err, &re) || re.ID != missing ||
		!strings.HasPrefix(err.Error(), "codec: schema "+missing+" from AWS Glue Schema Registry: codec: schema not found: ") {
		t.Errorf("missing ID: %v", err)
	}

	before := gs.Requests()
	for _, bad := range []string{"", "1", "12345678123412341234123456789012"} {
		if _, err := r.Schema(ctx, bad); err == nil || errors.Is(err, codec.ErrSchemaNotFound) || !strings.Contains(err.Error(), "not a Glue schema version ID") {
			t.Errorf("Schema(%q): %v", bad, err)
		}
	}
	if n := gs.Requests() - before; n != 0 {
		t.Errorf("malformed IDs made %d requests", n)
	}
	if _, err := NewRegistry(nil).Schema(ctx, testUUID); err == nil {
		t.Error("a nil client gave no error")
	}
}

// TestCachedStampede: 100 concurrent misses on one ID of a cached Glue registry make one
// request.
func TestCachedStampede(t *testing.T) {
	gs := newGlueServer(t)
	gate := gs.Hold()
	r := codec.Cached(NewRegistry(newGlueTestClient(gs)))
	const n = 100
	var wg, started sync.WaitGroup
	errs := make(chan error, n)
	started.Add(n)
	for range n {
		wg.Go(func() {
			started.Done()
			s, err := r.Schema(context.Background(), testUUID)
			if err == nil && s.ID != testUUID {
				err = fmt.Errorf("got schema %q", s.ID)
			}
			errs <- err
		})
	}
	started.Wait()
	time.Sleep(100 * time.Millisecond) // every goroutine is now waiting on the one request
	close(gate)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := gs.Requests(); n != 1 {
		t.Fatalf("100 concurrent misses made %d requests, want 1", n)
	}
}

// TestAnswerCap: an answer over 4 MiB (here a well-formed one of 64 MiB) is an error naming
// the cap, and the client stops reading there.
func TestAnswerCap(t *testing.T) {
	ctx := context.Background()
	const want = "the registry's answer is over 4194304 bytes"
	gs := newGlueServer(t)
	r := NewRegistry(newGlueTestClient(gs))
	s, err := r.Schema(ctx, hugeGlueID)
	var re *codec.RegistryError
	if !errors.Is(err, answercap.ErrTooLarge) || !errors.As(err, &re) || !strings.Contains(err.Error(), want) {
		var n int
		if s != nil {
			n = len(s.Text)
		}
		t.Fatalf("64 MiB answer: %d-byte schema, error %v; want a *codec.RegistryError saying %q", n, err, want)
	}
	// The server's count is known once its handler has returned.
	deadline := time.Now().Add(10 * time.Second)
	for gs.Sent() == 0 && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	if n := gs.Sent(); n == 0 || n > 16<<20 {
		t.Errorf("the client took %d bytes of the 64 MiB answer", n)
	}
	if _, err := r.Schema(ctx, testUUID); err != nil {
		t.Errorf("an ordinary answer after the huge one: %v", err)
	}
}
