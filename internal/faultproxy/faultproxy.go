// Package faultproxy puts a reverse proxy in front of a local AWS server (dynalite for
// DynamoDB, local-aws-sqs for SQS) that sees every request of the clients pointed at it and
// can fail some of them with the errors AWS returns, so that klt local can observe what the
// functions write and make their calls fail N times; and it fails the functions' Produce
// requests to a kfake cluster the same way ([KafkaFaults]).
//
// Both services speak an AWS JSON protocol (awsJson1_0): a POST to "/" whose X-Amz-Target
// header names the operation, "DynamoDB_20120810.PutItem" or "AmazonSQS.SendMessage" (the
// protocol aws-sdk-go-v2's sqs client uses). The proxy reports each exchange, the operation
// (the target after its dot), the request and response bodies (capped) and the status, to
// an observer:
//
//	p, err := faultproxy.Start(ddb.Endpoint(), faultproxy.WithObserver(func(x faultproxy.Exchange) { ... }))
//	url, err := p.URL("ConsumerFunction") // AWS_ENDPOINT_URL_DYNAMODB of that function
//	p.FailNext(2, "PutItem", faultproxy.InternalServerError)
//
// Each client gets a listener of its own (URL), so the proxy knows who called without
// anything in the request: the functions each get theirs, and klt's own clients go to the
// server directly and are never faulted.
//
// A fault answers without reaching the server, in the form the service answers: HTTP 500
// with InternalServerError (DynamoDB's) or InternalFailure (SQS's common error), or HTTP 400
// with ThrottlingException (or DynamoDB's ProvisionedThroughputExceededException), with the
// error code in both the x-amzn-ErrorType header and the body's "__type", as the SDKs read
// them. The SDKs' standard retryers retry both (a 500, and
// the throttling code), so a fault of N requests shows as N extra attempts and a call that
// succeeds, unless N exceeds the caller's attempts.
//
// It is engine code: internal/faulthttp, the tests' client-side fault transport, answers its
// injected errors with [ErrorResponse] from here.
package faultproxy

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// Fault is an error the proxy answers instead of the server.
type Fault int

const (
	// NoFault: the request went to the server (Exchange.Fault).
	NoFault Fault = iota
	// InternalServerError answers HTTP 500: InternalServerError for DynamoDB, InternalFailure
	// for SQS (and any other service).
	InternalServerError
	// Throttling answers HTTP 400 ThrottlingException.
	Throttling
	// ThroughputExceeded answers HTTP 400 ProvisionedThroughputExceededException, DynamoDB's
	// throttling of a table's reads and writes (ThrottlingException for another service).
	ThroughputExceeded
)

func (f Fault) String() string {
	switch f {
	case NoFault:
		return "none"
	case InternalServerError:
		return "InternalServerError"
	case Throttling:
		return "ThrottlingException"
	case ThroughputExceeded:
		return "ProvisionedThroughputExceededException"
	}
	return fmt.Sprintf("Fault(%d)", int(f))
}

// Exchange is one request a client made through the proxy, and its answer.
type Exchange struct {
	Client    string // the name the client's URL was made for
	Target    string // the X-Amz-Target header: "DynamoDB_20120810.PutItem"
	Operation string // the target's operation: "PutItem"
	Request   []byte // the request body, capped (RequestTruncated says so)
	Response  []byte // the response body, capped (ResponseTruncated says so)
	// RequestTruncated and ResponseTruncated are set when a body was longer than the cap.
	RequestTruncated, ResponseTruncated bool
	Status                              int   // the HTTP status the client got (502 or 504, with Err, when the server could not be reached)
	Fault                               Fault // the injected fault, or NoFault
	Err                                 error // why the server could not be reached
	At                                  time.Time
	Duration                            time.Duration
}

// Rule fails requests: the next N of operation Op (every operation when empty) from client
// Client (every client when empty) get Fault.
type Rule struct {
	Client string
	Op     string // the operation ("PutItem"), not the whole target
	N      int
	Fault  Fault
}

// Option configures a Proxy.
type Option func(*Proxy)

// WithObserver reports every exchange to fn, called from the request's goroutine once the
// answer is known and before the client gets it; fn must be safe for concurrent use and
// quick.
func WithObserver(fn func(Exchange)) Option { return func(p *Proxy) { p.observe = fn } }

// WithBodyCap caps the bodies an Exchange carries at n bytes (default 4 MiB: a whole
// SendMessageBatch of ten 256 KiB messages, or a DynamoDB batch of 25 items).
func WithBodyCap(n int) Option { return func(p *Proxy) { p.bodyCap = n } }

// WithTimeout bounds each call to the server (default 30 s): a server that does not answer
// fails the request with HTTP 504.
func WithTimeout(d time.Duration) Option { return func(p *Proxy) { p.timeout = d } }

