package metrics

import (
	"context"
	"encoding/json"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/internal/invocation"
)

type recorderKey struct{}

type dimension struct{ name, value string }

type metric struct {
	name       string
	unit       Unit
	resolution Resolution
	values     []float64
	first      [1]float64 // values' array while the metric has one value: most have one
}

type metadatum struct {
	key  string
	json []byte
}

// recorder is one invocation's metrics, dimensions and metadata, from Start to Flush. Its
// mutex lets the goroutines of one invocation (batch's concurrent records) add at once.
type recorder struct {
	m           *Metrics
	info        invocation.Info
	mu          sync.Mutex
	coldPending bool

	metrics  []*metric
	byName   map[string]*metric // from the (smallMetrics+1)th metric on; below, metrics is searched
	slab     []metric           // where metrics are allocated, 16 at a time
	held     int                // values held in metrics
	dims     []dimension        // AddDimension's, in the base set after the defaults
	sets     [][]dimension
	meta     []metadatum
	metaSize int
}

func from(ctx context.Context) (*recorder, error) {
	r, ok := ctx.Value(recorderKey{}).(*recorder)
	if !ok {
		return nil, ErrNotStarted
	}
	return r, nil
}

// Add records value for the metric name, in unit, at standard (60 s) resolution, in the
// invocation of ctx. Adding a name again adds a value to it (EMF's array of values), in the
// unit and resolution it was first added with. An invalid name, unit or value is an
// *InvalidError, and nothing is recorded.
func Add(ctx context.Context, name string, unit Unit, value float64) error {
	return AddWithResolution(ctx, name, unit, Standard, value)
}

// AddWithResolution is Add with a storage resolution: High (1 s) or Standard (60 s).
func AddWithResolution(ctx context.Context, name string, unit Unit, res Resolution, value float64) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	bad := func(reason string) error { return &InvalidError{Call: "Add", Name: name, Reason: reason} }
	if reason := checkText("metric name", name, maxNameLength); reason != "" {
		return bad(reason)
	}
	if !unit.known() {
		return bad("unit " + strconv.Quote(string(unit)) + " is not a CloudWatch unit")
	}
	if res != Standard && res != High {
		return bad("resolution " + strconv.Itoa(int(res)) + " is neither 1 (High) nor 60 (Standard)")
	}
	if reason := checkValue(value); reason != "" {
		return bad(reason)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.held >= maxHeldValues {
		return bad("the invocation holds " + strconv.Itoa(maxHeldValues) + " values: call Flush")
	}
	if m := r.metric(name); m != nil {
		if m.unit != unit || m.resolution != res {
			return bad(fmt.Sprintf("added before in %s at resolution %d, now in %s at %d: one metric has one unit and one resolution",
				m.unit, m.resolution, unit, res))
		}
		m.values = append(m.values, value)
		r.held++
		return nil
	}
	if r.taken(name) {
		return bad("the name is a dimension or metadata member of the document")
	}
	if len(r.slab) == cap(r.slab) { // a new slab: the pointers into the old one stay valid
		if r.metrics == nil {
			// The first slab holds a batch's or a Dispatch's metrics (11, 12), no more: it is
			// most of what an invocation allocates.
			r.slab = make([]metric, 0, 12)
			r.metrics = make([]*metric, 0, 12)
		} else {
			r.slab = make([]metric, 0, 16)
		}
	}
	r.slab = append(r.slab, metric{name: name, unit: unit, resolution: res})
	m := &r.slab[len(r.slab)-1]
	m.first[0] = value
	m.values = m.first[:1:1]
	r.metrics = append(r.metrics, m)
	switch n := len(r.metrics); {
	case n > smallMetrics && r.byName == nil: // a map pays from here; below, a search is cheaper
		r.byName = make(map[string]*metric, 2*n)
		for _, m := range r.metrics {
			r.byName[m.name] = m
		}
	case r.byName != nil:
		r.byName[name] = m
	}
	r.held++
	return nil
}

// smallMetrics is how many metrics an invocation holds before it keeps them in a map by name
// too: up to it, looking a name up among them costs less than hashing it (a batch of package
// batch adds 11).
const smallMetrics = 16

// metric returns the metric name, or nil.
func (r *recorder) metric(name string) *metric {
	if r.byName != nil {
		return r.byName[name]
	}
	for _, m := range r.metrics {
		if m.name == name {
			return m
		}
	}
	return nil
}

// taken reports whether name is a member of the document already, other than a metric: a
// dimension, a metadata key, the request ID or _aws. A document's members are its root keys,
// one each.
func (r *recorder) taken(name string) bool {
	if name == "_aws" || (name == RequestIDKey && r.info.RequestID != "") {
		return true
	}
	if _, ok := r.dimValue(name); ok {
		return true
	}
	for _, md := range r.meta {
		if md.key == name {
			return true
		}
	}
	return false
}

func (r *recorder) dimValue(name string) (string, bool) {
	for _, d := range r.m.defaults {
		if d.name == name {
			return d.value, true
		}
	}
	for _, d := range r.dims {
		if d.name == name {
			return d.value, true
		}
	}
	for _, set := range r.sets {
		for _, d := range set {
			if d.name == name {
				return d.value, true
			}
		}
	}
	return "", false
}

