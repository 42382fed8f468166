package samlint

// This file checks what the SAM transform makes of a template, not only what the template
// says, as cfn-lint does (it runs the transform, then its rules): the AWS::Lambda::Function
// each AWS::Serverless::Function becomes and the AWS::Lambda::EventSourceMapping each pull
// event becomes, against their CloudFormation schemas (E3xxx). Problems are reported at the
// SAM property the user wrote. sam_cycles.go and sam_identifiers.go check the transformed
// template's dependencies (E3004) and primary identifiers (E3019).
//
// What the transform copies into the function (aws-sam-translator 1.110.0,
// model/sam_resources.py, SamFunction._construct_lambda_function): the properties of
// lambdaFunctionProps as they are, Tracing as TracingConfig.Mode, and Role when given (else a
// role it writes, FUNCTIONRole, which Policies and DeadLetterQueue go into).

import (
	"slices"
	"strings"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/cfnschema"
	"github.com/kafkalambda/toolkit/internal/template"
)

// lambdaFunctionProps are the properties of an AWS::Serverless::Function (or its Globals) that
// the transform copies unchanged into the AWS::Lambda::Function it writes.
var lambdaFunctionProps = []string{
	"FunctionName", "Handler", "Runtime", "Description", "MemorySize", "Timeout", "VpcConfig", "Role",
	"Environment", "KmsKeyArn", "ReservedConcurrentExecutions", "Layers", "FileSystemConfigs",
	"ImageConfig", "PackageType", "Architectures", "SnapStart", "EphemeralStorage",
	"CodeSigningConfigArn", "RuntimeManagementConfig", "LoggingConfig", "TenancyConfig",
	"RecursiveLoop", "DurableConfig", "FunctionScalingConfig", "PublishToLatestPublished",
}

// lambdaFunctionType is what an AWS::Serverless::Function becomes.
const lambdaFunctionType = "AWS::Lambda::Function"

// checkGeneratedFunctions checks, for each AWS::Serverless::Function, the properties the
// transform copies into its AWS::Lambda::Function against that type's schema: Runtime's enum,
// LoggingConfig's shape, MemorySize's range...
func (l *linter) checkGeneratedFunctions() {
	c := cfnschema.New(l.t)
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		r := l.t.Resource(fn)
		props := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: r.Pos}
		sources := map[string]string{} // Lambda property -> the SAM property it comes from
		for _, key := range lambdaFunctionProps {
			if v := l.t.Property(r, key); v != nil {
				props.Pairs = append(props.Pairs, template.Pair{Key: key, KeyPos: l.propKeyPos(r, key), Value: v})
				sources["Properties."+key] = "Properties." + key
			}
		}
		if v := l.t.Property(r, "Tracing"); v != nil {
			tc := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos, Pairs: []template.Pair{{Key: "Mode", KeyPos: v.Pos, Value: v}}}
			props.Pairs = append(props.Pairs, template.Pair{Key: "TracingConfig", KeyPos: l.propKeyPos(r, "Tracing"), Value: tc})
			sources["Properties.TracingConfig"] = "Properties.Tracing"
		}
		if len(props.Pairs) == 0 {
			continue
		}
		probs, err := c.Resource(&template.Resource{LogicalID: fn, Type: lambdaFunctionType, Properties: props, Node: props, Pos: r.Pos})
		if err != nil {
			l.add(fn, "Type", err.Error(), "")
			return
		}
		for _, p := range probs {
			top, rest := topProperty(p.Path)
			from, ok := sources[top]
			if !ok {
				continue // a property the transform writes itself (Code, Role), or one it needs
			}
			if top == "Properties.TracingConfig" {
				rest = ""
			}
			l.problems = append(l.problems, Problem{Pos: p.Pos, Resource: fn, Path: from + rest,
				Problem: cfnFails + p.Problem + " (" + top + rest + " of the " + lambdaFunctionType + " the transform writes)", Fix: p.Fix})
		}
	}
}

// propKeyPos returns the position of the key of property key of SAM function r: its own, or
// that of Globals.Function.
func (l *linter) propKeyPos(r *template.Resource, key string) template.Pos {
	if r.Properties.Get(key) != nil {
		return r.Properties.KeyPos(key)
	}
	return l.t.Globals.Get("Function").KeyPos(key)
}

// topProperty splits "Properties.A.B[0]" into "Properties.A" and ".B[0]".
func topProperty(path string) (top, rest string) {
	name, ok := strings.CutPrefix(path, "Properties.")
	if !ok {
		return path, ""
	}
	i := strings.IndexAny(name, ".[")
	if i < 0 {
		return path, ""
	}
	return "Properties." + name[:i], name[i:]
}

// esmCopied are the properties of a pull event that the transform copies unchanged into the
// AWS::Lambda::EventSourceMapping it writes (model/eventsources/pull.py,
// PullEventSource.to_cloudformation); DestinationConfig goes too, without OnFailure.Type, which
// only tells the transform what policy to write.
var esmCopied = []string{
	"StartingPosition", "StartingPositionTimestamp", "BatchSize", "Enabled", "MaximumBatchingWindowInSeconds",
	"MaximumRetryAttempts", "BisectBatchOnFunctionError", "MaximumRecordAgeInSeconds", "ParallelizationFactor",
	"Topics", "Queues", "SourceAccessConfigurations", "TumblingWindowInSeconds", "FunctionResponseTypes",
	"FilterCriteria", "KmsKeyArn", "ScalingConfig", "ProvisionedPollerConfig", "MetricsConfig", "LoggingConfig",
	"DestinationConfig",
}

// esmType is what a pull event becomes.
const esmType = "AWS::Lambda::EventSourceMapping"

