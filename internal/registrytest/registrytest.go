// Package registrytest runs schema registries for tests, on real HTTP servers (httptest) that
// speak the registries' own protocols, so that the code under test goes through its real
// client: [Confluent], a Confluent Schema Registry (its REST API: GET /schemas/ids/{id},
// subjects and versions), and [Glue], the AWS Glue Schema Registry's GetSchemaVersion (AWS JSON
// 1.1 protocol, SigV4-signed requests). A test registers the schemas it needs, then points a
// client at the server's URL.
//
// Both servers can be made to misbehave as real ones do: hold requests until the test lets them
// go ([Confluent.Hold]), fail the next requests with HTTP 500 ([Confluent.FailNext]), answer
// one ID with a 64 MiB schema ([Confluent.AddHuge]), or stop (Close: connections are refused).
//
// The package imports no package of the module: codec's own tests use it.
package registrytest

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
)

// Schema is a schema as a registry keeps it.
type Schema struct {
	// Type is the Confluent schemaType: "AVRO" (also when ""), "PROTOBUF" or "JSON". For Glue
	// it is the DataFormat, the same three names; "" is AVRO.
	Type string
	// Text is the schema document: Avro JSON, .proto source or JSON Schema.
	Text string
	// References are the other subjects the schema refers to (Confluent only).
	References []Reference
}

// Reference is a Confluent schema reference: a name the schema imports, and the subject and
// version that hold it.
type Reference struct {
	Name    string `json:"name"`
	Subject string `json:"subject"`
	Version int    `json:"version"`
}

// HugeSize is the size of the schema of an ID added with AddHuge: 64 MiB of spaces.
const HugeSize = 64 << 20

// hugeAnswer writes prefix, HugeSize bytes of spaces and suffix to w, and returns how many
// bytes the client took before it hung up.
func hugeAnswer(w http.ResponseWriter, prefix, suffix string) int64 {
	chunk := []byte(strings.Repeat(" ", 64<<10))
	n, err := io.WriteString(w, prefix)
	sent := int64(n)
	for i := 0; i < HugeSize/len(chunk) && err == nil; i++ {
		n, err = w.Write(chunk)
		sent += int64(n)
	}
	if err == nil {
		n, _ = io.WriteString(w, suffix)
		sent += int64(n)
	}
	return sent
}

// writeJSON writes v as the JSON body of an answer with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v) // an error is a client that hung up: nothing to tell it
}
