package samspec

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/kafkalambda/toolkit/esm"
)

// localMappings reads the mappings of a template made of a function Fn and resources, with
// params overriding the parameters' defaults.
func localMappings(t *testing.T, resources string, params map[string]string) ([]*MappingSpec, error) {
	t.Helper()
	tpl := `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  RegistryUrl:
    Type: String
    Default: https://registry.example.com
  Local:
    Type: String
    Default: "false"
  Level:
    Type: String
    Default: WARN
  Min:
    Type: Number
    Default: 1
Conditions:
  IsLocal: !Equals [!Ref Local, "true"]
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: .
      Handler: bootstrap
      Runtime: provided.al2023
` + resources
	dir := t.TempDir()
	path := filepath.Join(dir, "template.yaml")
	if err := os.WriteFile(path, []byte(tpl), 0o600); err != nil {
		t.Fatal(err)
	}
	it, err := ReadInvokeTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	r, err := NewLocalResolver(it, params)
	if err != nil {
		t.Fatal(err)
	}
	ms, _, err := LocalMappings(it, r)
	return ms, err
}

// kafkaMapping is an EventSourceMapping resource M of a self-managed Kafka topic, with extra
// properties (indented by 6 spaces).
func kafkaMapping(extra string) string {
	return `  M:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      SelfManagedEventSource:
        Endpoints:
          KafkaBootstrapServers: ["127.0.0.1:9092"]
      Topics: [orders]
      StartingPosition: TRIM_HORIZON
` + extra
}

// TestMappingSchemaRegistry checks that a Kafka mapping's SchemaRegistryConfig is read, with
// its intrinsics evaluated, from an EventSourceMapping resource's
// SelfManagedKafkaEventSourceConfig or AmazonManagedKafkaEventSourceConfig and from a SAM
// event's SchemaRegistryConfig (which SAM passes to those properties), and that AccessConfigs
// left out locally with AWS::NoValue are accepted.
//
// AWS (CloudFormation AWS::Lambda::EventSourceMapping SchemaRegistryConfig): AccessConfigs,
// EventRecordFormat (JSON | SOURCE), SchemaRegistryURI, SchemaValidationConfigs (Attribute: KEY
// | VALUE).
func TestMappingSchemaRegistry(t *testing.T) {
	ms, err := localMappings(t, kafkaMapping(`      SelfManagedKafkaEventSourceConfig:
        ConsumerGroupId: g
        SchemaRegistryConfig:
          SchemaRegistryURI: !Ref RegistryUrl
          EventRecordFormat: !If [IsLocal, SOURCE, JSON]
          SchemaValidationConfigs:
            - Attribute: VALUE
            - Attribute: KEY
          AccessConfigs: !If
            - IsLocal
            - !Ref AWS::NoValue
            - [{Type: BASIC_AUTH, URI: "arn:aws:secretsmanager:us-east-1:123456789012:secret:sr"}]
      MetricsConfig:
        Metrics: [EventCount, KafkaMetrics, ErrorCount]
`)+`  Msk:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: arn:aws:kafka:us-east-1:123456789012:cluster/c/abc
      Topics: [payments]
      StartingPosition: LATEST
      AmazonManagedKafkaEventSourceConfig:
        SchemaRegistryConfig:
          SchemaRegistryURI: arn:aws:glue:us-east-1:123456789012:registry/payments
          EventRecordFormat: JSON
          SchemaValidationConfigs: [{Attribute: VALUE}]
  Sam:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: .
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        Stream:
          Type: SelfManagedKafka
          Properties:
            KafkaBootstrapServers: ["127.0.0.1:9092"]
            Topics: [refunds]
            StartingPosition: TRIM_HORIZON
            SchemaRegistryConfig:
              SchemaRegistryURI: http://127.0.0.1:8081
              EventRecordFormat: SOURCE
              SchemaValidationConfigs: [{Attribute: KEY}]
            MetricsConfig:
              Metrics: [EventCount]
`, map[string]string{"RegistryUrl": "http://127.0.0.1:18081", "Local": "true"})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(ms)
	for id, want := range map[string]SchemaRegistrySpec{
		"M":          {URI: "http://127.0.0.1:18081", EventRecordFormat: "SOURCE", Attributes: []string{"VALUE", "KEY"}},
		"Msk":        {URI: "arn:aws:glue:us-east-1:123456789012:registry/payments", EventRecordFormat: "JSON", Attributes: []string{"VALUE"}},
		"Sam.Stream": {URI: "http://127.0.0.1:8081", EventRecordFormat: "SOURCE", Attributes: []string{"KEY"}},
	} {
		m := got[id]
		if m == nil || m.SchemaRegistry == nil || m.SchemaRegistry.URI != want.URI || m.SchemaRegistry.EventRecordFormat != want.EventRecordFormat ||
			!slices.Equal(m.SchemaRegistry.Attributes, want.Attributes) {
			t.Errorf("%s: schema registry %+v, want %+v", id, m.SchemaRegistry, want)
		}
	}
	if m := got["M"]; m.GroupID != "g" || !slices.Equal(m.Metrics, []string{esm.MetricsEventCount, esm.MetricsKafka, esm.MetricsErrorCount}) {
		t.Errorf("M: group %q, metrics %v", m.GroupID, m.Metrics)
	}
	if m := got["Sam.Stream"]; !slices.Equal(m.Metrics, []string{esm.MetricsEventCount}) {
		t.Errorf("Sam.Stream: metrics %v", m.Metrics)
	}
	if m := got["Msk"]; m.Metrics != nil {
		t.Errorf("Msk: metrics %v without a MetricsConfig", m.Metrics)
	}
	// The options the specs give a mapping carry both: NewKafka checks the registry's
	// settings, and the mapping reports the template's metric groups.
	for id, want := range map[string][]string{"M": {esm.MetricsEventCount, esm.MetricsKafka, esm.MetricsErrorCount}, "Sam.Stream": {esm.MetricsEventCount}} {
		opts, err := got[id].KafkaOptions(&Resolver{}, KafkaTargets{Brokers: []string{"127.0.0.1:9092"}})
		if err != nil {
			t.Fatalf("%s: KafkaOptions: %v", id, err)
		}
		k, err := esm.NewKafka([]string{"127.0.0.1:9092"}, got[id].Topics[0], esm.InvokerFunc(func(context.Context, []byte) (esm.Response, error) {
			return esm.Response{}, nil
		}), opts...)
		if err != nil {
			t.Fatalf("%s: NewKafka: %v", id, err)
		}
		if g := k.MetricGroups(); !slices.Equal(g, want) {
			t.Errorf("%s: the mapping's metric groups %v, want the template's %v", id, g, want)
		}
	}
}

