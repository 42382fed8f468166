package stackrun

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
)

// Faults are named generically, against a record selector or a server: nothing of a stack's
// domain is in klt. "--fault KIND:ARGS" (repeatable):
//
//	timeout[@FUNCTION]:SELECTOR  freeze (SIGSTOP) the process of the invocation that carries the
//	                             record, so that it times out as a hung runtime does and its
//	                             instance is replaced
//	crash[@FUNCTION]:SELECTOR    kill -9 that process: the invocation fails as Runtime.ExitError
//	http:SELECTOR                the HTTP sink (--http-sink) answers 503 to the first request
//	                             of each function for the record
//	value:SELECTOR:VALUE         produce the record with VALUE ({{seq}} and {{key}} expanded)
//	                             instead of its own: a poison record from the stack's own terms
//	dynamodb:N[:OPERATION]       the functions' next N calls to the local DynamoDB (of OPERATION,
//	sqs:N[:OPERATION]            e.g. PutItem or SendMessage) fail with an error the SDKs retry,
//	kafka:N                      and so for SQS; for Kafka, their next N produce requests
//
// SELECTOR is seq=N, the Nth record of the phase (1 for its first), or key=K, the first record
// of the phase whose key is K. FUNCTION defaults to the last function of each pipeline, the one
// whose side effects the report follows. A record fault fires once per function: the record's
// next delivery goes through, as after a real timeout or crash.

// Kinds of fault (faultSpec.Kind).
const (
	faultTimeout  = "timeout"
	faultCrash    = "crash"
	faultHTTP     = "http"
	faultValue    = "value"
	faultDynamoDB = "dynamodb"
	faultSQS      = "sqs"
	faultKafka    = "kafka"
)

// faultKinds lists the kinds for messages, in the order of the help.
var faultKinds = []string{faultTimeout, faultCrash, faultHTTP, faultValue, faultDynamoDB, faultSQS, faultKafka}

// maxServerFaults bounds N of a server fault: past a few hundred failed calls, a function's
// SDK has given up long ago, and the fault says nothing more.
const maxServerFaults = 1000

// FaultSpec is one --fault.
type FaultSpec struct {
	Text     string // as given, for messages and the report
	Kind     string
	Function string   // timeout and crash: the function to fault; "" for the pipeline's last
	Select   selector // timeout, crash, http, value
	Value    string   // value: the replacement, a template as --generate's
	N        int      // dynamodb, sqs, kafka: how many calls fail
	Op       string   // dynamodb, sqs: only calls of this operation ("" for any)
}

// selector picks one record of a phase.
type selector struct {
	Seq int    // the Nth record of the phase; 0 when Key selects
	Key string // the first record of the phase with this key
}

func (s selector) String() string {
	if s.Seq > 0 {
		return "seq=" + strconv.Itoa(s.Seq)
	}
	return "key=" + s.Key
}

// pick returns the index in recs of the record s selects, or -1.
func (s selector) pick(recs []inputRecord) int {
	for i, r := range recs {
		if s.Seq > 0 && r.Seq == s.Seq || s.Seq == 0 && bytes.Equal(r.Key, []byte(s.Key)) {
			return i
		}
	}
	return -1
}

// isRecordFault reports whether the fault is tied to a record (and a selector).
func (f FaultSpec) isRecordFault() bool {
	switch f.Kind {
	case faultTimeout, faultCrash, faultHTTP, faultValue:
		return true
	}
	return false
}

func parseSelector(s string) (selector, error) {
	name, v, ok := strings.Cut(s, "=")
	switch {
	case ok && name == "seq":
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			return selector{}, fmt.Errorf("selector %q: seq=N wants N a whole number from 1 (the Nth record of the phase)", s)
		}
		return selector{Seq: n}, nil
	case ok && name == "key" && v != "":
		return selector{Key: v}, nil
	}
	return selector{}, fmt.Errorf("selector %q: want seq=N (the Nth record of the phase) or key=K (the first record whose key is K)", s)
}

// ParseFault parses one --fault KIND:ARGS.
func ParseFault(s string) (FaultSpec, error) {
	kind, args, ok := strings.Cut(s, ":")
	f := FaultSpec{Text: s}
	kind, f.Function, _ = strings.Cut(kind, "@")
	f.Kind = kind
	if !ok || args == "" {
		return f, fmt.Errorf("--fault %q: want KIND:ARGS, KIND one of %s (klt help local lists them)", s, strings.Join(faultKinds, ", "))
	}
	if f.Function != "" && kind != faultTimeout && kind != faultCrash {
		return f, fmt.Errorf("--fault %q: only timeout and crash name a function (KIND@FUNCTION)", s)
	}
	var err error
	switch kind {
	case faultTimeout, faultCrash, faultHTTP:
		f.Select, err = parseSelector(args)
	case faultValue:
		sel, v, ok := strings.Cut(args, ":")
		if !ok {
			return f, fmt.Errorf("--fault %q: want value:SELECTOR:VALUE", s)
		}
		if f.Select, err = parseSelector(sel); err == nil {
			f.Value = v
			err = checkPlaceholders("--fault "+s, v)
		}
	case faultDynamoDB, faultSQS, faultKafka:
		n, op, _ := strings.Cut(args, ":")
		f.N, err = strconv.Atoi(n)
		if err != nil || f.N < 1 || f.N > maxServerFaults {
			err = fmt.Errorf("want N from 1 to %d, the calls that fail, got %q", maxServerFaults, n)
		}
		f.Op = op
		if op != "" && kind == faultKafka {
			err = fmt.Errorf("kafka:N takes no operation: it fails produce requests")
		}
	default:
		return f, fmt.Errorf("--fault %q: unknown kind %q; want one of %s", s, kind, strings.Join(faultKinds, ", "))
	}
	if err != nil {
		return f, fmt.Errorf("--fault %q: %w", s, err)
	}
	return f, nil
}

// FaultsFlag is the repeatable --fault flag.
type FaultsFlag struct{ Faults *[]FaultSpec }

func (f FaultsFlag) String() string {
	if f.Faults == nil {
		return ""
	}
	var parts []string
	for _, x := range *f.Faults {
		parts = append(parts, x.Text)
	}
	return strings.Join(parts, " ")
}

func (f FaultsFlag) Set(s string) error {
	x, err := ParseFault(s)
	if err != nil {
		return err
	}
	*f.Faults = append(*f.Faults, x)
	return nil
}
