// Package faulthttp injects network and service faults into the HTTP calls of an AWS SDK
// client, in front of a real local server (dynalite for DynamoDB, local-aws-sqs for SQS), so
// that a test shows what code does when a call is lost, refused, throttled or never answered,
// with the server's real behaviour everywhere else. It is test support: nothing outside the
// module can import it.
//
// A [Transport] wraps the transport that reaches the server. Each request is counted under its
// AWS operation, the value of its X-Amz-Target header ("DynamoDB_20120810.PutItem",
// "AmazonSQS.SendMessageBatch"), and the first [Rule] that matches the operation and the
// call's number decides its fate:
//
//	ft := faulthttp.New(nil, faulthttp.Rule{
//		Op:    "DynamoDB_20120810.PutItem",
//		First: 2, Count: 1, // the second PutItem request only
//		Fault: faulthttp.DropAfterApply,
//	})
//	client := srv.Client(func(o *dynamodb.Options) { o.HTTPClient = ft.Client() })
//	...
//	if n := ft.Calls("DynamoDB_20120810.PutItem"); n != 3 { ... }
//
// Calls are numbered per operation from 1 and every HTTP request counts, so the SDK's retries
// of one API call are calls 2, 3 and so on: Count: 1 faults one attempt and lets the retry
// through, Count: 0 faults every call from First on (a server that stays down).
//
// The faults are the ones production meets:
//
//   - [DropAfterApply] sends the request, lets the server apply it, throws the response away
//     and returns a connection reset: the SDK retries a write that has already happened (a
//     conditional write then fails against its own first attempt).
//   - [ServerError] answers HTTP 500 without reaching the server; the SDK retries it.
//   - [Throttle] answers HTTP 400 with the service's throttling error,
//     ProvisionedThroughputExceededException for DynamoDB and ThrottlingException for any other
//     service, without reaching the server; the SDK classifies it as a throttle and retries it.
//   - [BlackHole] never answers: the call blocks until the request's context ends, as a call to
//     a dead TCP peer does, and returns the context's error. Only a deadline on the context (or
//     an HTTP client timeout) ends it, which is what a test of deadlines needs.
//
// ServerError and Throttle answer with internal/faultproxy's ErrorResponse, the errors klt
// local's fault proxy gives the functions: this client-side transport and that proxy fail
// calls alike.
//
// [Transport.Client] returns an *http.Client with no timeout of its own, so that a call ends
// only when the caller's context says so: plug it in through the SDK client's HTTPClient
// option. A Transport is safe for concurrent use, and rules may be added while calls run.
package faulthttp

import (
	"bytes"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"

	"github.com/kafkalambda/toolkit/internal/faultproxy"
)

// Fault is what happens to a matching call.
type Fault int

const (
	// Pass sends the call to the server unchanged. A rule with Pass exempts the calls it
	// matches from the rules after it.
	Pass Fault = iota
	// DropAfterApply sends the call, discards the server's response and returns a
	// connection reset (a *net.OpError wrapping ECONNRESET): the call has taken effect but
	// its caller cannot know.
	DropAfterApply
	// ServerError answers HTTP 500 (InternalServerError) without sending the call.
	ServerError
	// Throttle answers HTTP 400 with the service's throttling error without sending the call:
	// ProvisionedThroughputExceededException for an operation whose target starts with
	// "DynamoDB", ThrottlingException otherwise.
	Throttle
	// BlackHole does not send the call and never answers: it blocks until the request's
	// context ends and returns the context's error.
	BlackHole
)

