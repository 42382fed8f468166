package samlint

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/suggest"
	"github.com/kafkalambda/toolkit/internal/template"
)

// The checks of the functions' environment variables that Powertools and the toolkit's
// lambdalog, metrics, idempotency and parameters packages read. Both read a variable they do
// not know nothing at all, and read a value they cannot use as a default (or refuse to start):
// a misspelt name or value deploys fine and the setting is silently not there.

// Rule IDs of the environment checks, as "klt lint --format json" gives them.
const (
	RuleEnvName  = "powertools-env-name"
	RuleEnvValue = "env-value"
)

// powertoolsEnv are the POWERTOOLS_* variables that mean something: those the toolkit reads
// (lambdalog/config.go, metrics/metrics.go, idempotency.DisabledEnv, parameters.EnvMaxAge)
// and those Powertools documents in one edition or another, since one template may hold
// functions in several languages:
//   - Python: https://docs.powertools.aws.dev/lambda/python/latest/#environment-variables and
//     aws_lambda_powertools/shared/constants.py (POWERTOOLS_TRACE_MIDDLEWARES,
//     POWERTOOLS_LOG_DEDUPLICATION_DISABLED, POWERTOOLS_PARAMETERS_SSM_DECRYPT ...);
//   - TypeScript: https://docs.aws.amazon.com/powertools/typescript/latest/environment-variables
//     (POWERTOOLS_TRACE_ENABLED, POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS ...);
//   - .NET: https://docs.aws.amazon.com/powertools/dotnet/references (POWERTOOLS_LOGGER_CASE).
var powertoolsEnv = []string{
	"POWERTOOLS_SERVICE_NAME",
	"POWERTOOLS_LOG_LEVEL",
	"POWERTOOLS_LOGGER_SAMPLE_RATE",
	"POWERTOOLS_LOGGER_LOG_EVENT",
	"POWERTOOLS_LOGGER_CASE",
	"POWERTOOLS_LOG_DEDUPLICATION_DISABLED",
	"POWERTOOLS_METRICS_NAMESPACE",
	"POWERTOOLS_METRICS_DISABLED",
	"POWERTOOLS_METRICS_FUNCTION_NAME",
	"POWERTOOLS_TRACE_DISABLED",
	"POWERTOOLS_TRACE_ENABLED",
	"POWERTOOLS_TRACE_MIDDLEWARES",
	"POWERTOOLS_TRACER_CAPTURE_RESPONSE",
	"POWERTOOLS_TRACER_CAPTURE_ERROR",
	"POWERTOOLS_TRACER_CAPTURE_HTTPS_REQUESTS",
	"POWERTOOLS_PARAMETERS_MAX_AGE",
	"POWERTOOLS_PARAMETERS_SSM_DECRYPT",
	"POWERTOOLS_IDEMPOTENCY_DISABLED",
	"POWERTOOLS_EVENT_HANDLER_DEBUG",
	"POWERTOOLS_DEBUG",
	"POWERTOOLS_DEV",
}

// powertoolsPrefix is what starts every name of powertoolsEnv.
const powertoolsPrefix = "POWERTOOLS"

// logLevels are the levels lambdalog reads in POWERTOOLS_LOG_LEVEL and AWS_LAMBDA_LOG_LEVEL,
// in any case (lambdalog's parseLevel): Lambda's (TRACE, DEBUG, INFO, WARN, ERROR, FATAL,
// https://docs.aws.amazon.com/lambda/latest/dg/monitoring-cloudwatchlogs-log-level.html) and
// Python's names Powertools takes (WARNING, CRITICAL).
var logLevels = []string{"TRACE", "DEBUG", "INFO", "WARN", "WARNING", "ERROR", "CRITICAL", "FATAL"}

// envValueCheck is what a variable's value must be: check reports whether value s is one.
type envValueCheck struct {
	check func(s string) bool
	want  string // what the value must be, for problems and fixes
	then  string // what happens with a value that is not
}

// pyBools are the words Python's strtobool reads (Powertools' resolve_truthy_env_var_choice),
// as the metrics package does (parseBool); anything else is refused.
var pyBools = []string{"1", "true", "t", "yes", "y", "on", "0", "false", "f", "no", "n", "off"}

func isLevel(s string) bool {
	return slices.Contains(logLevels, strings.ToUpper(strings.TrimSpace(s)))
}

func isPyBool(s string) bool {
	return slices.Contains(pyBools, strings.ToLower(strings.TrimSpace(s)))
}

