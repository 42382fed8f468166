// Package emfout writes CloudWatch Embedded Metric Format lines for the packages that emit
// metrics (batch, fanout): a Doc builds one document, with one dimension, its metrics in the
// order they are added, and the _aws metadata CloudWatch Logs reads to turn them into metrics
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html).
//
// A Doc appends to one buffer, with no map and no reflection: a batch writes its line once,
// and the line must cost little next to a batch of no-op handlers.
package emfout

import (
	"encoding/json"
	"io"
	"math"
	"os"
	"strconv"
	"sync"
	"time"
)

// Units of the metrics, as CloudWatch names them.
const (
	Count        = "Count"
	Milliseconds = "Milliseconds"
	Bytes        = "Bytes"
)

// Doc is one EMF document being built. Make one with New, add its metrics, and end it with
// Line.
type Doc struct {
	b         []byte
	dimension string
	metrics   []metric
}

type metric struct{ name, unit string }

// New starts a document whose one dimension is dimension, with the value value.
func New(dimension, value string) *Doc {
	d := &Doc{b: make([]byte, 0, 640), dimension: dimension, metrics: make([]metric, 0, 12)}
	d.b = append(d.b, '{')
	d.b = appendString(d.b, dimension)
	d.b = append(d.b, ':')
	d.b = appendString(d.b, value)
	return d
}

// Int adds the metric name, in unit, with the value v.
func (d *Doc) Int(name, unit string, v int64) {
	d.key(name, unit)
	d.b = strconv.AppendInt(d.b, v, 10)
}

// Float adds the metric name, in unit, with the value v. A value JSON cannot hold (NaN, an
// infinity) is written as 0.
func (d *Doc) Float(name, unit string, v float64) {
	d.key(name, unit)
	d.b = appendFloat(d.b, v)
}

func (d *Doc) key(name, unit string) {
	d.metrics = append(d.metrics, metric{name, unit})
	d.b = append(d.b, ',')
	d.b = appendString(d.b, name)
	d.b = append(d.b, ':')
}

// Line ends the document with its metadata, the time now and the namespace, and returns it,
// one line of JSON ending in a newline. The Doc is not used after.
func (d *Doc) Line(now time.Time, namespace string) []byte {
	b := append(d.b, `,"_aws":{"Timestamp":`...)
	b = strconv.AppendInt(b, now.UnixMilli(), 10)
	b = append(b, `,"CloudWatchMetrics":[{"Namespace":`...)
	b = appendString(b, namespace)
	b = append(b, `,"Dimensions":[[`...)
	b = appendString(b, d.dimension)
	b = append(b, `]],"Metrics":[`...)
	for i, m := range d.metrics {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, `{"Name":`...)
		b = appendString(b, m.name)
		b = append(b, `,"Unit":`...)
		b = appendString(b, m.unit)
		b = append(b, '}')
	}
	b = append(b, "]}]}}\n"...)
	d.b = nil
	return b
}

// appendString appends s as a JSON string, as encoding/json writes it.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c > 0x7e || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string cannot fail
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// appendFloat appends f as encoding/json writes a float64: the shortest decimal that reads
// back as f, in exponent form below 1e-6 and from 1e21.
func appendFloat(b []byte, f float64) []byte {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return append(b, '0')
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' { // e-07 -> e-7, as encoding/json
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b
}

var stdoutMu sync.Mutex // one line at a time on standard output, whichever package writes it

// WriteLine writes one EMF line to w. Lines written to os.Stdout, which CloudWatch Logs reads
// line by line, are written one at a time across every package of the toolkit.
func WriteLine(w io.Writer, line []byte) error {
	if w == os.Stdout {
		stdoutMu.Lock()
		defer stdoutMu.Unlock()
	}
	_, err := w.Write(line)
	return err
}
