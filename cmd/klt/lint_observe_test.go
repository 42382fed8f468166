package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/cmd/klt/internal/samlint"
	"github.com/kafkalambda/toolkit/internal/template"
)

// observeTemplate is a stack of a function, an MSK mapping, a queue and its SAM SQS event, and
// a table, to which each case adds %MAPPING% (properties of the MSK mapping), %SQS%
// (properties of the SQS event) and %RESOURCES% (alarms).
const observeTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Provisioned:
    Type: String
    Default: "false"
  ExternalFunction:
    Type: String
    Default: someone-elses-function
Conditions:
  UseProvisioned: !Equals [!Ref Provisioned, "true"]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: s3://example-bucket/fn.zip
      Runtime: provided.al2023
      Handler: bootstrap
      Events:
        Work:
          Type: SQS
          Properties:
            Queue: !GetAtt Queue.Arn
%SQS%
  Named:
    Type: AWS::Serverless::Function
    Properties:
      FunctionName: Named
      CodeUri: s3://example-bucket/fn.zip
      Runtime: provided.al2023
      Handler: bootstrap
  Mapping:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: arn:aws:kafka:us-east-1:123456789012:cluster/demo/1
      Topics: [orders]
      StartingPosition: TRIM_HORIZON
%MAPPING%
  Queue:
    Type: AWS::SQS::Queue
  Table:
    Type: AWS::DynamoDB::Table
    Properties:
      BillingMode: PAY_PER_REQUEST
      AttributeDefinitions: [{AttributeName: id, AttributeType: S}]
      KeySchema: [{AttributeName: id, KeyType: HASH}]
