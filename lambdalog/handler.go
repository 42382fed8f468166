package lambdalog

import (
	"context"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/internal/invocation"
)

// Powertools' key names (Powertools for AWS Lambda, Python and TypeScript, docs/core/logger.md).
const (
	keyLocation      = "location"
	keyService       = "service"
	keyColdStart     = "cold_start"
	keyFunctionName  = "function_name"
	keyMemorySize    = "function_memory_size"
	keyFunctionARN   = "function_arn"
	keyRequestID     = "function_request_id"
	keyTraceID       = "xray_trace_id"
	keySamplingRate  = "sampling_rate"
	keyCorrelationID = "correlation_id"
)

// Levels beyond slog's four, named as AWS_LAMBDA_LOG_LEVEL names them (TRACE, FATAL) and as
// Powertools writes them (CRITICAL for FATAL, as Powertools TypeScript maps it).
const (
	LevelTrace    = slog.LevelDebug - 4
	LevelCritical = slog.LevelError + 4
)

// Handler is a slog.Handler that adds Powertools' keys to every record and passes it to the
// handler it wraps. Make one with NewHandler or New; it is safe for concurrent use.
type Handler struct {
	next slog.Handler
	cfg  *config
	// goas holds the groups (and the attributes given after them) opened by WithGroup: the
	// Powertools keys stay at the top level of a line, so groups are applied here, at Handle,
	// rather than in next.
	goas []groupOrAttrs
}

type groupOrAttrs struct {
	group string
	attrs []slog.Attr
}

// NewHandler returns a Handler that adds Powertools' keys to each record and writes it
// through next. This Handler alone decides which levels are written (see the package doc for
// the precedence); next's own level is not consulted. Give next ReplaceAttr to name slog's
// built-in keys as Powertools does (timestamp, message).
func NewHandler(next slog.Handler, opts ...Option) *Handler {
	cfg, problems := newConfig(opts)
	h := &Handler{next: next, cfg: cfg}
	// Fail loud, not closed: a misspelt level or rate must not stop a function's logging, but it
	// must be seen. The line names the setting, never a record's data.
	for _, p := range problems {
		r := slog.NewRecord(time.Now(), slog.LevelWarn, "lambdalog: "+p, 0)
		r.AddAttrs(slog.String(keyService, cfg.service))
		_ = next.Handle(context.Background(), r)
	}
	return h
}

// New returns a *slog.Logger writing one JSON object a line to standard output, as Lambda's
// JSON log format and Powertools do, with Powertools' keys. AWS_LAMBDA_LOG_FORMAT=Text makes
// it write slog's text format (key=value) with the same keys instead.
func New(opts ...Option) *slog.Logger {
	hopts := &slog.HandlerOptions{Level: LevelTrace, ReplaceAttr: ReplaceAttr}
	var next slog.Handler
	if strings.EqualFold(os.Getenv("AWS_LAMBDA_LOG_FORMAT"), "text") {
		next = slog.NewTextHandler(os.Stdout, hopts)
	} else {
		next = slog.NewJSONHandler(os.Stdout, hopts)
	}
	return slog.New(NewHandler(next, opts...))
}

// timestampLayout is ISO 8601 in UTC with milliseconds, as Powertools TypeScript and Lambda's
// own JSON log format write it ("2021-12-12T21:21:08.921Z").
const timestampLayout = "2006-01-02T15:04:05.000Z"

// ReplaceAttr names slog's built-in keys as Powertools does: time becomes "timestamp" (UTC,
// milliseconds, ISO 8601), msg becomes "message", and the levels below DEBUG and above ERROR
// are TRACE and CRITICAL. Pass it in slog.HandlerOptions of the handler given to NewHandler.
func ReplaceAttr(groups []string, a slog.Attr) slog.Attr {
	if len(groups) > 0 {
		return a
	}
	switch a.Key {
	case slog.TimeKey:
		if a.Value.Kind() == slog.KindTime { // Value.Time, not Value.Any: no allocation
			return slog.String("timestamp", a.Value.Time().UTC().Format(timestampLayout))
		}
		a.Key = "timestamp"
	case slog.MessageKey:
		a.Key = "message"
	case slog.LevelKey:
		// A string, not the slog.Level slog passes: the JSON handler encodes a Level through
		// encoding/json, which allocates on every line.
		if l, ok := a.Value.Any().(slog.Level); ok {
			name, ok := levelName(l)
			if !ok {
				name = l.String()
			}
			a.Value = slog.StringValue(name)
		}
	}
	return a
}

func levelName(l slog.Level) (string, bool) {
	switch l {
	case LevelTrace:
		return "TRACE", true
	case LevelCritical:
		return "CRITICAL", true
	}
	return "", false
}

// Enabled reports whether a record at level l is written now or held in the invocation's
// buffer.
func (h *Handler) Enabled(ctx context.Context, l slog.Level) bool {
	st := stateFrom(ctx)
	if l >= h.cfg.min(st) {
		return true
	}
	return h.cfg.buffers(st, l)
}

