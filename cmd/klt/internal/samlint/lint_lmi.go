package samlint

import (
	"fmt"
	"regexp"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// The Lambda Managed Instances (LMI) checks: a function with a CapacityProviderConfig runs on
// the EC2 instances of a capacity provider, and LMI refuses settings that Lambda (default)
// takes. Each check cites the AWS page it follows (read 2026-12-08).

// Rule IDs of the LMI checks.
const (
	RuleLMIRuntime     = "lmi-runtime"
	RuleLMIMemory      = "lmi-memory"
	RuleLMIConcurrency = "lmi-max-concurrency"
	RuleLMIKafkaQuota  = "lmi-kafka-mappings"
)

const (
	srcLMIRuntimes = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-runtimes.html"
	srcLMIScaling  = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html"
	srcLMIConfig   = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-function-lambdamanagedinstancescapacityproviderconfig.html"
	srcLMIQuotas   = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-quotas.html"

	// lmiMinMemory is the smallest LMI function, 2 GB and 1 vCPU; lmiMaxPerVCPU the most
	// concurrent invocations per vCPU (srcLMIScaling). lmiDefaultRatio is
	// ExecutionEnvironmentMemoryGiBPerVCpu when not given, and its least (srcLMIConfig);
	// lmiMaxEnvConcurrency PerExecutionEnvironmentMaxConcurrency's most (srcLMIConfig).
	lmiMinMemory         = 2048
	lmiMaxPerVCPU        = 64
	lmiDefaultRatio      = 2.0
	lmiMaxEnvConcurrency = 1600
	// lmiKafkaMappings is how many standard Kafka mappings an account may have on LMI, not
	// raisable (srcLMIQuotas).
	lmiKafkaMappings = 100
)

// lmiRuntimes are the runtimes LMI supports: "Java 21 and later", "Python 3.13 and later",
// "Node.js 22 and later", ".NET 8 and later", and the OS-only runtime provided.al2023 and
// later (srcLMIRuntimes, which names it for Rust; a Go bootstrap on it runs the same way).
var lmiRuntimes = regexp.MustCompile(`^(java(\d+)|python3\.(\d+)|nodejs(\d+)\.x|dotnet(\d+)|provided\.al(\d+))$`)

// lmiRuntimeOK reports whether runtime is one LMI supports.
func lmiRuntimeOK(runtime string) bool {
	m := lmiRuntimes.FindStringSubmatch(runtime)
	if m == nil {
		return false
	}
	least := []int{21, 13, 22, 8, 2023}
	for i, s := range m[2:] {
		if s != "" {
			n, err := strconv.Atoi(s)
			return err == nil && n >= least[i]
		}
	}
	return false
}

// lmiConfig is a function's capacity provider settings: the SAM function's
// CapacityProviderConfig, or an AWS::Lambda::Function's
// CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig.
type lmiConfig struct {
	res, path string // the resource, and the path of the settings, for problems
	props     *template.Node
	settings  *template.Node
}

// lmiFunctions returns the functions of the template that run on LMI, in order.
func (l *linter) lmiFunctions() []lmiConfig {
	var out []lmiConfig
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		if c := l.fnProp(fn, "CapacityProviderConfig"); c != nil && c.Kind == template.Mapping {
			out = append(out, lmiConfig{res: fn, path: "Properties.CapacityProviderConfig", props: l.props(fn), settings: c})
		}
	}
	for _, fn := range l.sortedIDs("AWS::Lambda::Function") {
		c := l.props(fn).Get("CapacityProviderConfig").Get("LambdaManagedInstancesCapacityProviderConfig")
		if c != nil && c.Kind == template.Mapping {
			out = append(out, lmiConfig{res: fn, path: "Properties.CapacityProviderConfig.LambdaManagedInstancesCapacityProviderConfig", props: l.props(fn), settings: c})
		}
	}
	return out
}

// checkLMI runs the LMI checks.
func (l *linter) checkLMI() {
	kafka := 0
	var last eventSource
	for _, c := range l.lmiFunctions() {
		l.checkLMIRuntime(c)
		l.checkLMIMemory(c)
		if l.resourceType(c.res) == template.TypeFunction {
			for _, src := range l.eventSources(c.res) {
				if src.typ == "MSK" || src.typ == "SelfManagedKafka" {
					kafka++
					last = src
				}
			}
		}
	}
	if kafka > lmiKafkaMappings {
		l.addRule(RuleLMIKafkaQuota, nil, last.res, last.path,
			fmt.Sprintf("the template maps %d Kafka event sources to Lambda Managed Instances functions, over the %d standard Kafka mappings an account may have on LMI, a quota that cannot be increased; each also carries at most 1 MB/s (%s)", kafka, lmiKafkaMappings, srcLMIQuotas),
			"run the functions of the extra mappings on Lambda (default), or fan out through SQS")
	}
}

