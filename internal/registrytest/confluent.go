package registrytest

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
)

// Confluent is a Confluent Schema Registry on an httptest server, speaking the documented REST
// API (https://docs.confluent.io/platform/current/schema-registry/develop/api.html) for:
//
//   - GET /schemas/ids/{id}: {"schema": ..., "schemaType": ..., "references": [...]}, schemaType
//     left out for AVRO; an unknown ID is HTTP 404 with error code 40403;
//   - GET /schemas/ids/{id}/schema: the schema document alone;
//   - GET /schemas/ids/{id}/versions: the subjects and versions that have the schema;
//   - GET /subjects: the subjects;
//   - POST /subjects/{subject}/versions: registers a schema under the subject, {"id": N}; the
//     same schema registered again keeps its ID;
//   - GET /subjects/{subject}/versions/{version|latest}: {"subject", "version", "id", "schema",
//     "schemaType"}; an unknown subject is 40401, an unknown version 40402.
//
// Anything else is HTTP 404 with error code 404, as an unknown path is on the real registry.
// Answers have Content-Type application/vnd.schemaregistry.v1+json.
type Confluent struct {
	*httptest.Server

	requests atomic.Int64
	failNext atomic.Int64 // this many requests fail with HTTP 500 first
	sent     atomic.Int64 // bytes of the last huge answer the client took

	mu       sync.Mutex
	gate     chan struct{} // when not nil, requests wait for it to close
	schemas  map[int]Schema
	huge     map[int]bool
	subjects map[string][]int // subject -> schema IDs by version (version = index+1)
	nextID   int
}

// NewConfluent starts a Confluent Schema Registry with no schemas; it is closed when the test
// ends.
func NewConfluent(t testing.TB) *Confluent {
	c := &Confluent{schemas: map[int]Schema{}, huge: map[int]bool{}, subjects: map[string][]int{}, nextID: 1}
	c.Server = httptest.NewServer(http.HandlerFunc(c.serve))
	t.Cleanup(c.Close)
	return c
}

// Add registers s under id, replacing what id had; later Register calls take IDs above it.
func (c *Confluent) Add(id int, s Schema) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.schemas[id] = s
	c.nextID = max(c.nextID, id+1)
}

// Register registers s as the next version of subject ("" for none) and returns its ID: a new
// one, or the ID it already has when the same schema was registered before, as the registry
// does.
func (c *Confluent) Register(subject string, s Schema) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.register(subject, s)
}

func (c *Confluent) register(subject string, s Schema) int {
	id := 0
	for k, v := range c.schemas {
		if v.Type == s.Type && v.Text == s.Text && slices.Equal(v.References, s.References) {
			id = k
			break
		}
	}
	if id == 0 {
		id = c.nextID
		c.nextID++
		c.schemas[id] = s
	}
	if subject != "" && !slices.Contains(c.subjects[subject], id) {
		c.subjects[subject] = append(c.subjects[subject], id)
	}
	return id
}

// AddHuge makes the answer for id a well-formed one whose schema is HugeSize bytes of spaces.
func (c *Confluent) AddHuge(id int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.huge[id] = true
}

// Requests is the number of requests the server has had.
func (c *Confluent) Requests() int64 { return c.requests.Load() }

// FailNext makes the next n requests fail with HTTP 500, error code 50001.
func (c *Confluent) FailNext(n int) { c.failNext.Store(int64(n)) }

// Sent is how many bytes of the last huge answer the client took before it hung up; 0 until
// that answer's handler returned.
func (c *Confluent) Sent() int64 { return c.sent.Load() }

// Hold makes requests from now on wait until the returned channel is closed (or the client
// gives up). Close the channel to let them, and every later request, go.
func (c *Confluent) Hold() chan struct{} {
	g := make(chan struct{})
	c.mu.Lock()
	c.gate = g
	c.mu.Unlock()
	return g
}

// confluentError writes the registry's error answer.
func confluentError(w http.ResponseWriter, status, code int, msg string) {
	writeJSON(w, status, map[string]any{"error_code": code, "message": msg})
}