// AddDimension adds the dimension name=value to every metric of the invocation, beside the
// service and default dimensions (Powertools' add_dimension). Adding a dimension it has with
// the same value does nothing; with another value, or past 30 dimensions, it is an
// *InvalidError.
func AddDimension(ctx context.Context, name, value string) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	if reason := checkDimension(name, value); reason != "" {
		return &InvalidError{Call: "AddDimension", Name: name, Reason: reason}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if reason := r.checkNewDimension(name, value); reason != "" {
		return &InvalidError{Call: "AddDimension", Name: name, Reason: reason}
	}
	if isDefault(r.m.defaults, name) || isDefault(r.dims, name) {
		return nil // in the base set already, with this value
	}
	if len(r.m.defaults)+len(r.dims)+1 > MaxDimensions {
		return &InvalidError{Call: "AddDimension", Name: name, Reason: "a 31st dimension: EMF refuses a dimension set of more than 30"}
	}
	r.dims = append(r.dims, dimension{name, value})
	return nil
}

// checkNewDimension refuses a dimension whose name is another member of the document, or a
// dimension of the document with another value: a document has one value per dimension name.
func (r *recorder) checkNewDimension(name, value string) string {
	if v, ok := r.dimValue(name); ok && v != value {
		return "the invocation has this dimension with the value " + strconv.Quote(v)
	}
	if r.metric(name) != nil {
		return "the name is a metric of the document"
	}
	if name == RequestIDKey && r.info.RequestID != "" {
		return "the name is the request ID's metadata member"
	}
	for _, md := range r.meta {
		if md.key == name {
			return "the name is a metadata member of the document"
		}
	}
	return ""
}

// AddDimensionSet adds a dimension set: every metric of the invocation is published once more
// with the service and default dimensions and these (Powertools' dimension sets). A name the
// document has already must have the same value; more than 30 dimensions in the set, with the
// service and defaults, or more than 30 sets in the invocation, is an *InvalidError.
func AddDimensionSet(ctx context.Context, dims map[string]string) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	set := make([]dimension, 0, len(dims))
	for n, v := range dims {
		if reason := checkDimension(n, v); reason != "" {
			return &InvalidError{Call: "AddDimensionSet", Name: n, Reason: reason}
		}
		set = append(set, dimension{n, v})
	}
	sortDimensions(set)
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.sets) >= maxDimensionSets {
		return &InvalidError{Call: "AddDimensionSet", Reason: "a 31st dimension set in one invocation"}
	}
	n := len(r.m.defaults)
	for _, d := range set {
		if reason := r.checkNewDimension(d.name, d.value); reason != "" {
			return &InvalidError{Call: "AddDimensionSet", Name: d.name, Reason: reason}
		}
		if !isDefault(r.m.defaults, d.name) {
			n++
		}
	}
	if n > MaxDimensions {
		return &InvalidError{Call: "AddDimensionSet", Reason: fmt.Sprintf("%d dimensions with the service and defaults: EMF refuses a dimension set of more than 30", n)}
	}
	r.sets = append(r.sets, set)
	return nil
}

// isDefault reports whether ds has the dimension name.
func isDefault(ds []dimension, name string) bool {
	for _, d := range ds {
		if d.name == name {
			return true
		}
	}
	return false
}

func sortDimensions(ds []dimension) {
	for i := 1; i < len(ds); i++ {
		for j := i; j > 0 && ds[j].name < ds[j-1].name; j-- {
			ds[j], ds[j-1] = ds[j-1], ds[j]
		}
	}
}

// AddMetadata adds key with value (any value encoding/json writes) to every document of the
// invocation: searchable in CloudWatch Logs, not a metric nor a dimension (Powertools'
// add_metadata). A value encoding/json refuses, a key the document has already, or more than
// 64 KiB of metadata, is an *InvalidError.
func AddMetadata(ctx context.Context, key string, value any) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	if reason := checkText("metadata key", key, maxDimValueLength); reason != "" {
		return &InvalidError{Call: "AddMetadata", Name: key, Reason: reason}
	}
	b, err := json.Marshal(value)
	if err != nil {
		return &InvalidError{Call: "AddMetadata", Name: key, Reason: err.Error()}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.metric(key) != nil || r.taken(key) {
		return &InvalidError{Call: "AddMetadata", Name: key, Reason: "the key is a member of the document already"}
	}
	if r.metaSize+len(key)+len(b) > maxMetadataBytes {
		return &InvalidError{Call: "AddMetadata", Name: key, Reason: "more than 64 KiB of metadata in one invocation"}
	}
	r.meta = append(r.meta, metadatum{key, b})
	r.metaSize += len(key) + len(b)
	return nil
}

// Flush writes the invocation's metrics, one EMF document a line, split where a document
// would pass MaxMetrics metrics or MaxValues values of a metric, and forgets them with the
// dimensions and metadata added since Start (the defaults stay). The execution environment's
// first invocation writes a ColdStart document first. Handle and Wrap flush when the handler
// returns; call Flush yourself to write earlier. A write that fails is returned; the metrics
// are forgotten all the same, so that a retry does not write the documents written already.
// With EnvDisabled set, nothing is written.
func Flush(ctx context.Context) error {
	r, err := from(ctx)
	if err != nil {
		return err
	}
	r.mu.Lock()
	lines := r.lines(time.Now())
	r.metrics, r.byName, r.slab, r.held, r.dims, r.sets, r.meta, r.metaSize = nil, nil, nil, 0, nil, nil, nil, 0
	r.mu.Unlock()
	if r.m.disabled {
		for _, line := range lines {
			putLine(line)
		}
		return nil
	}
	err = nil
	for _, line := range lines {
		if err == nil {
			if werr := writeLine(r.m.out, line); werr != nil {
				err = fmt.Errorf("metrics: writing an EMF document: %w", werr)
			}
		}
		putLine(line)
	}
	return err
}
