package metrics

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit"
	"github.com/kafkalambda/toolkit/internal/invocation"
	"github.com/kafkalambda/toolkit/internal/recovered"
)

// The environment variables Powertools for AWS Lambda reads, with the same meaning, so that a
// function's template configures this package and Powertools' Python and TypeScript editions
// alike. An option given to New wins over its variable, as in Powertools
// (https://docs.aws.amazon.com/powertools/typescript/latest/environment-variables: "Explicit
// parameters in your code take precedence over environment variables").
const (
	EnvNamespace    = "POWERTOOLS_METRICS_NAMESPACE"     // the namespace, when WithNamespace is not given
	EnvService      = "POWERTOOLS_SERVICE_NAME"          // the service dimension, when WithService is not given
	EnvDisabled     = "POWERTOOLS_METRICS_DISABLED"      // "true": documents are built and checked, never written
	EnvFunctionName = "POWERTOOLS_METRICS_FUNCTION_NAME" // the ColdStart metric's function_name, instead of Lambda's
	envDev          = "POWERTOOLS_DEV"                   // "true" disables metrics when EnvDisabled is unset
)

// Metrics is what every invocation of a function shares: namespace, service, default
// dimensions, where documents go. It holds no invocation's metrics: Start gives each
// invocation a recorder of its own in its context, so a Metrics is safe for concurrent use by
// invocations running at once in one process. Make one with New, at init.
type Metrics struct {
	namespace string
	service   string
	function  string      // EnvFunctionName: the ColdStart metric's function_name, when set
	defaults  []dimension // the service first, then the default dimensions sorted by name
	out       io.Writer
	coldStart bool
	disabled  bool
}

// Option configures New.
type Option func(*config) error

// config is what the options set; nil means "not given", so that the environment decides.
type config struct {
	namespace, service *string
	defaults           map[string]string
	out                io.Writer
	coldStart          *bool
}

// New returns a Metrics configured by opts over the environment (EnvNamespace, EnvService,
// EnvDisabled, EnvFunctionName). A namespace is required, from WithNamespace or EnvNamespace, unless metrics
// are disabled: a function that counts into no namespace should fail at init, not lose its
// metrics. A bad option or variable is a *toolkit.OptionError.
func New(opts ...Option) (*Metrics, error) {
	var c config
	for _, o := range opts {
		if o == nil {
			continue
		}
		if err := o(&c); err != nil {
			return nil, err
		}
	}
	m := &Metrics{out: os.Stdout, coldStart: true}
	if c.out != nil {
		m.out = c.out
	}
	if c.coldStart != nil {
		m.coldStart = *c.coldStart
	}
	disabled, err := disabledByEnv()
	if err != nil {
		return nil, err
	}
	m.disabled = disabled

	ns, option := os.Getenv(EnvNamespace), EnvNamespace
	if c.namespace != nil {
		ns, option = *c.namespace, "WithNamespace"
	}
	if ns == "" && !m.disabled {
		return nil, &toolkit.OptionError{Package: "metrics", Option: "WithNamespace",
			Reason: "a namespace is required: give WithNamespace or set " + EnvNamespace}
	}
	if ns != "" {
		if reason := checkNamespace(ns); reason != "" {
			return nil, &toolkit.OptionError{Package: "metrics", Option: option, Reason: reason}
		}
	}
	m.namespace = ns

	service, option := os.Getenv(EnvService), EnvService
	if c.service != nil {
		service, option = *c.service, "WithService"
	}
	if service != "" {
		if reason := checkDimension(ServiceDimension, service); reason != "" {
			return nil, &toolkit.OptionError{Package: "metrics", Option: option, Reason: reason}
		}
		m.service = service
		m.defaults = append(m.defaults, dimension{ServiceDimension, service})
	}
	if fn := os.Getenv(EnvFunctionName); fn != "" {
		if reason := checkDimension(functionNameDimension, fn); reason != "" {
			return nil, &toolkit.OptionError{Package: "metrics", Option: EnvFunctionName, Reason: reason}
		}
		m.function = fn
	}
	names := make([]string, 0, len(c.defaults))
	for n := range c.defaults {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		if n == ServiceDimension && m.service != "" {
			return nil, &toolkit.OptionError{Package: "metrics", Option: "WithDefaultDimensions",
				Reason: `"service" is the service's dimension: give it with WithService`}
		}
		m.defaults = append(m.defaults, dimension{n, c.defaults[n]})
	}
	if len(m.defaults) > MaxDimensions {
		return nil, &toolkit.OptionError{Package: "metrics", Option: "WithDefaultDimensions",
			Reason: "more than 30 dimensions with the service's: EMF refuses a dimension set of more than 30"}
	}
	return m, nil
}