func (c *Confluent) serve(w http.ResponseWriter, r *http.Request) {
	c.requests.Add(1)
	c.mu.Lock()
	gate := c.gate
	c.mu.Unlock()
	if gate != nil {
		select {
		case <-gate:
		case <-r.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/vnd.schemaregistry.v1+json")
	if c.failNext.Add(-1) >= 0 {
		confluentError(w, http.StatusInternalServerError, 50001, "Error in the backend data store")
		return
	}
	parts := strings.Split(strings.Trim(r.URL.Path, "/"), "/")
	switch {
	case r.Method == http.MethodGet && len(parts) >= 3 && len(parts) <= 4 && parts[0] == "schemas" && parts[1] == "ids" &&
		(len(parts) == 3 || parts[3] == "schema"):
		c.serveID(w, parts[2], len(parts) == 4)
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "schemas" && parts[1] == "ids" && parts[3] == "versions":
		c.serveUsages(w, parts[2])
	case r.Method == http.MethodGet && len(parts) == 1 && parts[0] == "subjects":
		c.mu.Lock()
		names := make([]string, 0, len(c.subjects))
		for s := range c.subjects {
			names = append(names, s)
		}
		c.mu.Unlock()
		slices.Sort(names)
		writeJSON(w, http.StatusOK, names)
	case r.Method == http.MethodPost && len(parts) == 3 && parts[0] == "subjects" && parts[2] == "versions":
		c.serveRegister(w, r, parts[1])
	case r.Method == http.MethodGet && len(parts) == 4 && parts[0] == "subjects" && parts[2] == "versions":
		c.serveVersion(w, parts[1], parts[3])
	default:
		confluentError(w, http.StatusNotFound, 404, "HTTP 404 Not Found")
	}
}

func (c *Confluent) serveID(w http.ResponseWriter, idText string, bare bool) {
	id, err := strconv.Atoi(idText)
	c.mu.Lock()
	s, ok := c.schemas[id]
	huge := c.huge[id]
	c.mu.Unlock()
	switch {
	case err == nil && huge:
		c.sent.Store(hugeAnswer(w, `{"schema":"`, `"}`))
	case err != nil || !ok:
		confluentError(w, http.StatusNotFound, 40403, fmt.Sprintf("Schema %s not found", idText))
	case bare:
		w.WriteHeader(http.StatusOK)
		_, _ = io.WriteString(w, s.Text)
	default:
		writeJSON(w, http.StatusOK, confluentAnswer(s, nil))
	}
}

// confluentAnswer is the JSON of s, with the fields of extra.
func confluentAnswer(s Schema, extra map[string]any) map[string]any {
	out := map[string]any{"schema": s.Text}
	if s.Type != "" && s.Type != "AVRO" {
		out["schemaType"] = s.Type
	}
	if len(s.References) > 0 {
		out["references"] = s.References
	}
	for k, v := range extra {
		out[k] = v
	}
	return out
}

func (c *Confluent) serveRegister(w http.ResponseWriter, r *http.Request, subject string) {
	var in struct {
		Schema     string      `json:"schema"`
		SchemaType string      `json:"schemaType"`
		References []Reference `json:"references"`
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, 8<<20))
	if err == nil {
		err = json.Unmarshal(body, &in)
	}
	if err != nil || in.Schema == "" {
		confluentError(w, http.StatusUnprocessableEntity, 42201, fmt.Sprintf("Invalid schema: %v", err))
		return
	}
	if in.SchemaType == "AVRO" {
		in.SchemaType = ""
	}
	c.mu.Lock()
	id := c.register(subject, Schema{Type: in.SchemaType, Text: in.Schema, References: in.References})
	c.mu.Unlock()
	writeJSON(w, http.StatusOK, map[string]int{"id": id})
}

func (c *Confluent) serveVersion(w http.ResponseWriter, subject, version string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	ids, ok := c.subjects[subject]
	if !ok {
		confluentError(w, http.StatusNotFound, 40401, fmt.Sprintf("Subject '%s' not found.", subject))
		return
	}
	v := len(ids)
	if version != "latest" {
		n, err := strconv.Atoi(version)
		if err != nil || n < 1 || n > len(ids) {
			confluentError(w, http.StatusNotFound, 40402, fmt.Sprintf("Version %s not found.", version))
			return
		}
		v = n
	}
	id := ids[v-1]
	writeJSON(w, http.StatusOK, confluentAnswer(c.schemas[id], map[string]any{"subject": subject, "version": v, "id": id}))
}

func (c *Confluent) serveUsages(w http.ResponseWriter, idText string) {
	id, err := strconv.Atoi(idText)
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.schemas[id]; err != nil || !ok {
		confluentError(w, http.StatusNotFound, 40403, fmt.Sprintf("Schema %s not found", idText))
		return
	}
	type usage struct {
		Subject string `json:"subject"`
		Version int    `json:"version"`
	}
	out := []usage{}
	for subject, ids := range c.subjects {
		for i, x := range ids {
			if x == id {
				out = append(out, usage{subject, i + 1})
			}
		}
	}
	slices.SortFunc(out, func(a, b usage) int { return strings.Compare(a.Subject, b.Subject) })
	writeJSON(w, http.StatusOK, out)
}