%RESOURCES%`

// alarmOn is an alarm on metric of namespace whose one dimension is name: value.
func alarmOn(namespace, metric, name, value string) string {
	return `  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Namespace: ` + namespace + `
      MetricName: ` + metric + `
      Dimensions:
        - Name: ` + name + `
          Value: ` + value + `
      Statistic: Maximum
      Period: 60
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
`
}

// TestLintObserveCases: what the observability checks pass and refuse beyond the pitfall
// fixtures. MetricsConfig and LoggingConfig: the Kafka-only groups and the system logs on a
// Kafka mapping in provisioned mode pass, also under a condition; in on-demand mode, or on an
// SQS source, they are refused (AWS: "ErrorCount (Amazon MSK and self-managed Apache Kafka)",
// "KafkaMetrics (Amazon MSK and self-managed Apache Kafka)"; LoggingConfig "(Amazon MSK, and
// self-managed Apache Kafka only)" and "only available for Kafka event source mappings, and
// with Provisioned mode"). Alarms: a dimension passes when it gives the value the metric
// carries (a function's or table's Ref, a mapping's Ref, a queue's QueueName, a name from
// outside the stack), and is refused when it names a resource of another type, gives an ARN
// or a URL, names no resource at all, or is a logical ID written out, in either branch of an
// Fn::If and in metric math.
func TestLintObserveCases(t *testing.T) {
	const provisioned = "      ProvisionedPollerConfig: {MinimumPollers: 1, MaximumPollers: 2}\n"
	tests := []struct {
		name, mapping, sqs, resources string
		want                          []string // the rules of the problems, in order
	}{
		{"kafka metrics and logs, provisioned", provisioned + "      MetricsConfig: {Metrics: [EventCount, ErrorCount, KafkaMetrics]}\n      LoggingConfig: {SystemLogLevel: DEBUG}\n", "", "", nil},
		{"logs under the condition of provisioned mode", "      ProvisionedPollerConfig: !If [UseProvisioned, {MinimumPollers: 1, MaximumPollers: 2}, !Ref AWS::NoValue]\n" +
			"      LoggingConfig: !If [UseProvisioned, {SystemLogLevel: WARN}, !Ref AWS::NoValue]\n", "", "", nil},
		{"logs without provisioned mode", "      ProvisionedPollerConfig: !If [UseProvisioned, {MinimumPollers: 1, MaximumPollers: 2}, !Ref AWS::NoValue]\n" +
			"      LoggingConfig: {SystemLogLevel: WARN}\n", "", "", []string{samlint.RuleOnDemandFeature}},
		{"event counts on SQS", "", "            MetricsConfig: {Metrics: [EventCount]}\n", "", nil},
		{"kafka metrics on SQS, under a condition", "", "            MetricsConfig: {Metrics: !If [UseProvisioned, [EventCount], [EventCount, KafkaMetrics]]}\n", "", []string{samlint.RuleKafkaOnly}},

		{"function by Ref", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!Ref Fn"), nil},
		{"function by a parameter", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!Ref ExternalFunction"), nil},
		{"function named as its logical ID", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "Named"), nil},
		{"function from outside", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "billing-worker"), nil},
		{"function by its ARN", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!GetAtt Fn.Arn"), []string{samlint.RuleAlarmDimension}},
		{"function by a queue", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!Ref Queue"), []string{samlint.RuleAlarmDimension}},
		{"function by a missing resource", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!Ref Gone"), []string{samlint.RuleAlarmDimension}},
		{"function's SAM-made alias", "", "", alarmOn("AWS/Lambda", "Errors", "FunctionName", "!Ref FnAliaslive"), nil},
		{"mapping by Ref", "", "", alarmOn("AWS/Lambda", "MaxOffsetLag", "EventSourceMappingUUID", "!Ref Mapping"), nil},
		{"mapping by its ARN", "", "", alarmOn("AWS/Lambda", "MaxOffsetLag", "EventSourceMappingUUID", "!GetAtt Mapping.EventSourceMappingArn"), []string{samlint.RuleAlarmDimension}},
		{"queue by name", "", "", alarmOn("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "!GetAtt Queue.QueueName"), nil},
		{"queue by its logical ID", "", "", alarmOn("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "Queue"), []string{samlint.RuleAlarmDimension}},
		{"queue by its ARN in a branch", "", "", alarmOn("AWS/SQS", "ApproximateNumberOfMessagesVisible", "QueueName", "!If [UseProvisioned, !GetAtt Queue.QueueName, !GetAtt Queue.Arn]"), []string{samlint.RuleAlarmDimension}},
		{"table by Ref", "", "", alarmOn("AWS/DynamoDB", "ThrottledRequests", "TableName", "!Ref Table"), nil},
		{"another namespace", "", "", alarmOn("AWS/Kafka", "MaxOffsetLag", "Consumer Group", "!Ref Queue"), nil},
		{"metric math", "", "", `  Alarm:
    Type: AWS::CloudWatch::Alarm
    Properties:
      Metrics:
        - Id: errors
          MetricStat:
            Metric:
              Namespace: AWS/Lambda
              MetricName: Errors
              Dimensions: [{Name: FunctionName, Value: !Ref Fn}]
            Period: 60
            Stat: Sum
          ReturnData: false
        - Id: lag
          MetricStat:
            Metric:
              Namespace: AWS/SQS
              MetricName: ApproximateNumberOfMessagesVisible
              Dimensions: [{Name: QueueName, Value: !Ref Queue}]
            Period: 60
            Stat: Maximum
          ReturnData: false
        - Id: both
          Expression: errors + lag
      EvaluationPeriods: 1
      Threshold: 0
      ComparisonOperator: GreaterThanThreshold