func (f Fault) String() string {
	switch f {
	case Pass:
		return "Pass"
	case DropAfterApply:
		return "DropAfterApply"
	case ServerError:
		return "ServerError"
	case Throttle:
		return "Throttle"
	case BlackHole:
		return "BlackHole"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Rule selects calls and says which fault they get.
type Rule struct {
	// Op is the operation, the X-Amz-Target header's value ("DynamoDB_20120810.PutItem").
	// The empty Op matches every operation.
	Op string
	// First is the number of the first call of Op the rule applies to, counting from 1; 0
	// means 1.
	First int
	// Count is how many calls from First on the rule applies to; 0 means all of them.
	Count int
	// Fault is what the selected calls get.
	Fault Fault
}

// matches reports whether the rule selects call n of op.
func (r Rule) matches(op string, n int) bool {
	if r.Op != "" && r.Op != op {
		return false
	}
	first := max(r.First, 1)
	return n >= first && (r.Count <= 0 || n < first+r.Count)
}

// Transport is an http.RoundTripper that counts calls per operation and injects the faults its
// rules select. Create it with [New].
type Transport struct {
	next http.RoundTripper

	mu     sync.Mutex
	rules  []Rule
	calls  map[string]int
	faults map[string]int
}

// New returns a Transport that sends calls through next, or through a clone of
// http.DefaultTransport when next is nil, with the rules given (see [Transport.Add]).
func New(next http.RoundTripper, rules ...Rule) *Transport {
	if next == nil {
		next = http.DefaultTransport.(*http.Transport).Clone()
	}
	return &Transport{next: next, rules: rules, calls: map[string]int{}, faults: map[string]int{}}
}

// Add appends rules. For each call the first matching rule applies; a call no rule matches
// passes.
func (t *Transport) Add(rules ...Rule) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = append(t.rules, rules...)
}

// Clear removes every rule; later calls pass. Counts are kept.
func (t *Transport) Clear() {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.rules = nil
}

// Calls returns how many requests of op the Transport has seen, faulted or not. The empty op
// counts requests without an X-Amz-Target header.
func (t *Transport) Calls(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.calls[op]
}

// Faults returns how many requests of op got a fault other than Pass.
func (t *Transport) Faults(op string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.faults[op]
}

// Client returns an HTTP client that sends through t. It has no timeout: a call ends when
// its request's context does, or when the server answers.
func (t *Transport) Client() *http.Client { return &http.Client{Transport: t} }

// RoundTrip implements http.RoundTripper.
func (t *Transport) RoundTrip(req *http.Request) (*http.Response, error) {
	op := req.Header.Get("X-Amz-Target")
	fault := t.count(op)
	switch fault {
	case DropAfterApply:
		resp, err := t.next.RoundTrip(req)
		if err != nil {
			return nil, err
		}
		// Read the whole answer, so the server has finished applying the call, then lose it.
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return nil, &net.OpError{Op: "read", Net: "tcp", Err: os.NewSyscallError("read", syscall.ECONNRESET)}
	case ServerError:
		discard(req)
		return answer(req, faultproxy.InternalServerError), nil
	case Throttle:
		discard(req)
		return answer(req, faultproxy.ThroughputExceeded), nil
	case BlackHole:
		discard(req)
		<-req.Context().Done()
		return nil, req.Context().Err()
	}
	return t.next.RoundTrip(req)
}

// count numbers the call and returns the fault of the first rule that selects it.
func (t *Transport) count(op string) Fault {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.calls[op]++
	n := t.calls[op]
	for _, r := range t.rules {
		if r.matches(op, n) {
			if r.Fault != Pass {
				t.faults[op]++
			}
			return r.Fault
		}
	}
	return Pass
}

// discard consumes and closes the body of a request that is answered without the server, as
// a RoundTripper must.
func discard(req *http.Request) {
	if req.Body != nil {
		_, _ = io.Copy(io.Discard, req.Body)
		req.Body.Close()
	}
}

// answer is the AWS JSON protocol error response to req that faultproxy, klt local's fault
// proxy, answers for fault: the same bytes a test and klt local see.
func answer(req *http.Request, fault faultproxy.Fault) *http.Response {
	status, header, body := faultproxy.ErrorResponse(req.Header.Get("X-Amz-Target"), fault)
	return &http.Response{
		Status:        fmt.Sprintf("%d %s", status, http.StatusText(status)),
		StatusCode:    status,
		Proto:         "HTTP/1.1",
		ProtoMajor:    1,
		ProtoMinor:    1,
		Header:        header,
		Body:          io.NopCloser(bytes.NewReader(body)),
		ContentLength: int64(len(body)),
		Request:       req,
	}
}

var _ http.RoundTripper = (*Transport)(nil)
