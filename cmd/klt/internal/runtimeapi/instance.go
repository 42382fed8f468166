package runtimeapi

import (
	"encoding/base64"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/esm"
	"github.com/kafkalambda/toolkit/internal/procgroup"
	"github.com/kafkalambda/toolkit/limits"
)

// instance is one process (one execution environment) and its Runtime API server.
type instance struct {
	p      *Pool
	n      int // 1, 2, ... in start order
	cmd    *exec.Cmd
	srv    *http.Server
	events chan *invocation // unbuffered: Invoke hands an event to a /next handler
	exited chan struct{}    // closed once the process has been reaped
	gone   chan struct{}    // closed when the instance is killed or has exited
	goneMu sync.Once

	// Guarded by p.mu.
	reserved     int // Invokes holding a slot whose event is not handed over yet
	running      int // events handed over and not answered by the process yet
	waiting      int // the process's calls of /next that are blocked
	lastFree     uint64
	ready        bool // the process has called /next at least once (Init is over)
	dead         bool // killed or exited: never handed out again
	reaped       bool // the process has been waited for: its pid may be reused
	registered   bool // in p.all, counted in p.total until reaped
	started      bool // cmd.Start succeeded: cmd.Process may be signalled
	startErr     error
	cur          map[string]*invocation // handed over and not answered by the process
	stats        *InstanceStats
	initErr      *esm.InvokeError
	initTimedOut bool
	exitErr      error // set before exited is closed
}

// invocation is one event handed to an instance.
type invocation struct {
	id       string
	payload  []byte
	deadline time.Time         // set by the /next handler before it closes handed
	handed   chan struct{}     // closed once the event is the process's
	claimed  chan struct{}     // closed when Invoke gives up on it (claim)
	done     chan esm.Response // buffered 1: the runtime's answer, sent once
	answered bool              // guarded by p.mu: the runtime answered, or Invoke gave up
	overrun  *Overrun          // guarded by p.mu: an LMI invocation past its deadline
	// settled, guarded by p.mu, is set once the invocation no longer counts in p.busy: when
	// the process's answer frees its slot, or when Invoke finishes, whichever comes first,
	// so that busy never counts the slot's next invocation beside it.
	settled bool
}

func (in *instance) closeGone() { in.goneMu.Do(func() { close(in.gone) }) }

// newInstanceLocked makes instance number n, to be started, and lists it: its other slots can
// be taken by Invokes while it starts. The caller holds its first slot and must call
// startInstance. p.mu must be held.
func (p *Pool) newInstanceLocked(n int) *instance {
	in := &instance{
		p:          p,
		n:          n,
		reserved:   1,
		registered: true,
		events:     make(chan *invocation),
		exited:     make(chan struct{}),
		gone:       make(chan struct{}),
		cur:        map[string]*invocation{},
		stats:      &InstanceStats{N: n, Concurrency: p.slots},
	}
	p.all[in] = struct{}{}
	p.stats = append(p.stats, in.stats)
	p.total++
	return in
}

// startInstance starts in's process with a Runtime API server of its own. When it fails, in
// is ended: Invokes waiting for it get err.
func (p *Pool) startInstance(in *instance) error {
	err := p.startProcess(in)
	p.mu.Lock()
	started := in.started
	p.mu.Unlock()
	if err != nil && !started { // once started, reap ends it
		p.mu.Lock()
		in.dead = true
		in.reaped = true
		in.startErr = err
		delete(p.all, in)
		p.total--
		p.notifyLocked()
		p.mu.Unlock()
		in.closeGone()
		close(in.exited)
	}
	return err
}

