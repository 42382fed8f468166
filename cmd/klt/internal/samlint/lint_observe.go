package samlint

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/kafkalambda/toolkit/internal/template"
)

// The checks of what makes a stack observable: the event source mappings' MetricsConfig and
// LoggingConfig, and the CloudWatch alarms on the stack's own resources. Each is a setting
// that deploys, or fails to, otherwise than its writer meant; each cites the AWS sentence it
// follows.

// Rule IDs of the observability checks, as "klt lint --format json" gives them. A
// LoggingConfig without provisioned mode is RuleOnDemandFeature (checkOnDemandFeatures).
const (
	RuleKafkaOnly      = "kafka-only-setting"
	RuleAlarmDimension = "alarm-dimension"
)

// typeAlarm is the CloudWatch alarm resource type.
const typeAlarm = "AWS::CloudWatch::Alarm"

// The MetricsConfig groups that Kafka mappings alone produce.
var kafkaOnlyMetrics = []string{"ErrorCount", "KafkaMetrics"}

// checkKafkaOnly reports, on an event source that is not Kafka (SQS, DynamoDB, Kinesis), a
// MetricsConfig metric group or a LoggingConfig that AWS gives Kafka mappings only. The API
// (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingMetricsConfig.html)
// says "ErrorCount (Amazon MSK and self-managed Apache Kafka)" and "KafkaMetrics (Amazon MSK
// and self-managed Apache Kafka)", and of LoggingConfig
// (https://docs.aws.amazon.com/lambda/latest/api/API_EventSourceMappingLoggingConfig.html)
// "(Amazon MSK, and self-managed Apache Kafka only)": Lambda refuses the mapping. A SAM
// event's LoggingConfig is left to the SAM schema, which has it for MSK and SelfManagedKafka
// events only.
func (l *linter) checkKafkaOnly(src eventSource) {
	if src.typ != "SQS" && src.typ != "DynamoDB" && src.typ != "Kinesis" {
		return
	}
	kind := "a " + src.typ
	if src.typ == "SQS" {
		kind = "an SQS"
	}
	if metrics := src.props.Get("MetricsConfig").Get("Metrics"); metrics != nil {
		v, err := l.ev.Eval(metrics)
		list, _ := v.([]any)
		for _, x := range list {
			if s, _ := x.(string); err == nil && slices.Contains(kafkaOnlyMetrics, s) {
				l.addRule(RuleKafkaOnly, metrics, src.res, src.path+".MetricsConfig.Metrics",
					fmt.Sprintf("the %s metrics are for Amazon MSK and self-managed Apache Kafka mappings only, and this is %s event source: Lambda refuses the mapping", s, kind),
					"keep Metrics: [EventCount], the one group of "+kind+" mapping")
			}
		}
	}
	if strings.HasPrefix(src.path, "Properties.Events.") {
		return // a SAM event: the SAM schema has no LoggingConfig for SQS, DynamoDB or Kinesis
	}
	lc := src.props.Get("LoggingConfig")
	if on, _ := l.present(lc); on {
		l.addRule(RuleKafkaOnly, lc, src.res, src.path+".LoggingConfig",
			fmt.Sprintf("LoggingConfig (the event pollers' system logs) is for Amazon MSK and self-managed Apache Kafka mappings only, and this is %s event source: Lambda refuses the mapping", kind),
			"remove LoggingConfig from the mapping (the function's own logs are set by the function's LoggingConfig)")
	}
}

// checkLoggingOnDemand reports a LoggingConfig on a Kafka event source without
// ProvisionedPollerConfig: "This feature is only available for Kafka event source mappings,
// and with Provisioned mode" (https://docs.aws.amazon.com/lambda/latest/dg/esm-logging.html).
// It is one of checkOnDemandFeatures, which has checked that provisioned mode is off.
func (l *linter) checkLoggingOnDemand(src eventSource) {
	lc := src.props.Get("LoggingConfig")
	if on, _ := l.present(lc); !on {
		return
	}
	l.addRule(RuleOnDemandFeature, lc, src.res, src.path+".LoggingConfig",
		fmt.Sprintf("the event pollers' system logs (LoggingConfig) need provisioned mode, and this %s event source has no ProvisionedPollerConfig: Lambda refuses the mapping (\"This feature is only available for Kafka event source mappings, and with Provisioned mode\")", src.typ),
		"add ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: N}, or make LoggingConfig !If [the condition of provisioned mode, {SystemLogLevel: WARN}, !Ref AWS::NoValue]")
}