`, []string{samlint.RuleAlarmDimension}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			text := strings.NewReplacer("%MAPPING%", tt.mapping, "%SQS%", tt.sqs, "%RESOURCES%", tt.resources).Replace(observeTemplate)
			rules, problems := pitfallRules(t, text)
			if strings.Join(rules, " ") != strings.Join(tt.want, " ") {
				t.Errorf("rules %v, want %v; problems: %v", rules, tt.want, problems)
			}
		})
	}
}

// TestTemplateObservable holds template.yaml to what issue 20 asks of the sample stack: every
// Kafka mapping turns on MetricsConfig (all three groups in provisioned mode) and, in
// provisioned mode only, LoggingConfig at MappingLogLevel; the SQS and DynamoDB events ask for
// EventCount; each function with a Kafka mapping has an OffsetLag alarm, each failure or
// dead-letter queue a message alarm on its QueueName, each function an Errors and a Throttles
// alarm; every alarm's threshold is a parameter with a Description and a MinValue, its missing
// data is treated as chosen, and its actions are AlarmTopicArn's under HasAlarmTopic.
func TestTemplateObservable(t *testing.T) {
	tpl, err := template.ReadFile("../../template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	plain := func(n *template.Node) string {
		v, err := n.Plain()
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(v)
		return string(b)
	}
	const (
		allMetrics = `{"Metrics":{"Fn::If":["UseProvisionedPollers",["EventCount","ErrorCount","KafkaMetrics"],["EventCount"]]}}`
		logging    = `{"Fn::If":["UseProvisionedPollers",{"SystemLogLevel":{"Ref":"MappingLogLevel"}},{"Ref":"AWS::NoValue"}]}`
		actions    = `{"Fn::If":["HasAlarmTopic",[{"Ref":"AlarmTopicArn"}],{"Ref":"AWS::NoValue"}]}`
	)
	for _, id := range []string{"ConsumerMSKMapping", "ConsumerSelfManagedMapping", "DispatcherMSKMapping", "DispatcherSelfManagedMapping"} {
		p := tpl.Resource(id).Properties
		if got := plain(p.Get("MetricsConfig")); got != allMetrics {
			t.Errorf("%s MetricsConfig %s, want %s", id, got, allMetrics)
		}
		if got := plain(p.Get("LoggingConfig")); got != logging {
			t.Errorf("%s LoggingConfig %s, want %s", id, got, logging)
		}
	}
	for _, ev := range []string{"WorkerFunction.Work", "ProducerFunction.Outbox"} {
		fn, name, _ := strings.Cut(ev, ".")
		if got := plain(tpl.Resource(fn).Event(name).Properties.Get("MetricsConfig")); got != `{"Metrics":["EventCount"]}` {
			t.Errorf("%s MetricsConfig %s", ev, got)
		}
	}
	// What each alarm watches: namespace metric dimension=value, and how missing data counts.
	watched := map[string]string{}
	for _, a := range tpl.OfType("AWS::CloudWatch::Alarm") {
		p := a.Properties
		dims := p.Get("Dimensions").List()
		if len(dims) != 1 {
			t.Errorf("%s: %d dimensions, want 1", a.LogicalID, len(dims))
			continue
		}
		key := p.Get("Namespace").String() + " " + p.Get("MetricName").String() + " " + dims[0].Get("Name").String() + "=" + plain(dims[0].Get("Value"))
		watched[key] = p.Get("TreatMissingData").String()
		if plain(p.Get("AlarmActions")) != actions || plain(p.Get("OKActions")) != actions {
			t.Errorf("%s: actions %s, %s, want %s", a.LogicalID, plain(p.Get("AlarmActions")), plain(p.Get("OKActions")), actions)
		}
		_, arg, ok := p.Get("Threshold").Intrinsic()
		param := tpl.Parameter(arg.String())
		if !ok || param == nil || param.Node.Get("MinValue") == nil || param.Node.Get("Description") == nil {
			t.Errorf("%s: Threshold %s is not a parameter with a MinValue and a Description", a.LogicalID, plain(p.Get("Threshold")))
		}
	}
	want := map[string]string{}
	for _, fn := range []string{"ConsumerFunction", "DispatcherFunction"} {
		want[`AWS/Lambda OffsetLag FunctionName={"Ref":"`+fn+`"}`] = "missing"
	}
	for _, q := range []string{"ConsumerFailureQueue", "WorkerFailureQueue", "KafkaOnFailureQueue", "WorkDeadLetterQueue", "OutboxOnFailureQueue"} {
		want[`AWS/SQS ApproximateNumberOfMessagesVisible QueueName={"Fn::GetAtt":["`+q+`","QueueName"]}`] = "notBreaching"
	}
	for _, fn := range []string{"ConsumerFunction", "DispatcherFunction", "WorkerFunction", "ProducerFunction"} {
		for _, m := range []string{"Errors", "Throttles"} {
			want[`AWS/Lambda `+m+` FunctionName={"Ref":"`+fn+`"}`] = "notBreaching"
		}
	}
	for k, v := range want {
		if got, ok := watched[k]; !ok || got != v {
			t.Errorf("no alarm on %s with TreatMissingData %s (got %q)", k, v, got)
		}
	}
	if len(watched) != len(want) {
		t.Errorf("%d alarms, want %d: %v", len(watched), len(want), watched)
	}
}