func (p *Pool) startProcess(in *instance) error {
	n := in.n
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return fmt.Errorf("runtimeapi: function %s: runtime API listener: %w", p.cfg.Name, err)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /2018-06-01/runtime/invocation/next", in.next)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/response", in.response)
	mux.HandleFunc("POST /2018-06-01/runtime/invocation/{id}/error", in.invocationError)
	mux.HandleFunc("POST /2018-06-01/runtime/init/error", in.initError)
	mux.HandleFunc("POST /2020-01-01/extension/register", in.extensionRegister)
	mux.HandleFunc("GET /2020-01-01/extension/event/next", in.extensionNext)
	// The server's own errors (a handler's panic above all) go to stderr: never silently.
	in.srv = &http.Server{Handler: mux, ErrorLog: log.New(os.Stderr, "runtimeapi: function "+p.cfg.Name+": runtime API: ", 0)}
	go func() { _ = in.srv.Serve(ln) }()

	cmd := exec.Command(p.cfg.Bootstrap)
	cmd.Dir = p.cfg.Dir
	cmd.Env = append(p.env[:len(p.env):len(p.env)], "AWS_LAMBDA_RUNTIME_API="+ln.Addr().String())
	procgroup.Set(cmd)
	var outR, outW, errR, errW *os.File
	closeAll := func(fs ...*os.File) {
		for _, f := range fs {
			if f != nil {
				_ = f.Close()
			}
		}
	}
	if p.logs != nil {
		if outR, outW, err = os.Pipe(); err == nil {
			errR, errW, err = os.Pipe()
		}
		if err != nil {
			closeAll(outR, outW)
			_ = in.srv.Close()
			return fmt.Errorf("runtimeapi: function %s: output pipes: %w", p.cfg.Name, err)
		}
		cmd.Stdout, cmd.Stderr = outW, errW
	}
	in.cmd = cmd
	if err := cmd.Start(); err != nil {
		closeAll(outR, outW, errR, errW)
		_ = in.srv.Close()
		return fmt.Errorf("runtimeapi: function %s: start %s: %w", p.cfg.Name, p.cfg.Bootstrap, err)
	}
	closeAll(outW, errW) // the child holds its own copies

	p.mu.Lock()
	closed := p.closed
	in.started = true
	in.stats.PID = cmd.Process.Pid
	if !closed && p.logs != nil {
		p.logs.add(n, outR, errR)
	}
	p.mu.Unlock()
	go in.reap()
	if closed {
		closeAll(outR, errR)
		p.kill(in)
		return ErrClosed // Close waits for the process
	}
	// Lambda's Init phase: the process must ask for its first event in time.
	t := time.AfterFunc(p.initTimeout, func() {
		p.mu.Lock()
		timedOut := !in.ready && !in.dead
		if timedOut {
			in.initTimedOut = true
		}
		p.mu.Unlock()
		if timedOut {
			p.kill(in)
		}
	})
	go func() {
		<-in.exited
		t.Stop()
	}()
	return nil
}

// reap waits for the process, kills what is left of its process group, and frees its slot.
func (in *instance) reap() {
	err := in.cmd.Wait()
	p := in.p
	p.mu.Lock()
	in.exitErr = err
	in.dead = true
	in.reaped = true
	if in.registered { // else startInstance's caller gives the slot back
		delete(p.all, in)
		p.total--
		p.notifyLocked()
	}
	p.mu.Unlock()
	// What the process started (its group) dies with it, as a reset ends the whole execution
	// environment. The group id stays in use while any member lives; with none left, the
	// kernel would have to recycle the pid within microseconds for this to hit another group.
	procgroup.KillGroup(in.cmd)
	in.closeGone()
	close(in.exited)
	_ = in.srv.Close()
}

// kill resets in: its process group gets SIGKILL and it is never handed out again.
func (p *Pool) kill(in *instance) {
	p.mu.Lock()
	defer p.mu.Unlock()
	in.dead = true
	p.notifyLocked()
	in.closeGone()
	if in.started && !in.reaped {
		procgroup.Kill(in.cmd)
	}
}

// Runtime API handlers. Status codes and error types follow the Runtime API's OpenAPI
// document and the runtime interface emulator [lambda-local.md §1, "Endpoints"].

// writeError writes the Runtime API's error body.
func writeError(w http.ResponseWriter, status int, errorType, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = fmt.Fprintf(w, `{"errorMessage":%s,"errorType":%s}`, strconv.Quote(message), strconv.Quote(errorType))
}

func writeAccepted(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusAccepted)
	_, _ = io.WriteString(w, `{"status":"OK"}`)
}

