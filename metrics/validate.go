package metrics

import (
	"errors"
	"math"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// Unit is a CloudWatch metric unit. Only the units CloudWatch lists are accepted
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/APIReference/API_MetricDatum.html, the
// pattern of the EMF specification's schema): a unit it does not know would make CloudWatch
// drop the document.
type Unit string

// The units CloudWatch accepts.
const (
	Seconds            Unit = "Seconds"
	Microseconds       Unit = "Microseconds"
	Milliseconds       Unit = "Milliseconds"
	Bytes              Unit = "Bytes"
	Kilobytes          Unit = "Kilobytes"
	Megabytes          Unit = "Megabytes"
	Gigabytes          Unit = "Gigabytes"
	Terabytes          Unit = "Terabytes"
	Bits               Unit = "Bits"
	Kilobits           Unit = "Kilobits"
	Megabits           Unit = "Megabits"
	Gigabits           Unit = "Gigabits"
	Terabits           Unit = "Terabits"
	Percent            Unit = "Percent"
	Count              Unit = "Count"
	BytesPerSecond     Unit = "Bytes/Second"
	KilobytesPerSecond Unit = "Kilobytes/Second"
	MegabytesPerSecond Unit = "Megabytes/Second"
	GigabytesPerSecond Unit = "Gigabytes/Second"
	TerabytesPerSecond Unit = "Terabytes/Second"
	BitsPerSecond      Unit = "Bits/Second"
	KilobitsPerSecond  Unit = "Kilobits/Second"
	MegabitsPerSecond  Unit = "Megabits/Second"
	GigabitsPerSecond  Unit = "Gigabits/Second"
	TerabitsPerSecond  Unit = "Terabits/Second"
	CountPerSecond     Unit = "Count/Second"
	None               Unit = "None"
)

// known reports whether u is a unit CloudWatch accepts. A switch, which the compiler turns into
// a search on the length and bytes, costs less than a map's hash on every Add.
func (u Unit) known() bool {
	switch u {
	case Seconds, Microseconds, Milliseconds, Bytes, Kilobytes, Megabytes, Gigabytes, Terabytes,
		Bits, Kilobits, Megabits, Gigabits, Terabits, Percent, Count, BytesPerSecond,
		KilobytesPerSecond, MegabytesPerSecond, GigabytesPerSecond, TerabytesPerSecond,
		BitsPerSecond, KilobitsPerSecond, MegabitsPerSecond, GigabitsPerSecond,
		TerabitsPerSecond, CountPerSecond, None:
		return true
	}
	return false
}

// Resolution is a metric's storage resolution in seconds: the EMF specification's
// StorageResolution, 1 or 60.
type Resolution int

// The resolutions CloudWatch stores.
const (
	Standard Resolution = 60 // one-minute resolution, CloudWatch's default
	High     Resolution = 1  // one-second resolution: a high-resolution metric
)

// The limits of one EMF document, from the specification
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format_Specification.html):
// Flush splits a document that would pass MaxMetrics or MaxValues; a dimension set cannot be
// split without changing what the metrics mean, so passing MaxDimensions is an error at the
// call.
const (
	MaxMetrics    = 100 // "This array MUST NOT contain more than 100 MetricDefinition objects."
	MaxDimensions = 30  // "A DimensionSet MUST NOT contain more than 30 dimension keys."
	MaxValues     = 100 // "Numeric array metric targets MUST NOT have more than 100 members."
)

// The caps of one invocation's recorder, so that a loop adding metrics cannot grow a
// process's memory without bound. They are this package's, not AWS's.
const (
	maxHeldValues     = 100_000  // values held between two flushes: 1,000 documents
	maxDimensionSets  = 30       // dimension sets of an invocation: each one multiplies the metrics CloudWatch bills
	maxMetadataBytes  = 64 << 10 // the JSON of an invocation's metadata, written into every document
	maxNameLength     = 255      // a metric name: CloudWatch's MetricDatum MetricName
	maxDimNameLength  = 250      // a dimension name: the EMF schema's DimensionReference
	maxDimValueLength = 1024     // a dimension value: the EMF specification's target member
	maxNamespace      = 255      // CloudWatch's Namespace
)

// ServiceDimension is the dimension that carries the service's name (WithService,
// EnvService), Powertools' name for it.
const ServiceDimension = "service"

