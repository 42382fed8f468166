package samlint

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"
)

// eventBase is, for each event type of sam-events.json, the properties an event of the type
// needs, written as YAML lines under the event's Properties (indent 12); "{}" is none.
var eventBase = map[string]string{
	"SQS":              "            Queue: arn:aws:sqs:eu-west-1:123456789012:orders\n",
	"Kinesis":          "            Stream: arn:aws:kinesis:eu-west-1:123456789012:stream/orders\n            StartingPosition: LATEST\n",
	"DynamoDB":         "            Stream: arn:aws:dynamodb:eu-west-1:123456789012:table/orders/stream/2026-01-01T00:00:00.000\n            StartingPosition: LATEST\n",
	"MSK":              "            Stream: arn:aws:kafka:eu-west-1:123456789012:cluster/orders/abcd1234-ab12-cd34-ef56-abcdef123456-1\n            StartingPosition: LATEST\n            Topics: [orders]\n",
	"SelfManagedKafka": "            KafkaBootstrapServers: [b-1.example.com:9092]\n            Topics: [orders]\n            SourceAccessConfigurations:\n              - {Type: SASL_SCRAM_512_AUTH, URI: arn:aws:secretsmanager:eu-west-1:123456789012:secret:kafka}\n",
	"MQ":               "            Broker: arn:aws:mq:eu-west-1:123456789012:broker:orders:b-1234\n            Queues: [orders]\n            SourceAccessConfigurations:\n              - {Type: BASIC_AUTH, URI: arn:aws:secretsmanager:eu-west-1:123456789012:secret:mq}\n",
	"DocumentDB":       "            Cluster: arn:aws:rds:eu-west-1:123456789012:cluster:orders\n            DatabaseName: db\n            SourceAccessConfigurations:\n              - {Type: BASIC_AUTH, URI: arn:aws:secretsmanager:eu-west-1:123456789012:secret:docdb}\n",
	"S3":               "            Bucket: !Ref Bucket\n            Events: s3:ObjectCreated:*\n",
	"SNS":              "            Topic: arn:aws:sns:eu-west-1:123456789012:orders\n",
	"Api":              "            Path: /orders\n            Method: get\n",
	"HttpApi":          "            Path: /orders\n            Method: get\n",
	"Schedule":         "            Schedule: rate(1 minute)\n",
	"ScheduleV2":       "            ScheduleExpression: rate(1 minute)\n",
	"CloudWatchEvent":  "            Pattern: {source: [orders]}\n",
	"EventBridgeRule":  "            Pattern: {source: [orders]}\n",
	"CloudWatchLogs":   "            LogGroupName: orders\n            FilterPattern: ERROR\n",
	"IoTRule":          "            Sql: SELECT * FROM 'orders'\n",
	"AlexaSkill":       "            SkillId: amzn1.ask.skill.12345678-1234-1234-1234-123456789012\n",
	"Cognito":          "            UserPool: !Ref Pool\n            Trigger: PreSignUp\n",
}

// kindSample is a value of each kind of sam-events.json, as YAML; propSample one for the
// properties whose value has parts it needs.
var (
	kindSample = map[string]string{"int": "1", "bool": "true", "str": "x", "list": "[x]", "dict": "{}", "any": "x"}
	propSample = map[string]string{"RequestModel": "{Model: Order}", "Target": "{Id: orders}", "SqsSubscription": "true"}
)

// TestSAMEventPropertiesAccepted walks the event properties of the SAM translator (1.110.0,
// schema/sam-events.json, the property_types of each event source class): every property of
// every event type, given alone beside what the type needs, with a value of the kind the
// transform wants, is accepted by klt lint where the transform accepts it: no SAM schema
// problem, no "not defined" and no "Type of property ... is invalid" at it.
func TestSAMEventPropertiesAccepted(t *testing.T) {
	data, err := os.ReadFile("schema/sam-events.json")
	if err != nil {
		t.Fatal(err)
	}
	var events map[string]map[string]string
	if err := json.Unmarshal(data, &events); err != nil {
		t.Fatal(err)
	}
	if len(events) < 19 || len(events["SelfManagedKafka"]) < 25 {
		t.Fatalf("sam-events.json: %d event types, %d SelfManagedKafka properties: not the translator's", len(events), len(events["SelfManagedKafka"]))
	}
	var types []string
	for typ := range events {
		types = append(types, typ)
	}
	sort.Strings(types)
	walked := 0
	for _, typ := range types {
		base, ok := eventBase[typ]
		if !ok {
			t.Errorf("event type %s of the translator: not in eventBase", typ)
			continue
		}
		for prop, kind := range events[typ] {
			if strings.Contains(base, "            "+prop+":") {
				continue // given already, with a value the type needs
			}
			walked++
			value := kindSample[kind]
			if v, ok := propSample[prop]; ok {
				value = v
			}
			tmpl := fmt.Sprintf(`Transform: AWS::Serverless-2016-10-31
Resources:
  Bucket:
    Type: AWS::S3::Bucket
  Pool:
    Type: AWS::Cognito::UserPool
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: s3://artifacts-bucket/fn.zip
      Handler: bootstrap
      Runtime: provided.al2023
      Events:
        Ev:
          Type: %s
          Properties:
%s            %s: %s
`, typ, base, prop, value)
			problems, err := LintData(context.Background(), "t.yaml", ".", []byte(tmpl))
			if err != nil {
				t.Fatalf("%s.%s: %v", typ, prop, err)
			}
			at := "Properties.Events.Ev.Properties." + prop
			for _, p := range problems {
				refused := strings.HasPrefix(p.Problem, "the SAM schema ") || strings.HasPrefix(p.Problem, "matches none of the shapes") ||
					strings.Contains(p.Problem, "property "+prop+" not defined for resource") || strings.Contains(p.Problem, "Type of property")
				if refused && (p.Path == at || strings.HasPrefix(p.Path, at+".") || p.Path == "Properties.Events.Ev" || p.Path == "Properties.Events.Ev.Properties") {
					t.Errorf("%s event, %s: %s (kind %s): refused where the transform accepts it: %s", typ, prop, value, kind, p)
				}
			}
		}
	}
	if walked < 200 {
		t.Errorf("walked %d properties, want the translator's 200 or more", walked)
	}
}