// TestMappingSchemaRegistryRefused checks that what the emulated mapping cannot follow is an
// error naming the mapping and the property: values AWS does not take (CloudFormation:
// EventRecordFormat "Allowed values: JSON | SOURCE", Attribute "Allowed values: KEY | VALUE";
// MetricsConfig "Allowed values: EventCount | ErrorCount | KafkaMetrics", and ErrorCount and
// KafkaMetrics are "(Amazon MSK and self-managed Apache Kafka)" only), and AccessConfigs,
// whose secrets klt local cannot read.
func TestMappingSchemaRegistryRefused(t *testing.T) {
	registry := func(body string) string {
		return kafkaMapping("      SelfManagedKafkaEventSourceConfig:\n        SchemaRegistryConfig:\n" + body)
	}
	for _, c := range []struct{ name, resources, want string }{
		{"format", registry("          SchemaRegistryURI: http://r\n          EventRecordFormat: AVRO\n          SchemaValidationConfigs: [{Attribute: VALUE}]\n"),
			`M.SelfManagedKafkaEventSourceConfig.SchemaRegistryConfig: EventRecordFormat: want JSON or SOURCE`},
		{"attribute", registry("          SchemaRegistryURI: http://r\n          EventRecordFormat: JSON\n          SchemaValidationConfigs: [{Attribute: HEADERS}]\n"),
			`SchemaValidationConfigs: want objects {Attribute: KEY or VALUE}`},
		{"no attribute", registry("          SchemaRegistryURI: http://r\n          EventRecordFormat: JSON\n"), `SchemaValidationConfigs: none`},
		{"no URI", registry("          EventRecordFormat: JSON\n          SchemaValidationConfigs: [{Attribute: VALUE}]\n"), `SchemaRegistryURI: want`},
		{"access configs", registry("          SchemaRegistryURI: http://r\n          EventRecordFormat: JSON\n          SchemaValidationConfigs: [{Attribute: VALUE}]\n" +
			"          AccessConfigs: [{Type: BASIC_AUTH, URI: arn:aws:secretsmanager:us-east-1:123456789012:secret:x}]\n"), `M.SelfManagedKafkaEventSourceConfig.SchemaRegistryConfig: AccessConfigs: klt local cannot authenticate`},
		{"unknown property", registry("          SchemaRegistryURI: http://r\n          EventRecordFormat: JSON\n          SchemaValidationConfigs: [{Attribute: VALUE}]\n          Format: x\n"),
			`Format: not a property of SchemaRegistryConfig`},
		{"log level", kafkaMapping("      LoggingConfig:\n        SystemLogLevel: ERROR\n"), `M.LoggingConfig: SystemLogLevel: want DEBUG, INFO or WARN, got "ERROR"`},
		{"logging property", kafkaMapping("      LoggingConfig:\n        ApplicationLogLevel: INFO\n"), `M.LoggingConfig: ApplicationLogLevel: not a property of LoggingConfig`},
		{"logging on SQS", `  Q:
    Type: AWS::SQS::Queue
  S:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: !GetAtt Q.Arn
      LoggingConfig:
        SystemLogLevel: WARN
`, `S.LoggingConfig: for Amazon MSK and self-managed Apache Kafka mappings only`},
		{"metric", kafkaMapping("      MetricsConfig:\n        Metrics: [OffsetLag]\n"), `M.MetricsConfig: Metrics: "OffsetLag" is not EventCount`},
		{"metric twice", kafkaMapping("      MetricsConfig:\n        Metrics: [EventCount, EventCount]\n"), `M.MetricsConfig: Metrics: EventCount twice`},
		{"kafka metric on SQS", `  Q:
    Type: AWS::SQS::Queue
  S:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      EventSourceArn: !GetAtt Q.Arn
      MetricsConfig:
        Metrics: [EventCount, KafkaMetrics]
`, `S.MetricsConfig: Metrics: KafkaMetrics is for Amazon MSK and self-managed Apache Kafka mappings only`},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := localMappings(t, c.resources, nil)
			t.Log(err)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("error %v, want one saying %q", err, c.want)
			}
		})
	}
}