// maxRequest is the largest request body the proxy reads: DynamoDB's and SQS's own limits
// are below it.
const maxRequest = 32 << 20

// Proxy is a fault-injecting reverse proxy in front of one server. It is safe for
// concurrent use; rules may be added while requests run.
type Proxy struct {
	upstream string
	client   *http.Client
	observe  func(Exchange)
	bodyCap  int
	timeout  time.Duration

	mu        sync.Mutex
	listeners map[string]*listener
	rules     []*Rule
	calls     map[string]int // by operation
	faults    map[string]int // by operation
	closed    bool
}

type listener struct {
	url string
	srv *http.Server
}

// Start returns a proxy to the server at upstream ("http://127.0.0.1:PORT").
func Start(upstream string, opts ...Option) (*Proxy, error) {
	if !strings.HasPrefix(upstream, "http://") && !strings.HasPrefix(upstream, "https://") {
		return nil, fmt.Errorf("faultproxy: upstream %q: want an http:// or https:// URL", upstream)
	}
	p := &Proxy{upstream: strings.TrimSuffix(upstream, "/"), bodyCap: 4 << 20, timeout: 30 * time.Second,
		listeners: map[string]*listener{}, calls: map[string]int{}, faults: map[string]int{}}
	for _, o := range opts {
		o(p)
	}
	if p.bodyCap < 0 || p.timeout <= 0 {
		return nil, fmt.Errorf("faultproxy: body cap %d and timeout %v: want a cap of 0 or more and a positive timeout", p.bodyCap, p.timeout)
	}
	p.client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone(), Timeout: p.timeout}
	return p, nil
}

// URL returns the proxy's URL for client name, "http://127.0.0.1:PORT", listening on first
// use: point that client's endpoint (AWS_ENDPOINT_URL_DYNAMODB, AWS_ENDPOINT_URL_SQS) at it.
func (p *Proxy) URL(client string) (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.closed {
		return "", errors.New("faultproxy: closed")
	}
	if l, ok := p.listeners[client]; ok {
		return l.url, nil
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("faultproxy: listen for %s: %w", client, err)
	}
	l := &listener{url: "http://" + ln.Addr().String()}
	l.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { p.serve(client, w, r) }),
		ReadHeaderTimeout: 10 * time.Second}
	go l.srv.Serve(ln)
	p.listeners[client] = l
	return l.url, nil
}

// FailNext fails the next n requests of operation op ("PutItem"; "" for any) from any
// client with fault.
func (p *Proxy) FailNext(n int, op string, fault Fault) { p.Fail(Rule{Op: op, N: n, Fault: fault}) }

// Fail adds a rule. Rules are used in the order they were added: a request takes one from
// the first rule that matches it and has some left.
func (p *Proxy) Fail(r Rule) {
	if r.N <= 0 || r.Fault == NoFault {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = append(p.rules, &r)
}

// Pending returns how many injected faults the rules have left.
func (p *Proxy) Pending() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := 0
	for _, r := range p.rules {
		n += r.N
	}
	return n
}

// Calls returns how many requests of operation op ("" for all) the proxy has seen.
func (p *Proxy) Calls(op string) int { return p.count(p.calls, op) }

// Faults returns how many requests of operation op ("" for all) got an injected fault.
func (p *Proxy) Faults(op string) int { return p.count(p.faults, op) }

func (p *Proxy) count(m map[string]int, op string) int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if op != "" {
		return m[op]
	}
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// Close stops every listener; requests in progress get a second to finish.
func (p *Proxy) Close() {
	p.mu.Lock()
	p.closed = true
	ls := p.listeners
	p.listeners = map[string]*listener{}
	p.mu.Unlock()
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, l := range ls {
		if err := l.srv.Shutdown(ctx); err != nil {
			l.srv.Close()
		}
	}
}

// take counts a request of client and op and returns the fault of the first rule that
// selects it.
func (p *Proxy) take(client, op string) Fault {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.calls[op]++
	for i, r := range p.rules {
		if (r.Op == "" || r.Op == op) && (r.Client == "" || r.Client == client) {
			r.N--
			if r.N == 0 {
				p.rules = append(p.rules[:i:i], p.rules[i+1:]...)
			}
			p.faults[op]++
			return r.Fault
		}
	}
	return NoFault
}

func (p *Proxy) serve(client string, w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	target := r.Header.Get("X-Amz-Target")
	_, op, _ := strings.Cut(target, ".")
	x := Exchange{Client: client, Target: target, Operation: op, At: start}
	status, header, resp := p.answer(&x, r)
	x.Duration = time.Since(start)
	// The observer sees the exchange before the client sees the answer: once a call has
	// returned, what it did is in the observer's hands.
	if p.observe != nil {
		p.observe(x)
	}
	for k, v := range header {
		w.Header()[k] = v
	}
	w.WriteHeader(status)
	w.Write(resp)
}