// disabledByEnv decides as Powertools for Python's is_metrics_disabled does
// (aws_lambda_powertools/metrics/functions.py): EnvDisabled true disables; POWERTOOLS_DEV true
// disables when EnvDisabled is unset. A value that is not a boolean is refused, as
// Powertools' strtobool refuses it, rather than read as false.
func disabledByEnv() (bool, error) {
	v, set := os.LookupEnv(EnvDisabled)
	if set {
		b, ok := parseBool(v)
		if !ok {
			return false, &toolkit.OptionError{Package: "metrics", Option: EnvDisabled, Reason: "not a boolean: " + strconv.Quote(v)}
		}
		return b, nil
	}
	if v, set := os.LookupEnv(envDev); set {
		b, ok := parseBool(v)
		if !ok {
			return false, &toolkit.OptionError{Package: "metrics", Option: envDev, Reason: "not a boolean: " + strconv.Quote(v)}
		}
		return b, nil
	}
	return false, nil
}

// parseBool reads the values Python's strtobool reads, which Powertools uses for its variables.
func parseBool(v string) (bool, bool) {
	switch strings.ToLower(strings.TrimSpace(v)) {
	case "1", "true", "t", "yes", "y", "on":
		return true, true
	case "0", "false", "f", "no", "n", "off":
		return false, true
	}
	return false, false
}

// WithNamespace sets the CloudWatch namespace of every metric (1 to 255 characters, not
// starting "AWS/", which AWS reserves). Default: EnvNamespace.
func WithNamespace(ns string) Option {
	return func(c *config) error {
		if reason := checkNamespace(ns); reason != "" {
			return &toolkit.OptionError{Package: "metrics", Option: "WithNamespace", Reason: reason}
		}
		c.namespace = &ns
		return nil
	}
}

// WithService sets the value of the "service" dimension every metric carries; "" means no
// service dimension, whatever EnvService says (for metrics whose dimensions must not change
// with the function's service name, such as package batch's). Default: EnvService; without
// either, metrics have no service dimension (as in Powertools).
func WithService(name string) Option {
	return func(c *config) error {
		if name == "" {
			c.service = &name
			return nil
		}
		if reason := checkDimension(ServiceDimension, name); reason != "" {
			return &toolkit.OptionError{Package: "metrics", Option: "WithService", Reason: reason}
		}
		c.service = &name
		return nil
	}
}

// WithDefaultDimensions sets dimensions every metric of every invocation carries, besides the
// service (Powertools' default dimensions). They are written sorted by name. Default: none.
func WithDefaultDimensions(dims map[string]string) Option {
	return func(c *config) error {
		if len(dims) > MaxDimensions {
			return &toolkit.OptionError{Package: "metrics", Option: "WithDefaultDimensions",
				Reason: "more than 30 dimensions: EMF refuses a dimension set of more than 30"}
		}
		c.defaults = make(map[string]string, len(dims))
		for n, v := range dims {
			if reason := checkDimension(n, v); reason != "" {
				return &toolkit.OptionError{Package: "metrics", Option: "WithDefaultDimensions", Reason: reason}
			}
			c.defaults[n] = v
		}
		return nil
	}
}

// WithOutput sets where documents are written, one line each. Default: os.Stdout, where
// Lambda sends them to CloudWatch Logs; lines to os.Stdout are written one at a time across
// every package of the toolkit, so that no two interleave.
func WithOutput(w io.Writer) Option {
	return func(c *config) error {
		if w == nil {
			return &toolkit.OptionError{Package: "metrics", Option: "WithOutput", Reason: "nil writer"}
		}
		c.out = w
		return nil
	}
}