// TestMappingLogging: a Kafka mapping's LoggingConfig is read, through intrinsics, and named
// among what klt local does not emulate (the event pollers' system logs), never dropped
// silently; a mapping without one has nothing there. AWS (EventSourceMappingLoggingConfig):
// "SystemLogLevel ... Valid Values: DEBUG | INFO | WARN".
func TestMappingLogging(t *testing.T) {
	ms, err := localMappings(t, kafkaMapping(`      LoggingConfig: !If
        - IsLocal
        - SystemLogLevel: !Ref Level
        - !Ref AWS::NoValue
`)+`  Plain:
    Type: AWS::Lambda::EventSourceMapping
    Properties:
      FunctionName: !Ref Fn
      SelfManagedEventSource:
        Endpoints:
          KafkaBootstrapServers: ["127.0.0.1:9092"]
      Topics: [refunds]
`, map[string]string{"Local": "true", "Level": "INFO"})
	if err != nil {
		t.Fatal(err)
	}
	got := byID(ms)
	if m := got["M"]; m == nil || m.SystemLogLevel != "INFO" || len(m.NotEmulated()) != 1 || !strings.Contains(m.NotEmulated()[0], "LoggingConfig (SystemLogLevel INFO)") {
		t.Errorf("M: %+v, not emulated %q", m, m.NotEmulated())
	}
	if m := got["Plain"]; m == nil || m.SystemLogLevel != "" || m.NotEmulated() != nil {
		t.Errorf("Plain: %+v, not emulated %q", m, m.NotEmulated())
	}
}

// TestMappingPollers: ProvisionedPollerConfig is read through intrinsics; klt local runs
// MinimumPollers pollers and names the autoscaling up to MaximumPollers as not emulated; a
// configuration AWS refuses is refused. AWS (API_ProvisionedPollerConfig): "MinimumPollers
// ... Valid Range: Minimum value of 1. Maximum value of 200", "MaximumPollers ... Minimum
// value of 1. Maximum value of 2000", and the maximum is "greater than or equal to" the
// minimum (kafka-scaling-modes: "MaximumPollers must be greater than or equal to
// MinimumPollers").
func TestMappingPollers(t *testing.T) {
	ms, err := localMappings(t, kafkaMapping(`      ProvisionedPollerConfig:
        MinimumPollers: !Ref Min
        MaximumPollers: 4
        PollerGroupName: shared
`), map[string]string{"Min": "2"})
	if err != nil {
		t.Fatal(err)
	}
	if m := ms[0]; m.MinimumPollers != 2 || m.MaximumPollers != 4 || len(m.NotEmulated()) != 1 ||
		!strings.Contains(m.NotEmulated()[0], "2 pollers run (MinimumPollers); Lambda's autoscaling up to MaximumPollers 4 is not emulated") {
		t.Errorf("pollers %d..%d, not emulated %q", m.MinimumPollers, m.MaximumPollers, m.NotEmulated())
	}
	for _, c := range []struct{ config, want string }{
		{"MinimumPollers: 0", "MinimumPollers: \"0\" is not a whole number from 1 to 200"},
		{"MinimumPollers: 201", "MinimumPollers: \"201\" is not a whole number from 1 to 200"},
		{"MaximumPollers: 2001", "MaximumPollers: \"2001\" is not a whole number from 1 to 2000"},
		{"{MinimumPollers: 5, MaximumPollers: 4}", "MaximumPollers 4 is below MinimumPollers 5"},
		{"{MinimumPollers: 1, Pollers: 4}", "Pollers: not a property of ProvisionedPollerConfig"},
	} {
		config := c.config
		if !strings.HasPrefix(config, "{") {
			config = "{" + config + "}"
		}
		_, err := localMappings(t, kafkaMapping("      ProvisionedPollerConfig: "+config+"\n"), nil)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: error %v, want one saying %q", c.config, err, c.want)
		}
	}
}

// byID indexes mappings by their logical ID.
func byID(ms []*MappingSpec) map[string]*MappingSpec {
	got := map[string]*MappingSpec{}
	for _, m := range ms {
		got[m.Id] = m
	}
	return got
}