// RequestIDKey is the metadata member that carries the invocation's request ID in every
// document, Powertools' logger key for it, so that a document is found from a log line and
// back.
const RequestIDKey = "function_request_id"

// functionNameDimension is the ColdStart metric's dimension, Powertools' name for it.
const functionNameDimension = "function_name"

// ErrInvalid is matched (errors.Is) by every *InvalidError.
var ErrInvalid = errors.New("metrics: invalid metric")

// ErrNotStarted is returned by Add and its siblings and by Flush when ctx carries no
// recorder: the handler is not wrapped by Handle or Wrap (or ctx is not the one they gave).
var ErrNotStarted = errors.New("metrics: no recorder in the context: wrap the handler with metrics.Handle or Metrics.Wrap")

// InvalidError is a metric, dimension or metadata member refused at the call, which CloudWatch
// would have refused (dropping the whole document) or which would pass a cap.
type InvalidError struct {
	Call   string // "Add", "AddDimension", "AddDimensionSet", "AddMetadata"
	Name   string // the metric, dimension or metadata key
	Reason string
}

func (e *InvalidError) Error() string {
	return "metrics: " + e.Call + " " + strconv.Quote(e.Name) + ": " + e.Reason
}

// Is reports whether target is ErrInvalid.
func (e *InvalidError) Is(target error) bool { return target == ErrInvalid }

func checkNamespace(ns string) string {
	switch {
	case ns == "":
		return "empty namespace"
	case len(ns) > maxNamespace:
		return "namespace longer than 255 characters"
	case strings.HasPrefix(ns, "AWS/"):
		return `namespaces starting "AWS/" are AWS's`
	}
	for i := 0; i < len(ns); i++ {
		if c := ns[i]; c < 0x20 || c > 0x7e {
			return "namespace with a character that is not printable ASCII: " + strconv.Quote(ns)
		}
	}
	return ""
}

// checkText refuses what CloudWatch refuses of a name or value: empty, only white space,
// invalid UTF-8, control characters, or longer than max characters.
func checkText(what, s string, max int) string {
	// Most names are short printable ASCII: one pass over the bytes says so. Anything else
	// takes the checks below.
	if len(s) <= max {
		spaces, i := 0, 0
		for ; i < len(s) && printable[s[i]]; i++ {
			if s[i] == ' ' {
				spaces++
			}
		}
		if i == len(s) && spaces < len(s) {
			return ""
		}
	}
	switch {
	case strings.TrimSpace(s) == "":
		return what + " is empty or only white space"
	case !utf8.ValidString(s):
		return what + " is not valid UTF-8"
	case utf8.RuneCountInString(s) > max:
		return what + " is longer than " + strconv.Itoa(max) + " characters"
	}
	for _, r := range s {
		if unicode.IsControl(r) {
			return what + " has a control character"
		}
	}
	return ""
}

// printable holds the printable ASCII bytes, 0x20 to 0x7e.
var printable = func() (t [256]bool) {
	for c := 0x20; c < 0x7f; c++ {
		t[c] = true
	}
	return t
}()

func checkDimension(name, value string) string {
	if r := checkText("dimension name "+strconv.Quote(name), name, maxDimNameLength); r != "" {
		return r
	}
	for i := 0; i < len(name); i++ { // CloudWatch: dimension names are ASCII, not starting with ':'
		if name[i] > 0x7e {
			return "dimension name " + strconv.Quote(name) + " is not ASCII"
		}
	}
	if name[0] == ':' {
		return "dimension name " + strconv.Quote(name) + ` starts with ":"`
	}
	if name == "_aws" {
		return `"_aws" is EMF's metadata member`
	}
	return checkText("value of dimension "+strconv.Quote(name), value, maxDimValueLength)
}

// checkValue refuses what CloudWatch refuses of a value (API_MetricDatum: "Values must be in
// the range of -2^360 to 2^360", and NaN and the infinities are not supported).
func checkValue(v float64) string {
	switch {
	case math.IsNaN(v), math.IsInf(v, 0):
		return "value " + strconv.FormatFloat(v, 'g', -1, 64) + " is not a number CloudWatch stores"
	case math.Abs(v) > 0x1p360:
		return "value " + strconv.FormatFloat(v, 'g', -1, 64) + " is outside -2^360 to 2^360"
	}
	return ""
}
