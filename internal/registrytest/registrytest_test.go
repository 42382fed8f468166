package registrytest

import (
	"context"
	"errors"
	"io"
	"net/http"
	"testing"

	"github.com/twmb/franz-go/pkg/sr"
)

// TestConfluentWithSRClient drives the registry with franz-go's Schema Registry client, as a
// producer's serializer does: register under a subject, read back by ID and by version, and
// the registry's error codes for what it does not have.
func TestConfluentWithSRClient(t *testing.T) {
	c := NewConfluent(t)
	cl, err := sr.NewClient(sr.URLs(c.URL))
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	avro := sr.Schema{Schema: `{"type":"string"}`}
	ss, err := cl.CreateSchema(ctx, "orders-value", avro)
	if err != nil || ss.ID != 1 || ss.Version != 1 || ss.Subject != "orders-value" {
		t.Fatalf("CreateSchema: %+v, %v", ss, err)
	}
	pb := sr.Schema{Schema: "syntax = \"proto3\";\nmessage M {}\n", Type: sr.TypeProtobuf}
	if ss, err := cl.CreateSchema(ctx, "orders-value", pb); err != nil || ss.ID != 2 || ss.Version != 2 {
		t.Fatalf("second version: %+v, %v", ss, err)
	}
	if ss, err := cl.CreateSchema(ctx, "orders-value", avro); err != nil || ss.ID != 1 {
		t.Fatalf("the same schema again: %+v, %v (want its ID kept)", ss, err)
	}
	if s, err := cl.SchemaByID(ctx, 2); err != nil || s.Type != sr.TypeProtobuf || s.Schema != pb.Schema {
		t.Fatalf("SchemaByID(2): %+v, %v", s, err)
	}
	if s, err := cl.SchemaByVersion(ctx, "orders-value", -1); err != nil || s.ID != 2 || s.Version != 2 {
		t.Fatalf("latest: %+v, %v", s, err)
	}
	if subjects, err := cl.Subjects(ctx); err != nil || len(subjects) != 1 || subjects[0] != "orders-value" {
		t.Fatalf("Subjects: %v, %v", subjects, err)
	}
	var re *sr.ResponseError
	if _, err := cl.SchemaByID(ctx, 9); !errors.As(err, &re) || re.ErrorCode != 40403 {
		t.Errorf("unknown ID: %v, want error code 40403", err)
	}
	if _, err := cl.SchemaByVersion(ctx, "nope", 1); !errors.As(err, &re) || re.ErrorCode != 40401 {
		t.Errorf("unknown subject: %v, want error code 40401", err)
	}
	c.FailNext(1)
	if _, err := cl.SchemaByID(ctx, 1); !errors.As(err, &re) || re.StatusCode != http.StatusInternalServerError {
		t.Errorf("FailNext: %v, want HTTP 500", err)
	}
	resp, err := http.Get(c.URL + "/schemas/ids/1/schema")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != avro.Schema {
		t.Errorf("/schemas/ids/1/schema: %q", body)
	}
}
