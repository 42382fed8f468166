package stackrun

import (
	"context"
	"fmt"
	"github.com/kafkalambda/toolkit/cmd/klt/internal/ledger"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// httpSink is the local stand-in for an external HTTP API a function calls (a payment or
// an orders API): a template parameter the user names (--http-sink PARAM) gets its URL, one
// path per function, /f/<Function>, so that the sink knows who called. It is where a side
// effect that leaves the stack is observed: each request is recorded in the ledger (method,
// body capped, the Idempotency-Key header) as an effect of the input record the key names
// (topic-partition-offset, idempotency.KafkaKey, which the samples send).
//
// Like the APIs it stands for, it deduplicates on Idempotency-Key, per caller: a request
// whose key it answered already is answered as the first time, applied no second time, and
// recorded as a Repeat. Each first request takes the configured work time, as the real call
// would; a caller that gives up meanwhile applied nothing. failFirst makes the first request
// for a record fail with 503 (a transient fault the caller retries). A request without an
// Idempotency-Key, or with one that names no record, is applied and recorded as
// unattributed.
type httpSink struct {
	l    *ledger.Ledger
	name string // the resource's name in the ledger: the template parameter
	work time.Duration
	ln   net.Listener
	srv  *http.Server

	mu        sync.Mutex
	transient map[ledger.RecordID]bool // the first request of each function for the record gets 503
	attempts  map[string]int           // function + " " + key -> requests
	answered  map[string]sinkAnswer    // function + " " + key -> the first answer
}

type sinkAnswer struct {
	status int
	body   string
}

// maxSinkBody bounds the request body the sink reads.
const maxSinkBody = 1 << 20

// startHTTPSink serves the sink on a free loopback port; name is its resource name in the
// ledger (the template parameter its URL goes to).
func startHTTPSink(l *ledger.Ledger, name string, work time.Duration) (*httpSink, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("the HTTP sink: %w", err)
	}
	s := &httpSink{l: l, name: name, work: work, ln: ln,
		transient: map[ledger.RecordID]bool{}, attempts: map[string]int{}, answered: map[string]sinkAnswer{}}
	s.srv = &http.Server{Handler: s, ReadHeaderTimeout: 10 * time.Second}
	go s.srv.Serve(ln)
	return s, nil
}

// URL returns the sink's URL for function fn: the value of its parameter for fn.
func (s *httpSink) URL(fn string) string { return "http://" + s.ln.Addr().String() + "/f/" + fn }

// failFirst makes the first request of each function for record id fail with 503.
func (s *httpSink) failFirst(id ledger.RecordID) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.transient[id] = true
}

// attemptsOf returns how many requests function fn made with Idempotency-Key key.
func (s *httpSink) attemptsOf(fn, key string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.attempts[fn+" "+key]
}

// close stops the sink.
func (s *httpSink) close() {
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if err := s.srv.Shutdown(ctx); err != nil {
		s.srv.Close()
	}
}

func (s *httpSink) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	fn, _, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/f/"), "/")
	if !strings.HasPrefix(r.URL.Path, "/f/") || fn == "" {
		http.Error(w, "klt local's HTTP sink: want /f/<Function>/...", http.StatusNotFound)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, maxSinkBody+1))
	if err != nil || len(body) > maxSinkBody {
		http.Error(w, fmt.Sprintf("klt local's HTTP sink: a body of at most %d bytes (%v)", maxSinkBody, err), http.StatusRequestEntityTooLarge)
		return
	}
	key := r.Header.Get("Idempotency-Key")
	id, named := parseKafkaKey(key)
	e := ledger.Effect{Kind: ledger.EffectHTTP, Resource: s.name, Function: fn, Record: id, Via: ledger.ViaIdempotencyHeader, Op: r.Method,
		Body: capBody([]byte(r.Method + " " + r.URL.Path + "\n" + string(body)))}

	s.mu.Lock()
	s.attempts[fn+" "+key]++
	first := s.attempts[fn+" "+key] == 1
	prev, repeat := s.answered[fn+" "+key]
	transient := named && first && s.transient[id]
	s.mu.Unlock()
	switch {
	case transient:
		http.Error(w, "klt local's HTTP sink: unavailable (injected transient fault)", http.StatusServiceUnavailable)
		return
	case repeat && key != "":
		e.Repeat, e.At = true, time.Now()
		s.recordEffect(e, named, key)
		w.WriteHeader(prev.status)
		io.WriteString(w, prev.body)
		return
	}
	select {
	case <-time.After(s.work):
	case <-r.Context().Done(): // the caller gave up: nothing applied
		return
	}
	ans := sinkAnswer{http.StatusOK, `{"applied":true}`}
	if r.Method == http.MethodPost {
		ans.status = http.StatusCreated
	}
	s.mu.Lock()
	prev, repeat = s.answered[fn+" "+key]
	if !repeat && key != "" {
		s.answered[fn+" "+key] = ans
	}
	s.mu.Unlock()
	if repeat { // a concurrent request with the key applied it meanwhile
		e.Repeat, ans = true, prev
	}
	e.At = time.Now()
	s.recordEffect(e, named, key)
	w.WriteHeader(ans.status)
	io.WriteString(w, ans.body)
}

func (s *httpSink) recordEffect(e ledger.Effect, named bool, key string) {
	if named {
		s.l.AddEffect(e)
		return
	}
	why := "no Idempotency-Key header"
	if key != "" {
		why = fmt.Sprintf("Idempotency-Key %.100q names no record (want topic-partition-offset)", key)
	}
	s.l.AddUnattributed(ledger.Unattributed{Kind: ledger.EffectHTTP, Resource: s.name, At: e.At, Why: e.Op + " by " + e.Function + ": " + why})
}
