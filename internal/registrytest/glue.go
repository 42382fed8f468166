package registrytest

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Glue is the AWS Glue Schema Registry's GetSchemaVersion on an httptest server: the AWS JSON
// 1.1 protocol (POST /, X-Amz-Target: AWSGlue.GetSchemaVersion, a SigV4-signed request),
// answering a SchemaVersionId with its SchemaDefinition and DataFormat. An unknown ID is HTTP
// 400 with the EntityNotFoundException error type; any other request, or one not signed
// (with AccessKey, when set), is InvalidInputException. Point a client at it with the
// client's BaseEndpoint set to URL.
type Glue struct {
	*httptest.Server

	// AccessKey, when not "", is the access key ID requests must be signed with.
	AccessKey string

	requests atomic.Int64
	sent     atomic.Int64

	mu       sync.Mutex
	gate     chan struct{}
	versions map[string]Schema
	huge     map[string]bool
}

// NewGlue starts a Glue Schema Registry with no schema versions; it is closed when the test
// ends.
func NewGlue(t testing.TB) *Glue {
	g := &Glue{versions: map[string]Schema{}, huge: map[string]bool{}}
	g.Server = httptest.NewServer(http.HandlerFunc(g.serve))
	t.Cleanup(g.Close)
	return g
}

// Add registers s as the schema version id (a UUID in canonical form).
func (g *Glue) Add(id string, s Schema) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.versions[id] = s
}

// AddHuge makes the answer for id a well-formed one whose SchemaDefinition is HugeSize bytes
// of spaces.
func (g *Glue) AddHuge(id string) {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.huge[id] = true
}

// Requests is the number of requests the server has had.
func (g *Glue) Requests() int64 { return g.requests.Load() }

// Sent is how many bytes of the last huge answer the client took before it hung up.
func (g *Glue) Sent() int64 { return g.sent.Load() }

// Hold makes requests from now on wait until the returned channel is closed.
func (g *Glue) Hold() chan struct{} {
	c := make(chan struct{})
	g.mu.Lock()
	g.gate = c
	g.mu.Unlock()
	return c
}

func (g *Glue) serve(w http.ResponseWriter, r *http.Request) {
	g.requests.Add(1)
	g.mu.Lock()
	gate := g.gate
	g.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/x-amz-json-1.1")
	fail := func(status int, typ, msg string) {
		w.Header().Set("X-Amzn-ErrorType", typ)
		writeJSON(w, status, map[string]string{"__type": typ, "Message": msg})
	}
	auth := "AWS4-HMAC-SHA256 Credential=" + g.AccessKey
	if g.AccessKey != "" {
		auth += "/"
	}
	if r.Method != http.MethodPost || r.Header.Get("X-Amz-Target") != "AWSGlue.GetSchemaVersion" ||
		r.Header.Get("Content-Type") != "application/x-amz-json-1.1" || !strings.HasPrefix(r.Header.Get("Authorization"), auth) {
		fail(http.StatusBadRequest, "InvalidInputException", "unexpected request "+r.Method+" "+r.URL.String()+" target "+r.Header.Get("X-Amz-Target"))
		return
	}
	var in struct{ SchemaVersionId string }
	body, err := io.ReadAll(io.LimitReader(r.Body, 1<<20))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil {
		fail(http.StatusBadRequest, "InvalidInputException", err.Error())
		return
	}
	g.mu.Lock()
	s, ok := g.versions[in.SchemaVersionId]
	huge := g.huge[in.SchemaVersionId]
	g.mu.Unlock()
	switch {
	case huge:
		g.sent.Store(hugeAnswer(w, `{"DataFormat":"AVRO","SchemaVersionId":"`+in.SchemaVersionId+`","SchemaDefinition":"`, `"}`))
		return
	case !ok:
		fail(http.StatusBadRequest, "EntityNotFoundException", "Schema version is not found.")
		return
	}
	format := s.Type
	if format == "" {
		format = "AVRO"
	}
	writeJSON(w, http.StatusOK, map[string]any{
		"SchemaVersionId":  in.SchemaVersionId,
		"SchemaDefinition": s.Text,
		"DataFormat":       format,
		"SchemaArn":        "arn:aws:glue:us-east-1:123456789012:schema/registry/orders",
		"VersionNumber":    1,
		"Status":           "AVAILABLE",
		"CreatedTime":      "2025-06-20T10:00:00.000Z",
	})
}