// dimensionWant is how a CloudWatch metric dimension names a resource of the template: the
// resource types, and the intrinsic that gives the value the metric carries.
type dimensionWant struct {
	types []string
	attr  string // the Fn::GetAtt attribute that gives it; "" when Ref does
}

// fix is the intrinsic to write for resource res.
func (w dimensionWant) fix(res string) string {
	if w.attr == "" {
		return "!Ref " + res
	}
	return "!GetAtt " + res + "." + w.attr
}

// alarmDimensions are the dimensions, by namespace and name, whose value is a resource of
// the stack, and how it must be given. A Lambda function's Ref is its name, an event source
// mapping's its ID (the UUID), a table's its name; a queue's Ref is its URL, and its name is
// the QueueName attribute (CloudFormation's return values of each type).
var alarmDimensions = map[string]map[string]dimensionWant{
	"AWS/Lambda": {
		"FunctionName":           {types: []string{template.TypeFunction, "AWS::Lambda::Function"}},
		"EventSourceMappingUUID": {types: []string{template.TypeEventSourceMapping}},
	},
	"AWS/SQS":      {"QueueName": {types: []string{template.TypeQueue}, attr: "QueueName"}},
	"AWS/DynamoDB": {"TableName": {types: []string{template.TypeTable, template.TypeSimpleTable}}},
}

// nameProperty is the property that sets the physical name of a resource type, when the
// template gives it: a literal dimension value equal to it names that resource rightly.
var nameProperty = map[string]string{
	template.TypeFunction: "FunctionName", "AWS::Lambda::Function": "FunctionName",
	template.TypeQueue: "QueueName", template.TypeTable: "TableName",
}

// checkAlarms checks the metric dimensions of every AWS::CloudWatch::Alarm, the metric of the
// alarm itself and those of its metric math (Metrics[].MetricStat.Metric). An alarm whose
// dimensions match no metric never leaves INSUFFICIENT_DATA (or OK, with TreatMissingData
// notBreaching): the failure it watches for goes unseen. CloudWatch: "A metric is uniquely
// defined by a name, a namespace, and zero or more dimensions"
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/cloudwatch_concepts.html).
func (l *linter) checkAlarms() {
	for _, id := range l.sortedIDs(typeAlarm) {
		props := l.props(id)
		l.checkMetricDimensions(id, "Properties", props)
		for i, m := range props.Get("Metrics").List() {
			l.checkMetricDimensions(id, "Properties.Metrics["+strconv.Itoa(i)+"].MetricStat.Metric", m.Get("MetricStat").Get("Metric"))
		}
	}
}

// checkMetricDimensions checks the Dimensions of one metric (Namespace, Dimensions) of alarm
// id, at path.
func (l *linter) checkMetricDimensions(id, path string, metric *template.Node) {
	ns, ok := l.knownString(metric.Get("Namespace"))
	if !ok {
		return
	}
	for i, d := range metric.Get("Dimensions").List() {
		name, ok := l.knownString(d.Get("Name"))
		if !ok {
			continue
		}
		at := path + ".Dimensions[" + strconv.Itoa(i) + "].Value"
		want, known := alarmDimensions[ns][name]
		for _, v := range ifBranches(d.Get("Value")) {
			l.checkDimensionValue(id, at, ns+" "+name, v, want, known)
		}
	}
}

// ifBranches returns the values n may be: both branches of each Fn::If, deep; n itself
// otherwise.
func ifBranches(n *template.Node) []*template.Node {
	name, arg, ok := n.Intrinsic()
	if !ok || name != "Fn::If" || len(arg.Items) != 3 {
		if n == nil {
			return nil
		}
		return []*template.Node{n}
	}
	return append(ifBranches(arg.Items[1]), ifBranches(arg.Items[2])...)
}