// answer reads the request, faults it or forwards it, fills x and returns the answer.
func (p *Proxy) answer(x *Exchange, r *http.Request) (int, http.Header, []byte) {
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequest+1))
	x.Request, x.RequestTruncated = capped(body, p.bodyCap)
	switch {
	case err != nil:
		x.Err, x.Status = fmt.Errorf("reading the request: %w", err), http.StatusBadRequest
		return x.Status, nil, []byte(x.Err.Error())
	case len(body) > maxRequest:
		x.Err, x.Status = fmt.Errorf("request body over %d bytes", maxRequest), http.StatusRequestEntityTooLarge
		return x.Status, nil, []byte(x.Err.Error())
	}
	if x.Fault = p.take(x.Client, x.Operation); x.Fault != NoFault {
		status, header, resp := ErrorResponse(x.Target, x.Fault)
		x.Status, x.Response = status, resp
		return status, header, resp
	}
	status, header, resp, err := p.forward(r, body)
	x.Status, x.Err = status, err
	x.Response, x.ResponseTruncated = capped(resp, p.bodyCap)
	return status, header, resp
}

// forward sends the request to the server and returns its answer, or a 502 (504 when the
// server did not answer in time) and the error.
func (p *Proxy) forward(r *http.Request, body []byte) (int, http.Header, []byte, error) {
	fail := func(err error) (int, http.Header, []byte, error) {
		status := http.StatusBadGateway
		if errors.Is(err, context.DeadlineExceeded) {
			status = http.StatusGatewayTimeout
		}
		return status, nil, []byte("faultproxy: " + err.Error()), err
	}
	req, err := http.NewRequestWithContext(r.Context(), r.Method, p.upstream+r.URL.RequestURI(), bytes.NewReader(body))
	if err != nil {
		return fail(err)
	}
	for k, v := range r.Header {
		if !hopByHop[http.CanonicalHeaderKey(k)] {
			req.Header[k] = v
		}
	}
	resp, err := p.client.Do(req)
	if err != nil {
		return fail(err)
	}
	defer resp.Body.Close()
	out, err := io.ReadAll(io.LimitReader(resp.Body, maxRequest))
	if err != nil {
		return fail(fmt.Errorf("reading the answer: %w", err))
	}
	header := http.Header{}
	for k, v := range resp.Header {
		if !hopByHop[k] && k != "Content-Length" {
			header[k] = v
		}
	}
	return resp.StatusCode, header, out, nil
}

// hopByHop are the headers a proxy does not pass on (RFC 9110, 7.6.1).
var hopByHop = map[string]bool{"Connection": true, "Keep-Alive": true, "Proxy-Connection": true,
	"Te": true, "Trailer": true, "Transfer-Encoding": true, "Upgrade": true}

func capped(b []byte, n int) ([]byte, bool) {
	if len(b) > n {
		return b[:n:n], true
	}
	return b, false
}

// ErrorResponse is the answer AWS gives for fault to a request of target (the X-Amz-Target
// header): its status, headers and body, in the AWS JSON protocol. DynamoDB's codes carry
// its namespace in "__type" ("com.amazonaws.dynamodb.v20120810#InternalServerError"); the
// x-amzn-ErrorType header carries the bare code, which the SDKs read first.
func ErrorResponse(target string, fault Fault) (int, http.Header, []byte) {
	status, code, msg := http.StatusInternalServerError, "InternalFailure", "faultproxy: injected internal error"
	dynamo := strings.HasPrefix(target, "DynamoDB_")
	if fault == InternalServerError && dynamo {
		code = "InternalServerError"
	}
	switch {
	case fault == Throttling, fault == ThroughputExceeded && !dynamo:
		status, code, msg = http.StatusBadRequest, "ThrottlingException", "faultproxy: injected throttling: Rate exceeded"
	case fault == ThroughputExceeded:
		status, code, msg = http.StatusBadRequest, "ProvisionedThroughputExceededException", "faultproxy: injected throttling: throughput exceeded"
	}
	typ := code
	if dynamo {
		typ = "com.amazonaws.dynamodb.v20120810#" + code
	} else if strings.HasPrefix(target, "AmazonSQS.") {
		typ = "com.amazonaws.sqs#" + code
	}
	body := fmt.Appendf(nil, `{"__type":%q,"message":%q}`, typ, msg)
	h := http.Header{"Content-Type": {"application/x-amz-json-1.0"}, "X-Amzn-Errortype": {code}, "X-Amzn-Requestid": {"faultproxy"}}
	if strings.HasPrefix(target, "AmazonSQS.") {
		// SQS answers its JSON clients with the query protocol's code too.
		sender := "Receiver"
		if status < 500 {
			sender = "Sender"
		}
		h.Set("X-Amzn-Query-Error", code+";"+sender)
	}
	return status, h, body
}