// checkLMIRuntime: LMI runs only the runtimes srcLMIRuntimes lists.
func (l *linter) checkLMIRuntime(c lmiConfig) {
	v := c.props.Get("Runtime")
	if v == nil && l.resourceType(c.res) == template.TypeFunction {
		v = l.fnProp(c.res, "Runtime")
	}
	if v == nil {
		return // a container image: its base image decides
	}
	rt, ok := l.knownString(v)
	if !ok || lmiRuntimeOK(rt) {
		return
	}
	l.addRule(RuleLMIRuntime, v, c.res, "Properties.Runtime",
		fmt.Sprintf("Runtime %s on Lambda Managed Instances (%s), which runs Java 21 and later, Python 3.13 and later, Node.js 22 and later, .NET 8 and later and the OS-only runtime provided.al2023 and later, no other (%s)", rt, c.path, srcLMIRuntimes),
		"use a runtime LMI supports (provided.al2023 for a Go bootstrap), or remove CapacityProviderConfig")
}

// checkLMIMemory: an LMI function has at least 2 GB and 1 vCPU, and at most 64 concurrent
// invocations per vCPU (srcLMIScaling); PerExecutionEnvironmentMaxConcurrency is 1 to 1,600
// (srcLMIConfig). A function's vCPUs are its MemorySize over ExecutionEnvironmentMemoryGiBPerVCpu.
func (l *linter) checkLMIMemory(c lmiConfig) {
	ratio := lmiDefaultRatio
	if v := c.settings.Get("ExecutionEnvironmentMemoryGiBPerVCpu"); v != nil {
		r, ok := l.knownFloat(v)
		if !ok {
			return
		}
		ratio = r
	}
	memNode := c.props.Get("MemorySize")
	if memNode == nil && l.resourceType(c.res) == template.TypeFunction {
		memNode = l.fnProp(c.res, "MemorySize")
	}
	conc := c.settings.Get("PerExecutionEnvironmentMaxConcurrency")
	n, given, err := l.number(conc)
	if given && err == nil && (n < 1 || n > lmiMaxEnvConcurrency) {
		l.addRule(RuleLMIConcurrency, conc, c.res, c.path+".PerExecutionEnvironmentMaxConcurrency",
			fmt.Sprintf("PerExecutionEnvironmentMaxConcurrency %d is out of its range, 1 to %d (%s)", n, lmiMaxEnvConcurrency, srcLMIConfig),
			fmt.Sprintf("set it from 1 to %d, and at most %d per vCPU of the function", lmiMaxEnvConcurrency, lmiMaxPerVCPU))
		return
	}
	mem, ok, merr := l.number(memNode)
	if !ok || merr != nil {
		return // not given (Lambda picks it) or not known here
	}
	if mem < lmiMinMemory {
		l.addRule(RuleLMIMemory, memNode, c.res, "Properties.MemorySize",
			fmt.Sprintf("MemorySize %d on Lambda Managed Instances, whose smallest function is 2 GB and 1 vCPU (%s)", mem, srcLMIScaling),
			fmt.Sprintf("set MemorySize to at least %d", lmiMinMemory))
		return
	}
	vcpus := float64(mem) / 1024 / ratio
	if vcpus < 1 {
		l.addRule(RuleLMIMemory, memNode, c.res, "Properties.MemorySize",
			fmt.Sprintf("MemorySize %d at %g GiB per vCPU (ExecutionEnvironmentMemoryGiBPerVCpu) gives %.3g vCPU, and an LMI function has at least 1 vCPU (%s)", mem, ratio, vcpus, srcLMIScaling),
			fmt.Sprintf("set MemorySize to at least %d, or a lower ExecutionEnvironmentMemoryGiBPerVCpu", int(ratio*1024)))
		return
	}
	if given && err == nil && float64(n) > lmiMaxPerVCPU*vcpus {
		l.addRule(RuleLMIConcurrency, conc, c.res, c.path+".PerExecutionEnvironmentMaxConcurrency",
			fmt.Sprintf("PerExecutionEnvironmentMaxConcurrency %d is over the %d per vCPU LMI allows: MemorySize %d at %g GiB per vCPU is %.3g vCPU, so at most %d (%s)", n, lmiMaxPerVCPU, mem, ratio, vcpus, int(lmiMaxPerVCPU*vcpus), srcLMIScaling),
			fmt.Sprintf("set it to at most %d, or give the function more vCPUs (MemorySize)", int(lmiMaxPerVCPU*vcpus)))
	}
}

// knownFloat returns the number v is, when it is known here.
func (l *linter) knownFloat(v *template.Node) (float64, bool) {
	if v.Tag == template.TagInt || v.Tag == template.TagFloat {
		f, err := v.Float()
		return f, err == nil
	}
	s, ok := l.knownString(v)
	if !ok {
		return 0, false
	}
	f, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	return f, err == nil
}
