package metrics

import (
	"strconv"
	"sync"
	"time"
)

// maxMetricBytes bounds the metrics' part of one document (their values and definitions), so
// that with 30 dimensions and 64 KiB of metadata a document stays under CloudWatch Logs' 256
// KiB event, which Lambda splits, and EMF then drops.
const maxMetricBytes = 128 << 10

// linePool keeps the buffers of documents written, for the next: an io.Writer must not keep
// what it is given (io.Writer's contract), so a buffer is free once written. A buffer larger
// than maxPooledLine is left to the collector, so that one large flush does not hold memory.
var linePool sync.Pool // *[]byte

const maxPooledLine = 16 << 10

func getLine(n int) []byte {
	if p, ok := linePool.Get().(*[]byte); ok {
		if cap(*p) >= n {
			return (*p)[:0]
		}
	}
	return make([]byte, 0, max(n, 1024))
}

func putLine(b []byte) {
	if cap(b) <= maxPooledLine {
		linePool.Put(&b)
	}
}

// chunk is the values of one metric that go in one document.
type chunk struct {
	m      *metric
	values []float64
}

// lines returns the invocation's documents: the ColdStart one first, if due, then its metrics
// in documents of at most MaxMetrics metrics of at most MaxValues values each. A metric of
// more than MaxValues values goes on in the next documents, in the order they were added.
func (r *recorder) lines(now time.Time) [][]byte {
	var out [][]byte
	ts := now.UnixMilli()
	if r.coldPending {
		r.coldPending = false
		out = append(out, r.coldStartLine(ts))
	}
	var small [smallMetrics]chunk // most invocations: no allocation for the list
	doc := small[:0]
	for round := 0; ; round++ {
		doc = doc[:0]
		size := 0
		any := false
		for _, m := range r.metrics {
			lo := round * MaxValues
			if lo >= len(m.values) {
				continue
			}
			any = true
			c := chunk{m, m.values[lo:min(lo+MaxValues, len(m.values))]}
			cs := 2*len(m.name) + 64 + 25*len(c.values)
			if len(doc) == MaxMetrics || (len(doc) > 0 && size+cs > maxMetricBytes) {
				out = append(out, r.line(ts, doc))
				doc, size = doc[:0], 0
			}
			doc = append(doc, c)
			size += cs
		}
		if !any {
			return out
		}
		out = append(out, r.line(ts, doc))
	}
}

// line writes one document of the chunks, with every dimension and metadata member.
func (r *recorder) line(ts int64, chunks []chunk) []byte {
	b := getLine(r.lineSize(chunks))
	b = append(b, '{')
	first := true
	member := func(name string) {
		if !first {
			b = append(b, ',')
		}
		first = false
		b = appendString(b, name)
		b = append(b, ':')
	}
	dim := func(d dimension) {
		member(d.name)
		b = appendString(b, d.value)
	}
	for _, d := range r.m.defaults {
		dim(d)
	}
	for _, d := range r.dims {
		dim(d)
	}
	for i, set := range r.sets {
		for _, d := range set {
			// A name of several sets is one member, with one value (AddDimensionSet checked).
			if !isDefault(r.m.defaults, d.name) && !isDefault(r.dims, d.name) && !inSets(r.sets[:i], d.name) {
				dim(d)
			}
		}
	}
	if r.info.RequestID != "" {
		member(RequestIDKey)
		b = appendString(b, r.info.RequestID)
	}
	for _, md := range r.meta {
		member(md.key)
		b = append(b, md.json...)
	}
	for _, c := range chunks {
		member(c.m.name)
		// Always an array, as Powertools for Python writes even one value ("SuccessfulBooking":
		// [1.0]), so that a field has one JSON type in every document of every edition.
		b = append(b, '[')
		for i, v := range c.values {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendFloat(b, v)
		}
		b = append(b, ']')
	}
	member("_aws")
	b = r.appendDirective(b, ts, chunks)
	return append(b, "}\n"...)
}

// lineSize is about the size of the document of chunks, a little more so that it is written
// into one buffer: each member's name twice (member and directive), its value, and the JSON
// around them.
func (r *recorder) lineSize(chunks []chunk) int {
	n := 160 + len(r.m.namespace) + len(r.info.RequestID) + r.metaSize
	for _, ds := range [][]dimension{r.m.defaults, r.dims} {
		for _, d := range ds {
			n += 2*len(d.name) + len(d.value) + 8
		}
	}
	for _, set := range r.sets {
		for _, d := range set {
			n += 2*len(d.name) + len(d.value) + 8
		}
	}
	for _, c := range chunks {
		n += 2*len(c.m.name) + len(c.m.unit) + 48 + 25*len(c.values)
	}
	return n
}

// appendDirective writes the _aws member's value: the timestamp and one MetricDirective whose
// dimension sets are the base one (service, defaults, AddDimension's) and AddDimensionSet's.
func (r *recorder) appendDirective(b []byte, ts int64, chunks []chunk) []byte {
	b = append(b, `{"Timestamp":`...)
	b = strconv.AppendInt(b, ts, 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, r.m.namespace)
	b = append(b, `,"Dimensions":[[`...)
	n := 0
	for _, ds := range [][]dimension{r.m.defaults, r.dims} {
		for _, d := range ds {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendString(b, d.name)
		}
	}
	b = append(b, ']')
	for _, set := range r.sets {
		b = append(b, ",["...)
		n := 0
		for _, d := range r.m.defaults {
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendString(b, d.name)
		}
		for _, d := range set {
			if isDefault(r.m.defaults, d.name) {
				continue
			}
			if n > 0 {
				b = append(b, ',')
			}
			n++
			b = appendString(b, d.name)
		}
		b = append(b, ']')
	}
	b = append(b, `],"Metrics":[`...)
	for i, c := range chunks {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, c.m.name)
		b = append(b, `,"Unit":`...)
		b = appendString(b, string(c.m.unit))
		if c.m.resolution == High { // Powertools writes StorageResolution only for 1; 60 is EMF's default
			b = append(b, `,"StorageResolution":1`...)
		}
		b = append(b, '}')
	}
	return append(b, "]}]}"...)
}

// coldStartLine is the ColdStart document: Count 1 with the function_name and service
// dimensions only, in a document of its own, as Powertools for Python writes it
// (aws_lambda_powertools/metrics/provider/cloudwatch_emf/cloudwatch.py, add_cold_start_metric:
// a single_metric with function_name and service), so that one query counts the cold starts
// of Go and Python functions alike. EnvFunctionName names the function instead of Lambda.
func (r *recorder) coldStartLine(ts int64) []byte {
	cold := &recorder{m: &Metrics{namespace: r.m.namespace}, info: r.info}
	fn := r.m.function
	if fn == "" {
		fn = r.info.FunctionName
	}
	if fn != "" { // without a name, no function_name dimension, as Powertools for TypeScript
		cold.m.defaults = append(cold.m.defaults, dimension{functionNameDimension, fn})
	}
	if r.m.service != "" {
		cold.m.defaults = append(cold.m.defaults, dimension{ServiceDimension, r.m.service})
	}
	return cold.line(ts, []chunk{{&metric{name: "ColdStart", unit: Count, resolution: Standard}, []float64{1}}})
}

func inSets(sets [][]dimension, name string) bool {
	for _, set := range sets {
		if isDefault(set, name) {
			return true
		}
	}
	return false
}
