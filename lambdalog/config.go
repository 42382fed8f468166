package lambdalog

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"strconv"
	"strings"
)

// Option configures a Handler. Options given in code win over POWERTOOLS_* variables, and
// AWS_LAMBDA_LOG_LEVEL wins over both (see the package doc).
type Option func(*config)

type config struct {
	service  string
	level    slog.Level
	levelSet bool       // WithLevel was given
	floor    slog.Level // AWS_LAMBDA_LOG_LEVEL: Lambda drops JSON lines below it
	rate     float64
	rateSet  bool
	buffer   bool
	bufferAt slog.Level
	flushAt  slog.Level
	bufMax   int
}

// DefaultBufferLines is the number of lines an invocation's buffer holds when WithBuffer is
// given no cap: the oldest line is dropped for a new one beyond it.
const DefaultBufferLines = 100

// WithService names the service in every line's "service" key. Default:
// POWERTOOLS_SERVICE_NAME, else "service_undefined" (Powertools' default).
func WithService(name string) Option { return func(c *config) { c.service = name } }

// WithLevel sets the lowest level written. Default: POWERTOOLS_LOG_LEVEL, else INFO.
// AWS_LAMBDA_LOG_LEVEL, when set, wins over it (Powertools' precedence).
func WithLevel(l slog.Level) Option { return func(c *config) { c.level, c.levelSet = l, true } }

// WithSampleRate sets the probability, in [0, 1], that an invocation logs at DEBUG whatever the
// level; the draw is made once per invocation by Wrap. Default: POWERTOOLS_LOGGER_SAMPLE_RATE,
// else 0 (never).
func WithSampleRate(rate float64) Option { return func(c *config) { c.rate, c.rateSet = rate, true } }

// WithBuffer holds the lines at level at and below in the invocation's buffer, instead of
// writing them, until a line at flushAt or above is written (the buffered lines go first) or
// Flush is called; Wrap discards what is left when the invocation ends. maxLines caps the
// buffer (0: DefaultBufferLines); beyond it the oldest line is dropped, and the flush writes one
// WARN line saying how many. Default: no buffering. Powertools' defaults are
// WithBuffer(slog.LevelDebug, slog.LevelError, ...).
func WithBuffer(at, flushAt slog.Level, maxLines int) Option {
	return func(c *config) {
		c.buffer, c.bufferAt, c.flushAt, c.bufMax = true, at, flushAt, maxLines
	}
}

func newConfig(opts []Option) (*config, []string) {
	c := &config{floor: LevelTrace - 1}
	for _, o := range opts {
		o(c)
	}
	var problems []string
	if c.service == "" {
		c.service = os.Getenv("POWERTOOLS_SERVICE_NAME")
	}
	if c.service == "" {
		c.service = "service_undefined"
	}
	// Powertools' precedence (Python docs/core/logger.md, "Log level precedence"; TypeScript's
	// ConfigServiceInterface.getAwsLogLevel: "always takes precedence"): AWS_LAMBDA_LOG_LEVEL,
	// then the level given in code, then POWERTOOLS_LOG_LEVEL, then INFO.
	level := slog.LevelInfo
	if v := os.Getenv("POWERTOOLS_LOG_LEVEL"); v != "" {
		if l, ok := parseLevel(v); ok {
			level = l
		} else {
			problems = append(problems, fmt.Sprintf("POWERTOOLS_LOG_LEVEL=%q is not a level (TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL); using INFO", v))
		}
	}
	if c.levelSet {
		level = c.level
	}
	if v := os.Getenv("AWS_LAMBDA_LOG_LEVEL"); v != "" {
		if l, ok := parseLevel(v); ok {
			level, c.floor = l, l
		} else {
			problems = append(problems, fmt.Sprintf("AWS_LAMBDA_LOG_LEVEL=%q is not a level; ignored", v))
		}
	}
	c.level = level
	if !c.rateSet {
		if v := os.Getenv("POWERTOOLS_LOGGER_SAMPLE_RATE"); v != "" {
			r, err := strconv.ParseFloat(v, 64)
			if err != nil {
				r = math.NaN()
			}
			c.rate = r
			if !(r >= 0 && r <= 1) {
				problems = append(problems, fmt.Sprintf("POWERTOOLS_LOGGER_SAMPLE_RATE=%q is not a number in [0, 1]; sampling is off", v))
				c.rate = 0
			}
		}
	} else if !(c.rate >= 0 && c.rate <= 1) {
		problems = append(problems, fmt.Sprintf("WithSampleRate(%v) is not in [0, 1]; sampling is off", c.rate))
		c.rate = 0
	}
	if c.buffer && c.bufMax <= 0 {
		c.bufMax = DefaultBufferLines
	}
	return c, problems
}

// parseLevel reads a level as AWS_LAMBDA_LOG_LEVEL and Powertools name them, in any case.
func parseLevel(s string) (slog.Level, bool) {
	switch strings.ToUpper(strings.TrimSpace(s)) {
	case "TRACE":
		return LevelTrace, true
	case "DEBUG":
		return slog.LevelDebug, true
	case "INFO":
		return slog.LevelInfo, true
	case "WARN", "WARNING":
		return slog.LevelWarn, true
	case "ERROR":
		return slog.LevelError, true
	case "FATAL", "CRITICAL":
		return LevelCritical, true
	}
	return 0, false
}

// min is the lowest level written at once in the invocation st belongs to: DEBUG (or lower if
// so configured) when the invocation is sampled, never below Lambda's own floor.
func (c *config) min(st *state) slog.Level {
	l := c.level
	if st != nil && c.rate > 0 && st.draw < c.rate && l > slog.LevelDebug {
		l = slog.LevelDebug
	}
	return max(l, c.floor)
}

// buffers reports whether a line at l is held in st's buffer rather than dropped. Lines below
// Lambda's floor are never held: Lambda would drop them when written.
func (c *config) buffers(st *state, l slog.Level) bool {
	return c.buffer && st != nil && l <= c.bufferAt && l >= c.floor
}