// checkDimensionValue checks one value v of dimension dim (NAMESPACE NAME) of alarm id.
func (l *linter) checkDimensionValue(id, at, dim string, v *template.Node, want dimensionWant, known bool) {
	name, arg, isFn := v.Intrinsic()
	switch {
	case !isFn && v.IsString():
		r := l.t.Resource(v.Text)
		if r == nil || r.Type == typeAlarm {
			return // a name from outside the stack, or one the template cannot say
		}
		if p, ok := nameProperty[r.Type]; ok {
			if s, ok := l.knownString(r.Properties.Get(p)); ok && s == v.Text {
				return // the resource is given that very name
			}
		}
		fix := "!Ref " + v.Text
		if known && slices.Contains(want.types, r.Type) {
			fix = want.fix(v.Text)
		}
		l.addRule(RuleAlarmDimension, v, id, at,
			fmt.Sprintf("the %s dimension is %q, the logical ID of %s, not its name in AWS (CloudFormation makes that up): the alarm watches a metric nothing sends and never goes off", dim, v.Text, v.Text),
			"write "+fix)
	case isFn && (name == "Ref" || name == "Fn::GetAtt"):
		res, attr := arg.Text, ""
		if name == "Fn::GetAtt" {
			res, attr = getAttParts(arg)
		}
		if strings.Contains(res, "::") || l.t.Parameter(res) != nil {
			return
		}
		r := l.t.Resource(res)
		if r == nil {
			if !l.samGenerated(res) {
				l.addRule(RuleAlarmDimension, v, id, at,
					fmt.Sprintf("the %s dimension refers to %s, which is no resource or parameter of the template: CloudFormation refuses the template", dim, res),
					"refer to the resource the alarm watches, by its logical ID")
			}
			return
		}
		if !known {
			return
		}
		switch {
		case !slices.Contains(want.types, r.Type):
			l.addRule(RuleAlarmDimension, v, id, at,
				fmt.Sprintf("the %s dimension names %s, an %s, where the metric's dimension is one of %s: the alarm watches a metric nothing sends and never goes off", dim, res, r.Type, strings.Join(want.types, ", ")),
				"refer to the resource the metric is of")
		case attr != want.attr:
			gives := "!Ref " + res
			if attr != "" {
				gives = "!GetAtt " + res + "." + attr
			}
			l.addRule(RuleAlarmDimension, v, id, at,
				fmt.Sprintf("the %s dimension is %s, which gives %s, not the value the metric carries: the alarm watches a metric nothing sends and never goes off", dim, gives, refGives(r.Type, attr)),
				"write "+want.fix(res))
		}
	}
}

// getAttParts returns the resource and attribute of a Fn::GetAtt argument ("R.A" or [R, A]).
func getAttParts(arg *template.Node) (res, attr string) {
	if arg.Kind == template.Scalar {
		res, attr, _ = strings.Cut(arg.Text, ".")
		return res, attr
	}
	items := arg.List()
	if len(items) > 0 {
		res = items[0].String()
	}
	if len(items) > 1 {
		attr = items[1].String()
	}
	return res, attr
}

// refGives says what Ref (attr "") or Fn::GetAtt attr of a resource of type typ gives, for
// problems.
func refGives(typ, attr string) string {
	switch {
	case attr == "Arn" || strings.HasSuffix(attr, "Arn"):
		return "its ARN"
	case typ == template.TypeQueue && attr == "":
		return "the queue's URL"
	case attr == "":
		return "its Ref value"
	}
	return "its " + attr
}

// samGenerated reports whether res may be a resource the SAM transform writes for a SAM
// resource of the template: those take its logical ID and a suffix (FnRole, FnEvent, ...).
func (l *linter) samGenerated(res string) bool {
	for _, r := range l.t.Resources {
		if strings.HasPrefix(r.Type, "AWS::Serverless::") && strings.HasPrefix(res, r.LogicalID) && res != r.LogicalID {
			return true
		}
	}
	return false
}