// Handle adds Powertools' keys to r and writes it through the wrapped handler, or holds it in
// the invocation's buffer when its level is buffered.
func (h *Handler) Handle(ctx context.Context, r slog.Record) error {
	st := stateFrom(ctx)
	var arr [12]slog.Attr
	attrs := h.lambdaAttrs(arr[:0], ctx, st, r.PC)
	if len(h.goas) == 0 {
		r.AddAttrs(attrs...)
	} else {
		r = h.nest(r, attrs)
	}
	if r.Level < h.cfg.min(st) {
		if h.cfg.buffers(st, r.Level) {
			st.buf.add(h.next, ctx, r.Clone(), h.cfg.bufMax)
		}
		return nil
	}
	if h.cfg.buffer && r.Level >= h.cfg.flushAt && st != nil {
		st.buf.flush(ctx)
	}
	return h.next.Handle(ctx, r)
}

// nest builds a record whose top level is the Powertools keys and whose attributes sit under
// the groups opened by WithGroup.
func (h *Handler) nest(r slog.Record, top []slog.Attr) slog.Record {
	inner := make([]slog.Attr, 0, r.NumAttrs())
	r.Attrs(func(a slog.Attr) bool { inner = append(inner, a); return true })
	for i := len(h.goas) - 1; i >= 0; i-- {
		g := h.goas[i]
		if g.group == "" {
			inner = append(append([]slog.Attr(nil), g.attrs...), inner...)
			continue
		}
		inner = []slog.Attr{{Key: g.group, Value: slog.GroupValue(inner...)}}
	}
	out := slog.NewRecord(r.Time, r.Level, r.Message, r.PC)
	out.AddAttrs(top...)
	out.AddAttrs(inner...)
	return out
}

// lambdaAttrs appends the Powertools keys of one line: location and service always, the
// invocation's keys when ctx belongs to one, the sampling rate when set, the correlation ID
// when the context carries one.
func (h *Handler) lambdaAttrs(dst []slog.Attr, ctx context.Context, st *state, pc uintptr) []slog.Attr {
	if pc != 0 {
		dst = append(dst, slog.String(keyLocation, location(pc)))
	}
	dst = append(dst, slog.String(keyService, h.cfg.service))
	var in invocation.Info
	var ok bool
	var trace string
	if st != nil {
		in, ok, trace = st.info, true, st.trace
	} else if in, ok = invocation.From(ctx); ok {
		trace = traceRoot(in.TraceID)
	}
	if ok {
		dst = append(dst,
			slog.Bool(keyColdStart, in.ColdStart),
			slog.String(keyFunctionName, in.FunctionName),
			slog.Int(keyMemorySize, in.MemoryMB),
			slog.String(keyFunctionARN, in.FunctionARN),
			slog.String(keyRequestID, in.RequestID))
		if trace != "" {
			dst = append(dst, slog.String(keyTraceID, trace))
		}
	}
	if h.cfg.rate > 0 {
		dst = append(dst, slog.Float64(keySamplingRate, h.cfg.rate))
	}
	if id, ok := CorrelationID(ctx); ok {
		dst = append(dst, slog.String(keyCorrelationID, id))
	}
	return dst
}

// WithAttrs returns a Handler whose lines carry attrs.
func (h *Handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	if len(h.goas) == 0 { // top-level attributes: let next preformat them (the fast path)
		return &Handler{next: h.next.WithAttrs(attrs), cfg: h.cfg}
	}
	return &Handler{next: h.next, cfg: h.cfg, goas: append(h.goas[:len(h.goas):len(h.goas)], groupOrAttrs{attrs: attrs})}
}

// WithGroup returns a Handler that puts the attributes of later calls and records under name;
// the Powertools keys stay at the top level.
func (h *Handler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &Handler{next: h.next, cfg: h.cfg, goas: append(h.goas[:len(h.goas):len(h.goas)], groupOrAttrs{group: name})}
}

// locations caches "pkg.Func:line" per program counter: the set of call sites of a program is
// fixed by its code, so the cache is bounded by it.
var locations sync.Map // uintptr -> string

// location is Powertools Python's "module.function:line" ("collect.handler:10") in Go's terms:
// the function qualified by its package's name, and the line.
func location(pc uintptr) string {
	if s, ok := locations.Load(pc); ok {
		return s.(string)
	}
	f, _ := runtime.CallersFrames([]uintptr{pc}).Next()
	fn := f.Function
	if i := strings.LastIndexByte(fn, '/'); i >= 0 {
		fn = fn[i+1:]
	}
	s := fn + ":" + itoa(f.Line)
	locations.Store(pc, s)
	return s
}

func itoa(n int) string {
	var b [20]byte
	i := len(b)
	if n == 0 {
		return "0"
	}
	for n > 0 {
		i--
		b[i] = byte('0' + n%10)
		n /= 10
	}
	return string(b[i:])
}

// traceRoot is the Root of an X-Ray trace header ("Root=1-5759e988-bd862e3fe1be46a994272793;
// Parent=...;Sampled=1"), which Powertools writes as xray_trace_id.
func traceRoot(header string) string {
	for f := range strings.SplitSeq(header, ";") {
		if v, ok := strings.CutPrefix(strings.TrimSpace(f), "Root="); ok {
			if len(v) > 64 { // a Root is 35 characters; a longer one is not X-Ray's
				return ""
			}
			return v
		}
	}
	return ""
}
