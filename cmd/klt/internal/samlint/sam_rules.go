package samlint

import (
	"fmt"
	"slices"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// The SAM transform's own rules for the pull event sources (MSK, SelfManagedKafka, SQS,
// Kinesis, DynamoDB), which the SAM schema does not hold: what `sam deploy` refuses before
// CloudFormation sees the stack. They are read from aws-sam-translator 1.110.0
// (samtranslator/model/eventsources/pull.py and the validators it calls) and from its
// repository's error test inputs; each problem quotes the message the transform gives, so
// that a user who meets it in `sam deploy` finds it here. The transform checks an event in
// a fixed order and stops at the first refusal; klt reports every one it finds.

// samDeployFails begins every problem of these rules; FromSAM tells them apart.
const samDeployFails = "sam deploy fails: "

// FromSAM reports whether p is a refusal of the SAM transform or its schema (what `sam
// deploy` would refuse), rather than one of klt's own pitfall checks.
func (p Problem) FromSAM() bool {
	return strings.HasPrefix(p.Problem, samDeployFails) || strings.HasPrefix(p.Problem, cfnFails) || strings.HasPrefix(p.Problem, "the SAM schema ")
}

// dropShadowed returns the schema problems without those at a place where a rule of the
// transform found one: the transform's message is the one `sam deploy` gives.
func dropShadowed(schema, found []Problem) []Problem {
	at := map[string]bool{}
	for _, p := range found {
		if strings.HasPrefix(p.Problem, samDeployFails) {
			at[p.Resource+" "+p.Path] = true
		}
	}
	return slices.DeleteFunc(schema, func(p Problem) bool { return at[p.Resource+" "+p.Path] })
}

// pullEventTypes are the event types the transform turns into an event source mapping.
var pullEventTypes = []string{"MSK", "SelfManagedKafka", "SQS", "Kinesis", "DynamoDB"}

// samPropKind is what the transform's property validation wants of a value; an intrinsic
// function passes every kind but samPassThrough's, which the transform does not look at.
type samPropKind int

const (
	samPassThrough samPropKind = iota
	samInt
	samBool
	samList
	samMap
	samString
)

// samRequired are the properties each pull event type must have. The properties the
// transform accepts, and their kinds, are the translator's (loadSAMEvents).
var (
	samRequired = map[string][]string{
		"SQS": {"Queue"}, "Kinesis": {"Stream", "StartingPosition"}, "DynamoDB": {"Stream", "StartingPosition"},
		"MSK": {"Stream", "StartingPosition"},
	}
	// smkAuth are the SourceAccessConfigurations types that authenticate to a
	// self-managed cluster; an event may have one.
	smkAuth = []string{"SASL_SCRAM_256_AUTH", "SASL_SCRAM_512_AUTH", "BASIC_AUTH", "CLIENT_CERTIFICATE_TLS_AUTH"}
)

// samEvent is one pull event being checked.
type samEvent struct {
	l     *linter
	fn    string
	ev    *template.Event
	props *template.Node
	path  string // of the event's Properties
}

// checkSAMEvents checks every pull event of every AWS::Serverless::Function against the
// transform's rules.
func (l *linter) checkSAMEvents() {
	l.checkIfArity()
	for _, fn := range l.sortedIDs(template.TypeFunction) {
		r := l.t.Resource(fn)
		events := slices.Clone(r.Events)
		slices.SortFunc(events, func(a, b *template.Event) int { return strings.Compare(a.Name, b.Name) })
		for _, ev := range events {
			if !slices.Contains(pullEventTypes, ev.Type) {
				continue
			}
			e := &samEvent{l: l, fn: fn, ev: ev, props: ev.Properties, path: "Properties.Events." + ev.Name + ".Properties"}
			if r.Properties.Get("TenancyConfig") != nil {
				l.add(fn, "Properties.Events."+ev.Name, samDeployFails+quoteSAM(fmt.Sprintf("Resource with id [%s] is invalid. Event source '%s' is not supported for functions enabled with tenancy configuration. Only Api and HttpApi event sources are supported.", fn, ev.Type)),
					"take TenancyConfig off the function, or give the event its own function")
			}
			e.check()
		}
	}
}

// quoteSAM quotes a message of the transform.
func quoteSAM(msg string) string { return "\"" + msg + "\"" }

// fail adds a problem at path (inside the event's Properties) with the message the
// transform gives for an event ("Resource with id [F] is invalid. Event with id [E] is
// invalid. MSG").
func (e *samEvent) fail(path, msg, fix string) {
	e.failAs(e.ev.Name, path, msg, fix)
}

// failAs is fail for the rules where the transform names the event by the logical ID of
// the mapping it makes (DestinationConfig, ConsumerGroupId), not by the event's name.
func (e *samEvent) failAs(eventID, path, msg, fix string) {
	full := fmt.Sprintf("Resource with id [%s] is invalid. Event with id [%s] is invalid. %s", e.fn, eventID, msg)
	e.l.add(e.fn, strings.TrimSuffix(e.path+"."+path, "."), samDeployFails+quoteSAM(full), fix)
}

// failMapping adds a problem the transform gives as one of the event source mapping it
// makes, whose logical ID is the function's and the event's names joined.
func (e *samEvent) failMapping(path, msg, fix string) {
	full := fmt.Sprintf("Resource with id [%s%s] is invalid. %s", e.fn, e.ev.Name, msg)
	e.l.add(e.fn, strings.TrimSuffix(e.path+"."+path, "."), samDeployFails+quoteSAM(full), fix)
}

func (e *samEvent) check() {
	if _, _, ok := e.props.Intrinsic(); ok {
		return // the whole Properties is known only at deployment
	}
	if e.props != nil && e.props.Kind != template.Mapping {
		e.l.add(e.fn, e.path, samDeployFails+quoteSAM(fmt.Sprintf("Resource with id [%s] is invalid. Event with id [%s] is invalid. Properties must be a map.", e.fn, e.ev.Name)), "write the event's Properties as a mapping")
		return
	}
	for _, req := range samRequired[e.ev.Type] {
		if e.props.Get(req).IsNull() {
			e.failMapping("", fmt.Sprintf("Missing required property '%s'.", req), "add "+req)
		}
	}
	e.checkKinds()
	if v := e.props.Get("ConsumerGroupId"); v != nil && e.ev.Type != "MSK" && e.ev.Type != "SelfManagedKafka" {
		e.failAs(e.fn+e.ev.Name, "ConsumerGroupId", fmt.Sprintf("Property ConsumerGroupId not defined for resource of type %s.", e.ev.Type), "remove ConsumerGroupId: only Kafka events have one")
	}
	e.checkFilterCriteria()
	e.checkDestination()
	switch e.ev.Type {
	case "SelfManagedKafka":
		e.checkSelfManagedKafka()
		e.checkSchemaRegistry()
		e.checkKmsKeyID()
	case "MSK":
		e.checkMSKTopics()
		e.checkSchemaRegistry()
	}
}

// checkKinds checks each property's kind as the transform's property validation does:
// a property the transform does not know, or a value of the wrong kind.
func (e *samEvent) checkKinds() {
	for _, p := range e.props.Pairs {
		if p.Value.IsNull() {
			continue // the transform takes a null property for one not given
		}
		k, known := e.l.samEvents[e.ev.Type][p.Key]
		if !known {
			e.failMapping(p.Key, fmt.Sprintf("property %s not defined for resource of type %s", p.Key, e.ev.Type),
				"remove it or correct its name (names are case-sensitive)")
			continue
		}
		if !known || k == samPassThrough || samKindOK(p.Value, k) {
			continue
		}
		e.failMapping(p.Key, fmt.Sprintf("Type of property '%s' is invalid.", p.Key), "write "+p.Key+" as "+samKindName[k])
	}
}

var samKindName = map[samPropKind]string{samInt: "a whole number", samBool: "true or false", samList: "a list", samMap: "a mapping", samString: "a string"}

// samKindOK reports whether v is of kind k, or an intrinsic function that may be.
func samKindOK(v *template.Node, k samPropKind) bool {
	if _, _, ok := v.Intrinsic(); ok {
		return true
	}
	switch k {
	case samInt:
		return v.Kind == template.Scalar && v.Tag == template.TagInt
	case samBool:
		return v.Kind == template.Scalar && v.Tag == template.TagBool
	case samList:
		return v.Kind == template.Sequence
	case samMap:
		return v.Kind == template.Mapping
	case samString:
		return v.Kind == template.Scalar && v.IsString()
	}
	return true
}

// checkFilterCriteria: a FilterCriteria mapping holds Filters and nothing else.
func (e *samEvent) checkFilterCriteria() {
	fc := e.props.Get("FilterCriteria")
	if fc == nil || fc.Kind != template.Mapping {
		return
	}
	if _, _, ok := fc.Intrinsic(); ok {
		return
	}
	keys := fc.Keys()
	if len(keys) > 1 || (len(keys) == 1 && keys[0] != "Filters") {
		e.fail("FilterCriteria", "FilterCriteria field has a wrong format", "write FilterCriteria as {Filters: [{Pattern: ...}]}")
	}
}

// checkDestination: DestinationConfig.OnFailure is a mapping whose Type, if given, is
// SQS, SNS, S3 or Kafka.
func (e *samEvent) checkDestination() {
	dc := e.props.Get("DestinationConfig")
	if dc == nil || dc.Kind != template.Mapping || len(dc.Pairs) == 0 { // {} is no destination to the transform
		return
	}
	if _, _, ok := dc.Intrinsic(); ok {
		return
	}
	of := dc.Get("OnFailure")
	if of == nil || of.Kind != template.Mapping {
		e.failAs(e.fn+e.ev.Name, "DestinationConfig.OnFailure", "Property 'DestinationConfig.OnFailure' should be a map.", "write OnFailure: {Type: SQS, Destination: QUEUE_ARN}")
		return
	}
	typ := of.Get("Type")
	if typ == nil {
		return
	}
	if s := typ.String(); typ.Kind != template.Scalar || !slices.Contains([]string{"SQS", "SNS", "S3", "Kafka"}, s) {
		e.failAs(e.fn+e.ev.Name, "DestinationConfig.OnFailure.Type", "The only valid values for 'Type' are 'SQS', 'SNS', 'S3', and 'Kafka'", "set Type to SQS, SNS, S3 or Kafka (no intrinsic function)")
	}
}

// checkMSKTopics: the event source mapping an MSK event becomes reads one topic; the
// transform lets more through and CloudFormation's schema of AWS::Lambda::EventSourceMapping
// refuses them.
func (e *samEvent) checkMSKTopics() {
	topics := e.props.Get("Topics")
	if topics != nil && topics.Kind == template.Sequence && len(topics.Items) > 1 {
		e.l.add(e.fn, e.path+".Topics", cfnFails+quoteSAM(fmt.Sprintf("expected maximum item count: 1, found: %d", len(topics.Items)))+" (Topics of the AWS::Lambda::EventSourceMapping the event becomes)",
			"give each topic its own event")
	}
}

// checkSchemaRegistry: SchemaRegistryConfig has its three members, EventRecordFormat is
// JSON or SOURCE, and the lists are lists.
func (e *samEvent) checkSchemaRegistry() {
	src := e.props.Get("SchemaRegistryConfig")
	if src == nil || src.Kind != template.Mapping {
		return
	}
	if _, _, ok := src.Intrinsic(); ok {
		return
	}
	for _, f := range []string{"SchemaRegistryURI", "EventRecordFormat", "SchemaValidationConfigs"} {
		if src.Get(f) == nil {
			e.fail("SchemaRegistryConfig", "Missing required field "+f+" in SchemaRegistryConfig", "add "+f)
		}
	}
	if erf := src.Get("EventRecordFormat"); erf != nil && (erf.Kind != template.Scalar || (erf.String() != "JSON" && erf.String() != "SOURCE")) {
		e.fail("SchemaRegistryConfig.EventRecordFormat", "EventRecordFormat in SchemaRegistryConfig must be either 'JSON' or 'SOURCE'", "set EventRecordFormat to JSON or SOURCE")
	}
	if svc := src.Get("SchemaValidationConfigs"); svc != nil && svc.Kind != template.Sequence {
		e.fail("SchemaRegistryConfig.SchemaValidationConfigs", "SchemaValidationConfigs must be a list", "write SchemaValidationConfigs as a list of {Attribute: KEY|VALUE}")
	}
	ac := src.Get("AccessConfigs")
	if ac == nil || (ac.Kind == template.Sequence && len(ac.Items) == 0) {
		return
	}
	if ac.Kind != template.Sequence {
		e.fail("SchemaRegistryConfig.AccessConfigs", "AccessConfigs in SchemaRegistryConfig must be a list", "write AccessConfigs as a list of {Type, URI}")
		return
	}
	for _, c := range ac.Items {
		if c.Kind != template.Mapping || c.Get("Type") == nil || c.Get("URI") == nil {
			e.fail("SchemaRegistryConfig.AccessConfigs", "Each AccessConfig must be a dict with 'Type' and 'URI' fields", "give each access config a Type and a URI")
			return
		}
	}
}

// checkKmsKeyID: a SelfManagedKafka event's SecretsManagerKmsKeyId is a string written out,
// not an intrinsic function: the transform writes it into the ARN of the kms:Decrypt statement
// of the role (SelfManagedKafka.get_policy_statements, validate_secrets_manager_kms_key_id).
func (e *samEvent) checkKmsKeyID() {
	v := e.props.Get("SecretsManagerKmsKeyId")
	if v == nil || v.IsNull() || (v.Kind == template.Scalar && v.IsString()) {
		return
	}
	e.fail("SecretsManagerKmsKeyId", "Property 'SecretsManagerKmsKeyId' should be a string.", "write the KMS key ID out (a parameter cannot be used here)")
}

// checkSelfManagedKafka: bootstrap servers, one topic, and SourceAccessConfigurations with
// at most one auth mechanism, a URI for each entry, and VPC_SUBNET with VPC_SECURITY_GROUP.
func (e *samEvent) checkSelfManagedKafka() {
	if v := e.props.Get("KafkaBootstrapServers"); v == nil || (v.Kind == template.Sequence && len(v.Items) == 0) {
		e.fail("KafkaBootstrapServers", "No KafkaBootstrapServers provided for self managed kafka as an event source", "add KafkaBootstrapServers: [HOST:PORT, ...]")
	}
	topics := e.props.Get("Topics")
	switch {
	case topics == nil || (topics.Kind == template.Sequence && len(topics.Items) == 0):
		e.fail("Topics", "No Topics provided for self managed kafka as an event source", "add Topics: [TOPIC]")
	case topics.Kind == template.Sequence && len(topics.Items) != 1:
		e.fail("Topics", "Topics for self managed kafka only supports single configuration entry.", "give each topic its own event")
	}
	sac := e.props.Get("SourceAccessConfigurations")
	if sac == nil || (sac.Kind == template.Sequence && len(sac.Items) == 0) {
		e.fail("SourceAccessConfigurations", "No SourceAccessConfigurations for self managed kafka event provided.", "add SourceAccessConfigurations: the cluster's auth secret, or its VPC_SUBNET and VPC_SECURITY_GROUP")
		return
	}
	if sac.Kind != template.Sequence {
		return // the kind check said so; a string or an intrinsic function
	}
	e.checkSMKAccess(sac)
}

// checkSMKAccess checks a self-managed Kafka event's list of SourceAccessConfigurations.
func (e *samEvent) checkSMKAccess(sac *template.Node) {
	const path = "SourceAccessConfigurations"
	var auth, subnet, group bool
	for _, c := range sac.Items {
		if c.Kind != template.Mapping {
			if _, _, ok := c.Intrinsic(); !ok {
				e.fail(path, "Property 'SourceAccessConfigurations' should be a map.", "write each entry as {Type: ..., URI: ...}")
			}
			continue
		}
		typ := c.Get("Type").String()
		name := typ
		switch {
		case typ == "VPC_SUBNET":
			subnet = true
		case typ == "VPC_SECURITY_GROUP":
			group = true
		case slices.Contains(smkAuth, typ):
			if auth {
				e.fail(path, "Multiple auth mechanism properties specified in SourceAccessConfigurations for self managed kafka event.", "keep one of "+strings.Join(smkAuth, ", "))
			}
			auth, name = true, "auth mechanism"
		case typ == "SERVER_ROOT_CA_CERTIFICATE":
		default:
			e.fail(path, "Invalid SourceAccessConfigurations Type provided for self managed kafka event.", "use one of VPC_SUBNET, VPC_SECURITY_GROUP, SERVER_ROOT_CA_CERTIFICATE, "+strings.Join(smkAuth, ", "))
			continue
		}
		uri := c.Get("URI")
		_, _, intrinsic := uri.Intrinsic()
		switch {
		case uri == nil || (uri.Kind == template.Scalar && uri.String() == ""):
			e.fail(path, fmt.Sprintf("No %s URI property specified in SourceAccessConfigurations for self managed kafka event.", name), "add the URI")
		case !intrinsic && (uri.Kind != template.Scalar || !uri.IsString()):
			e.fail(path, fmt.Sprintf("Wrong Type for %s URI property specified in SourceAccessConfigurations for self managed kafka event.", name), "write the URI as a string")
		}
	}
	if subnet != group {
		e.fail(path, "VPC_SUBNET and VPC_SECURITY_GROUP in SourceAccessConfigurations for SelfManagedKafka must be both provided.", "add the missing VPC_SUBNET or VPC_SECURITY_GROUP entry: Lambda reaches a cluster in a VPC through both")
	}
}

// cfnFails begins a problem CloudFormation (or the transform before it) refuses for the
// template's intrinsic functions.
const cfnFails = "CloudFormation fails: "

// checkIfArity: Fn::If takes a condition and two values. The transform refuses a
// malformed one in the places it reads (an EventInvokeConfig's Destination:
// "Malformed 'Destination' property: Fn::If requires 3 arguments."), CloudFormation
// everywhere else.
func (l *linter) checkIfArity() {
	for _, r := range l.t.Resources {
		l.walkIf(r.LogicalID, "", r.Node)
	}
}

func (l *linter) walkIf(res, path string, n *template.Node) {
	if n == nil {
		return
	}
	switch n.Kind {
	case template.Mapping:
		for _, p := range n.Pairs {
			sub := strings.TrimPrefix(path+"."+p.Key, ".")
			if p.Key == "Fn::If" && (p.Value.Kind != template.Sequence || len(p.Value.Items) != 3) {
				l.add(res, sub, cfnFails+quoteSAM("Fn::If requires a list argument with three elements"), "write Fn::If as [CONDITION, VALUE_IF_TRUE, VALUE_IF_FALSE]")
			}
			l.walkIf(res, sub, p.Value)
		}
	case template.Sequence:
		for i, it := range n.Items {
			l.walkIf(res, fmt.Sprintf("%s[%d]", path, i), it)
		}
	}
}