// esmEventTypes are the event types the transform turns into an event source mapping.
var esmEventTypes = []string{"SQS", "Kinesis", "DynamoDB", "MSK", "SelfManagedKafka", "MQ", "DocumentDB"}

// checkGeneratedMappings checks, for each pull event of each AWS::Serverless::Function, the
// AWS::Lambda::EventSourceMapping the transform writes against that type's schema
// (ProvisionedPollerConfig's ranges, MetricsConfig's and LoggingConfig's enums...), reporting
// at the event's property. A place klt's own checks reported already (or a property
// holding it) is left to them.
func (l *linter) checkGeneratedMappings() {
	c := cfnschema.New(l.t)
	reported := func(res, path string) bool {
		return slices.ContainsFunc(l.problems, func(p Problem) bool {
			return p.Resource == res && (path == p.Path || strings.HasPrefix(path, p.Path+".") || strings.HasPrefix(path, p.Path+"["))
		})
	}
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		for _, ev := range l.t.Resource(fn).Events {
			props := ev.Properties
			if !slices.Contains(esmEventTypes, ev.Type) || props == nil || props.Kind != template.Mapping {
				continue
			}
			if _, _, ok := props.Intrinsic(); ok {
				continue
			}
			esm, from := mappingOf(ev.Type, props)
			if len(esm.Pairs) == 0 {
				continue
			}
			probs, err := c.Resource(&template.Resource{LogicalID: fn + ev.Name, Type: esmType, Properties: esm, Node: esm, Pos: ev.Pos})
			if err != nil {
				l.add(fn, "Type", err.Error(), "")
				return
			}
			base := "Properties.Events." + ev.Name + ".Properties"
			for _, p := range probs {
				sam, ok := samPathOf(p.Path, from)
				if !ok {
					continue // a property the transform writes itself (FunctionName, EventSourceArn)
				}
				path := base + sam
				if reported(fn, path) {
					continue
				}
				l.problems = append(l.problems, Problem{Pos: p.Pos, Resource: fn, Path: path,
					Problem: cfnFails + p.Problem + " (" + p.Path + " of the " + esmType + " " + fn + ev.Name + " the transform writes)", Fix: p.Fix})
			}
		}
	}
}

// mappingOf returns the Properties of the event source mapping the transform writes for an
// event of type typ with properties props, and where its properties come from: the prefix
// of a path in it -> the prefix of the path in the event's Properties.
func mappingOf(typ string, props *template.Node) (*template.Node, map[string]string) {
	esm := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: props.Pos}
	from := map[string]string{}
	put := func(into *template.Node, key string, keyPos template.Pos, v *template.Node) {
		into.Pairs = append(into.Pairs, template.Pair{Key: key, KeyPos: keyPos, Value: v})
	}
	for _, key := range esmCopied {
		v := props.Get(key)
		if v == nil || v.IsNull() {
			continue
		}
		if key == "DestinationConfig" {
			v = withoutOnFailureType(v)
		}
		put(esm, key, props.KeyPos(key), v)
		from["Properties."+key] = "." + key
	}
	if v := props.Get("KafkaBootstrapServers"); v != nil && !v.IsNull() {
		endpoints := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos}
		put(endpoints, "KafkaBootstrapServers", props.KeyPos("KafkaBootstrapServers"), v)
		source := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: v.Pos}
		put(source, "Endpoints", props.KeyPos("KafkaBootstrapServers"), endpoints)
		put(esm, "SelfManagedEventSource", props.KeyPos("KafkaBootstrapServers"), source)
		from["Properties.SelfManagedEventSource.Endpoints.KafkaBootstrapServers"] = ".KafkaBootstrapServers"
	}
	config := map[string]string{"MSK": "AmazonManagedKafkaEventSourceConfig", "SelfManagedKafka": "SelfManagedKafkaEventSourceConfig"}[typ]
	if config == "" {
		return esm, from
	}
	cfg := &template.Node{Kind: template.Mapping, Tag: template.TagMap, Pos: props.Pos}
	for _, key := range []string{"ConsumerGroupId", "SchemaRegistryConfig"} {
		if v := props.Get(key); v != nil && !v.IsNull() {
			put(cfg, key, props.KeyPos(key), v)
			from["Properties."+config+"."+key] = "." + key
		}
	}
	if len(cfg.Pairs) > 0 {
		put(esm, config, cfg.Pairs[0].KeyPos, cfg)
	}
	return esm, from
}

// withoutOnFailureType returns DestinationConfig v as the transform writes it: OnFailure
// without Type.
func withoutOnFailureType(v *template.Node) *template.Node {
	of := v.Get("OnFailure")
	if of == nil || of.Kind != template.Mapping || of.Get("Type") == nil {
		return v
	}
	ofCopy := *of
	ofCopy.Pairs = slices.DeleteFunc(slices.Clone(of.Pairs), func(p template.Pair) bool { return p.Key == "Type" })
	vCopy := *v
	vCopy.Pairs = slices.Clone(v.Pairs)
	for i := range vCopy.Pairs {
		if vCopy.Pairs[i].Key == "OnFailure" {
			vCopy.Pairs[i].Value = &ofCopy
		}
	}
	return &vCopy
}

// samPathOf maps path, in the event source mapping, to the path in the event's Properties,
// through the longest prefix of from it starts with.
func samPathOf(path string, from map[string]string) (string, bool) {
	best := ""
	for prefix := range from {
		if (path == prefix || strings.HasPrefix(path, prefix+".") || strings.HasPrefix(path, prefix+"[")) && len(prefix) > len(best) {
			best = prefix
		}
	}
	if best == "" {
		return "", false
	}
	return from[best] + path[len(best):], true
}