// next is GET /runtime/invocation/next: it frees nothing by itself (the slot of the process's
// previous invocation freed when it answered), and blocks until an event comes. A process may
// have as many calls pending or invocations unanswered as the instance has slots: one, or
// LMIConcurrency.
func (in *instance) next(w http.ResponseWriter, r *http.Request) {
	p := in.p
	p.mu.Lock()
	if in.waiting+in.unanswered() >= p.slots {
		p.mu.Unlock()
		msg := fmt.Sprintf("%d calls of /next pending and %d invocations not answered: the instance runs %d at a time", in.waiting, in.unanswered(), p.slots)
		writeError(w, http.StatusForbidden, "InvalidStateTransition", msg)
		return
	}
	in.waiting++
	if !in.ready {
		in.ready = true
		p.notifyLocked()
	}
	p.mu.Unlock()

	select {
	case inv := <-in.events:
		now := time.Now()
		p.mu.Lock()
		in.waiting--
		in.reserved--
		in.running++
		in.cur[inv.id] = inv
		inv.deadline = now.Add(p.cfg.Timeout)
		in.stats.Invocations++
		in.stats.MaxInFlight = max(in.stats.MaxInFlight, in.running)
		p.mu.Unlock()
		close(inv.handed)
		h := w.Header()
		h.Set("Lambda-Runtime-Aws-Request-Id", inv.id)
		h.Set("Lambda-Runtime-Deadline-Ms", strconv.FormatInt(inv.deadline.UnixMilli(), 10))
		h.Set("Lambda-Runtime-Invoked-Function-Arn", p.arn)
		h.Set("Lambda-Runtime-Trace-Id", newTraceID())
		h.Set("Content-Type", "application/json")
		h.Set("Content-Length", strconv.Itoa(len(inv.payload)))
		if p.cfg.OnInvoke != nil {
			p.cfg.OnInvoke(inv.id)
		}
		if p.cfg.OnEvent != nil {
			p.cfg.OnEvent(in.n, in.cmd.Process.Pid, inv.id, inv.payload)
		}
		w.WriteHeader(http.StatusOK)
		_, _ = w.Write(inv.payload)
	case <-in.gone:
		p.mu.Lock()
		in.waiting--
		p.mu.Unlock()
		writeError(w, http.StatusInternalServerError, "InternalServerError", "the execution environment is shutting down")
	case <-r.Context().Done():
		p.mu.Lock()
		in.waiting--
		p.mu.Unlock()
	}
}

// unanswered counts the invocations handed to the process that it has not answered and that
// have no outcome yet (an LMI invocation past its deadline has one, yet keeps its slot).
// p.mu must be held.
func (in *instance) unanswered() int {
	n := 0
	for _, inv := range in.cur {
		if !inv.answered {
			n++
		}
	}
	return n
}

// answer delivers resp as the answer to invocation id, unless id is not one of the
// instance's unanswered invocations. An LMI invocation whose caller already gave up (its
// deadline passed, or its context ended) is answered too: the answer is dropped, and its
// slot frees. It returns false when the answer is refused.
func (in *instance) answer(id string, resp esm.Response) bool {
	p := in.p
	p.mu.Lock()
	defer p.mu.Unlock()
	inv := in.cur[id]
	if inv == nil || (inv.answered && !p.lmi()) {
		return false
	}
	delete(in.cur, id)
	in.running--
	p.seq++
	in.lastFree = p.seq
	p.notifyLocked()
	if inv.answered {
		if inv.overrun != nil {
			inv.overrun.Answered = time.Now()
		}
		return true
	}
	inv.answered = true
	inv.settled = true
	p.busy--
	inv.done <- resp
	return true
}

// taken reports whether the process's answer r to invocation id may be taken. When
// Config.OnAnswer stopped or killed the process instead, it returns false once the instance
// is gone or r's connection closed, with nothing written: the process learns nothing more (a
// thread not yet stopped by SIGSTOP would read a reply), and the invocation ends as the
// process does. For a Lambda Managed Instances function, OnAnswer's false holds the answer
// until the invocation has timed out for its caller, then takes it (late): the invocation ran
// past its deadline, and the process went on with its others.
func (in *instance) taken(r *http.Request, id string) bool {
	p := in.p
	if p.cfg.OnAnswer == nil || p.cfg.OnAnswer(in.n, in.cmd.Process.Pid, id) {
		return true
	}
	if p.lmi() {
		p.mu.Lock()
		inv := in.cur[id]
		p.mu.Unlock()
		if inv == nil {
			return true // answer refuses it
		}
		select {
		case <-inv.claimed:
			return true
		case <-in.gone:
		case <-r.Context().Done():
		}
		return false
	}
	select {
	case <-in.gone:
	case <-r.Context().Done():
	}
	return false
}