// envValues are the variables whose values are checked, with what the toolkit does with a
// value it cannot read (lambdalog/config.go, metrics.disabledByEnv, idempotency's disabled,
// parameters' EnvMaxAge).
var envValues = map[string]envValueCheck{
	"POWERTOOLS_LOG_LEVEL": {isLevel, "a log level (" + strings.Join(logLevels, ", ") + ", in any case)",
		"lambdalog ignores it and logs at INFO"},
	"AWS_LAMBDA_LOG_LEVEL": {isLevel, "a log level (" + strings.Join(logLevels, ", ") + ", in any case)",
		"lambdalog ignores it"},
	"POWERTOOLS_LOGGER_SAMPLE_RATE": {func(s string) bool {
		r, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		return err == nil && r >= 0 && r <= 1
	}, "a number from 0 to 1", "lambdalog turns sampling off"},
	"POWERTOOLS_METRICS_DISABLED": {isPyBool, "a boolean (true or false)",
		"metrics.New refuses to start, as Powertools' strtobool refuses it"},
	"POWERTOOLS_DEV": {isPyBool, "a boolean (true or false)",
		"metrics.New refuses to start, as Powertools' strtobool refuses it"},
	"POWERTOOLS_IDEMPOTENCY_DISABLED": {func(s string) bool { return strings.TrimSpace(s) == "" || isPyBool(s) },
		"a boolean (true or false)", "idempotency.Do fails every call, as it cannot tell whether to run without the store"},
	"POWERTOOLS_PARAMETERS_MAX_AGE": {func(s string) bool {
		n, err := strconv.Atoi(s)
		return err == nil && n >= 0 && n <= math.MaxInt32
	}, "a whole number of seconds, 0 or more", "the parameters providers refuse to start"},
}

// checkEnvironment checks the environment variables of Globals.Function once, and then those
// of each function (AWS::Serverless::Function and AWS::Lambda::Function) of its own.
func (l *linter) checkEnvironment() {
	if g := l.t.Globals.Get("Function"); g != nil {
		l.checkEnvVars("Globals", "Function.Environment.Variables", g.Lookup("Environment", "Variables"))
	}
	for _, typ := range []string{template.TypeFunction, lambdaFunctionType} {
		for _, fn := range l.sortedIDs(typ) {
			l.checkEnvVars(fn, "Properties.Environment.Variables", l.props(fn).Lookup("Environment", "Variables"))
		}
	}
}

// checkEnvVars checks one Environment.Variables mapping of resource res (or Globals) at path.
func (l *linter) checkEnvVars(res, path string, vars *template.Node) {
	if vars == nil || vars.Kind != template.Mapping {
		return // absent, an intrinsic, or refused by the schema
	}
	for _, p := range vars.Pairs {
		at := path + "." + p.Key
		if bad, near := misspeltPowertools(p.Key); bad {
			problem := fmt.Sprintf("%s is no variable Powertools or the toolkit reads, so its setting is silently not there", p.Key)
			fix := "use a name Powertools documents (docs/cli.md lists them), or rename it so that it does not start with POWERTOOLS_"
			if near != "" {
				problem += " (did you mean " + near + "?)"
				fix = "rename it " + near
			}
			// At the name, which is the mistake: the value may be right.
			l.problems = append(l.problems, Problem{Pos: p.KeyPos, Resource: res, Path: at, Problem: problem, Fix: fix, Rule: RuleEnvName})
			continue
		}
		c, ok := envValues[p.Key]
		if !ok {
			continue
		}
		for _, v := range ifBranches(p.Value) {
			s, known := l.envString(v)
			if !known || c.check(s) {
				continue
			}
			l.addRule(RuleEnvValue, v, res, at,
				fmt.Sprintf("%s is %q, which is not %s: %s", p.Key, s, c.want, c.then),
				"set it to "+c.want)
		}
	}
}

// envString returns the value of an environment variable as Lambda gets it: a scalar's text
// (CloudFormation passes numbers and booleans as their text), or what an intrinsic function
// gives with the parameters' Defaults. known is false for a null and for what cannot be known
// here.
func (l *linter) envString(v *template.Node) (s string, known bool) {
	if v == nil || v.IsNull() {
		return "", false
	}
	if _, _, isFn := v.Intrinsic(); !isFn {
		if v.Kind != template.Scalar {
			return "", false // the schema refuses it
		}
		return v.Text, true
	}
	return l.knownString(v)
}

// misspeltPowertools reports whether name is, or looks like, a Powertools variable that is not
// one: it starts with POWERTOOLS_, or with a slip of it (POWERTOOL_, POWERTOLS_, POWER_TOOLS_,
// POWERTOOLS-, lower case: names are case-sensitive), or is within a slip of a known name.
// near is the known name it is closest to, when one is close enough to suggest.
func misspeltPowertools(name string) (bad bool, near string) {
	if slices.Contains(powertoolsEnv, name) {
		return false, ""
	}
	norm := strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
	first, _, _ := strings.Cut(norm, "_")
	best, bestD := "", math.MaxInt
	for _, k := range powertoolsEnv {
		if d := suggest.Distance(norm, k); d < bestD {
			best, bestD = k, d
		}
	}
	// A name that ends as a known one does (POWERTOOLS_LOGGER_LOG_LEVEL) means that one, however
	// far the rest of it is: the longest such ending wins.
	tail := ""
	for _, k := range powertoolsEnv {
		if t := strings.TrimPrefix(k, powertoolsPrefix); strings.HasSuffix(norm, t) && len(t) > len(tail) {
			tail, near = t, k
		}
	}
	switch {
	case strings.HasPrefix(strings.ReplaceAll(norm, "_", ""), powertoolsPrefix):
	case len(first) >= len(powertoolsPrefix)-2 && suggest.Distance(first, powertoolsPrefix) <= 2:
	case bestD <= 2:
	default:
		return false, ""
	}
	if near != "" {
		return true, near
	}
	if bestD <= max(2, len(best)/8) { // a slip or two, not another name
		return true, best
	}
	return true, ""
}