// WithColdStartMetric sets whether the first invocation of the execution environment writes
// a ColdStart metric (Count 1) in a document of its own, with the function_name and service
// dimensions, as Powertools' capture_cold_start_metric does. Default: true.
func WithColdStartMetric(enabled bool) Option {
	return func(c *config) error {
		c.coldStart = &enabled
		return nil
	}
}

// Start returns ctx carrying a recorder of m for the invocation ctx belongs to, which Add and
// its siblings fill and Flush writes. Handle and Wrap call it; call it yourself only when
// neither fits (and Flush when the documents are due). A ctx that already carries a recorder
// of m keeps it (a nested wrapper of the same Metrics writes once). A recorder of another
// Metrics is not shared: m's namespace and dimensions are not another's, so Start gives m a
// recorder of its own, and Add and Flush with the returned ctx use it, while the other's stays
// with the ctx it was started in. That is how packages batch and fanout write their documents
// of a batch beside the function's own, in the same invocation.
func (m *Metrics) Start(ctx context.Context) context.Context {
	if r, ok := ctx.Value(recorderKey{}).(*recorder); ok && r.m == m {
		return ctx
	}
	ctx, info := invocation.Start(ctx)
	r := &recorder{m: m, info: info, coldPending: info.ColdStart && m.coldStart}
	return context.WithValue(ctx, recorderKey{}, r)
}

// Handle returns h wrapped so that each invocation has its own recorder in its context and
// its metrics are written when h returns (or panics). A write that fails is returned, joined
// to h's error: metrics are never lost silently.
//
// A panic of h (or of the output's Write) does not go on to aws-lambda-go, which would exit
// the process after reporting it, ending every other invocation the process serves on Lambda
// Managed Instances (AWS: "Understanding the Lambda Managed Instances execution
// environment"): the metrics are written, one line at level Error with the panic's value and
// stack goes to slog.Default(), and the invocation answers with an error that says h panicked.
//
//	lambda.Start(metrics.Handle(m, handler))
func Handle[TIn, TOut any](m *Metrics, h func(context.Context, TIn) (TOut, error)) func(context.Context, TIn) (TOut, error) {
	return func(ctx context.Context, in TIn) (out TOut, err error) {
		ctx = m.Start(ctx)
		defer func() {
			if p := recover(); p != nil {
				err = panicked(ctx, p)
			}
			err = joinFlush(ctx, err)
		}()
		return h(ctx, in)
	}
}

// Handler is aws-lambda-go's lambda.Handler, named here so that this package links nothing of
// aws-lambda-go's runtime client; a lambda.Handler is a Handler and the other way round.
type Handler interface {
	Invoke(ctx context.Context, payload []byte) ([]byte, error)
}

// Wrap is Handle for a lambda.Handler, such as batch.KafkaHandler's:
//
//	lambda.StartHandler(m.Wrap(batch.KafkaHandler(process)))
func (m *Metrics) Wrap(h Handler) Handler { return wrapped{m, h} }

type wrapped struct {
	m *Metrics
	h Handler
}

func (w wrapped) Invoke(ctx context.Context, payload []byte) (out []byte, err error) {
	ctx = w.m.Start(ctx)
	defer func() {
		if p := recover(); p != nil {
			out, err = nil, panicked(ctx, p)
		}
		err = joinFlush(ctx, err)
	}()
	return w.h.Invoke(ctx, payload)
}

// panicked is the error of a handler that panicked with p, after its line at level Error;
// call it in the deferred function that recovered, so that the stack is the panic's.
func panicked(ctx context.Context, p any) error {
	e := recovered.New("metrics: the handler", p)
	slog.Default().LogAttrs(ctx, slog.LevelError, "handler panicked", slog.String("error", e.Error()), slog.String("stack", string(e.Stack)))
	return e
}

func joinFlush(ctx context.Context, err error) error {
	if ferr := recovered.CallErr("metrics: the output's Write", func() error { return Flush(ctx) }); ferr != nil {
		if err == nil {
			return ferr
		}
		return errors.Join(err, ferr)
	}
	return err
}