// readBody reads at most max bytes of r's body; n is the body's whole size.
func readBody(r *http.Request, max int) (body []byte, n int64, err error) {
	body, err = io.ReadAll(io.LimitReader(r.Body, int64(max)+1))
	n = int64(len(body))
	if err == nil && len(body) > max {
		var rest int64
		rest, err = io.Copy(io.Discard, r.Body)
		n += rest
	}
	return body, n, err
}

func (in *instance) invalidID(w http.ResponseWriter, id string) {
	writeError(w, http.StatusBadRequest, "InvalidRequestID", "Invalid request ID: "+strconv.Quote(id))
}

// response is POST /runtime/invocation/{id}/response.
func (in *instance) response(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, n, err := readBody(r, limits.MaxLambdaResponseBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, "TruncatedHTTPRequest", fmt.Sprintf("reading the response: %v", err))
		return
	}
	if n > limits.MaxLambdaResponseBytes {
		ok := in.answer(id, esm.Response{Err: esm.ResponseTooLarge(n)})
		if !ok {
			in.invalidID(w, id)
			return
		}
		writeError(w, http.StatusRequestEntityTooLarge, "RequestEntityTooLarge",
			fmt.Sprintf("Exceeded maximum allowed payload size (%d bytes).", limits.MaxLambdaResponseBytes))
		return
	}
	if !in.taken(r, id) {
		return
	}
	resp := esm.Response{Payload: body}
	// A streamed response that fails midway reports its error in trailers
	// [lambda-local.md §1, "How aws-lambda-go consumes the API"].
	if t := r.Trailer.Get("Lambda-Runtime-Function-Error-Type"); t != "" {
		raw, _ := base64.StdEncoding.DecodeString(r.Trailer.Get("Lambda-Runtime-Function-Error-Body"))
		resp = esm.Response{Err: parseErrorBody(raw, t)}
	}
	if !in.answer(id, resp) {
		in.invalidID(w, id)
		return
	}
	writeAccepted(w)
}

// invocationError is POST /runtime/invocation/{id}/error.
func (in *instance) invocationError(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	body, n, err := readBody(r, limits.MaxLambdaResponseBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, "TruncatedHTTPRequest", fmt.Sprintf("reading the error: %v", err))
		return
	}
	if n > limits.MaxLambdaResponseBytes {
		body = body[:limits.MaxLambdaResponseBytes]
	}
	if !in.taken(r, id) {
		return
	}
	if !in.answer(id, esm.Response{Err: parseErrorBody(body, r.Header.Get("Lambda-Runtime-Function-Error-Type"))}) {
		in.invalidID(w, id)
		return
	}
	writeAccepted(w)
}

// initError is POST /runtime/init/error: the instance is dead; the invocation that started
// it fails with this error ("Error will be served in response to the first invoke").
func (in *instance) initError(w http.ResponseWriter, r *http.Request) {
	body, _, err := readBody(r, limits.MaxLambdaResponseBytes)
	if err != nil {
		writeError(w, http.StatusBadRequest, "TruncatedHTTPRequest", fmt.Sprintf("reading the error: %v", err))
		return
	}
	p := in.p
	p.mu.Lock()
	if in.ready || in.dead {
		p.mu.Unlock()
		writeError(w, http.StatusForbidden, "InvalidStateTransition", "init is over")
		return
	}
	in.initErr = parseErrorBody(body, r.Header.Get("Lambda-Runtime-Function-Error-Type"))
	p.mu.Unlock()
	writeAccepted(w)
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	p.kill(in)
}

// extensionRegister is POST /2020-01-01/extension/register, which aws-lambda-go's
// WithEnableSIGTERM calls; the extension is accepted and never sent an event.
func (in *instance) extensionRegister(w http.ResponseWriter, r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	if r.Header.Get("Lambda-Extension-Name") == "" {
		writeError(w, http.StatusBadRequest, "InvalidRequest", "missing header Lambda-Extension-Name")
		return
	}
	p := in.p
	w.Header().Set("Lambda-Extension-Identifier", newUUID())
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	_, _ = fmt.Fprintf(w, `{"functionName":%s,"functionVersion":"$LATEST","handler":%s}`,
		strconv.Quote(p.cfg.Name), strconv.Quote(p.cfg.Bootstrap))
}

// extensionNext is GET /2020-01-01/extension/event/next: it blocks until the instance ends.
func (in *instance) extensionNext(w http.ResponseWriter, r *http.Request) {
	select {
	case <-in.exited:
	case <-r.Context().Done():
	}
}
