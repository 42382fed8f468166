package samspec

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

const (
	enricherTemplate = "../../cmd/klt/testdata/local/enricher/template.yaml"
	sampleTemplate   = "../../template.yaml"
	localKafka       = "127.0.0.1:39092"
)

func readTemplate(t *testing.T, path string) *InvokeTemplate {
	t.Helper()
	tpl, err := ReadInvokeTemplate(path)
	if err != nil {
		t.Fatal(err)
	}
	return tpl
}

func localResolver(t *testing.T, tpl *InvokeTemplate, params map[string]string, kafka string) *Resolver {
	t.Helper()
	r, err := NewLocalResolver(tpl, params)
	if err != nil {
		t.Fatal(err)
	}
	r.Local = LocalEndpoints{KafkaBootstrapServers: kafka}
	return r
}

// TestEnricherStack: a stack whose parameters have names of its own. BrokerList, with no
// Default, is where its SelfManagedKafka event's bootstrap servers go, so it gets the local
// Kafka's address, in the event and in the function's environment; FunctionTimeout is used as
// `Timeout: !Ref FunctionTimeout`, its Default unless overridden.
func TestEnricherStack(t *testing.T) {
	tpl := readTemplate(t, enricherTemplate)
	if got := KafkaBrokerParameters(tpl); !reflect.DeepEqual(got, []string{"BrokerList"}) {
		t.Errorf("KafkaBrokerParameters = %v, want [BrokerList]", got)
	}
	r := localResolver(t, tpl, nil, localKafka)
	f, err := r.Function("EnricherFunction")
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != 10 || f.Memory != 128 || f.BuildMethod != "makefile" || f.Handler != "bootstrap" ||
		f.Runtime != "provided.al2023" || f.Architecture != "arm64" || f.CodeURI != filepath.Dir(mustAbs(t, enricherTemplate)) {
		t.Errorf("function %+v", f)
	}
	brokers, err := r.Str(f.Env["KAFKA_BOOTSTRAP_SERVERS"], "KAFKA_BOOTSTRAP_SERVERS")
	if err != nil || brokers != localKafka {
		t.Errorf("KAFKA_BOOTSTRAP_SERVERS = %q, %v; want the local Kafka's %s", brokers, err, localKafka)
	}
	ms, skipped, err := LocalMappings(tpl, r)
	if err != nil || len(skipped) != 0 || len(ms) != 1 {
		t.Fatalf("LocalMappings = %v, %v, %v", ms, skipped, err)
	}
	m := ms[0]
	if m.Id != "EnricherFunction.Readings" || m.Function != "EnricherFunction" || m.Kind != KafkaMapping || m.Msk ||
		!reflect.DeepEqual(m.Topics, []string{"readings"}) || m.GroupID != "enricher" || m.BatchSize != 10 || !m.ReportFailures {
		t.Errorf("mapping %+v", m)
	}

	// An override wins over the Default, and over the local Kafka.
	r = localResolver(t, tpl, map[string]string{"FunctionTimeout": "25", "BrokerList": "kafka:9092", "InputTopic": "raw"}, localKafka)
	if f, err = r.Function("EnricherFunction"); err != nil || f.Timeout != 25 {
		t.Errorf("Timeout with FunctionTimeout=25: %v, %v", f, err)
	}
	if brokers, _ := r.Str(f.Env["KAFKA_BOOTSTRAP_SERVERS"], "x"); brokers != "kafka:9092" {
		t.Errorf("KAFKA_BOOTSTRAP_SERVERS = %q with BrokerList overridden", brokers)
	}
	if ms, _, err := LocalMappings(tpl, r); err != nil || ms[0].Topics[0] != "raw" {
		t.Errorf("topic with InputTopic=raw: %v", err)
	}
}

// TestParameterWithoutValue: a parameter with no override, no Default and no local server
// behind it is an error that names it and the flag that gives it a value, never another flag
// (klt local has no --env-vars); a Go API gives its own hint.
func TestParameterWithoutValue(t *testing.T) {
	tpl := readTemplate(t, enricherTemplate)
	r := localResolver(t, tpl, nil, "") // the local Kafka does not run
	f, err := r.Function("EnricherFunction")
	if err != nil {
		t.Fatal(err)
	}
	_, err = r.Str(f.Env["KAFKA_BOOTSTRAP_SERVERS"], "EnricherFunction.Environment.Variables.KAFKA_BOOTSTRAP_SERVERS")
	want := "EnricherFunction.Environment.Variables.KAFKA_BOOTSTRAP_SERVERS: parameter BrokerList has no Default, and no value was given; give it one with --parameter-overrides BrokerList=VALUE"
	if err == nil || !strings.HasSuffix(err.Error(), want) || strings.Contains(err.Error(), "--env-vars") {
		t.Errorf("got %v\nwant ...%s", err, want)
	}
	r.ParameterHint = func(name string) string { return "give it with esmtest.WithParameter(" + name + ", VALUE)" }
	_, err = r.Str(f.Env["KAFKA_BOOTSTRAP_SERVERS"], "x")
	if err == nil || !strings.HasSuffix(err.Error(), "parameter BrokerList has no Default, and no value was given; give it with esmtest.WithParameter(BrokerList, VALUE)") {
		t.Errorf("with a ParameterHint: %v", err)
	}
}

// TestSampleWithoutPrefill: the toolkit's sample template needs no value klt local used to
// fill in for it: KafkaClusterArn's Default "" picks the self-managed mappings, and
// KafkaBootstrapServers (no Default) is the local Kafka's address.
func TestSampleWithoutPrefill(t *testing.T) {
	tpl := readTemplate(t, sampleTemplate)
	if got := KafkaBrokerParameters(tpl); !reflect.DeepEqual(got, []string{"KafkaBootstrapServers"}) {
		t.Errorf("KafkaBrokerParameters = %v", got)
	}
	r := localResolver(t, tpl, nil, localKafka)
	ms, _, err := LocalMappings(tpl, r)
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, m := range ms {
		ids = append(ids, m.Id)
	}
	if want := []string{"ConsumerSelfManagedMapping", "DispatcherSelfManagedMapping", "WorkerFunction.Work"}; !reflect.DeepEqual(ids, want) {
		t.Errorf("mappings %v, want %v", ids, want)
	}
	for _, name := range tpl.FunctionNames() {
		f, err := r.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		if n := f.Env["KAFKA_BOOTSTRAP_SERVERS"]; n != nil {
			if v, err := r.Str(n, name); err != nil || v != localKafka {
				t.Errorf("%s: KAFKA_BOOTSTRAP_SERVERS = %q, %v", name, v, err)
			}
		}
	}
}

const intrinsicsTemplate = `AWSTemplateFormatVersion: "2010-09-09"
Transform: AWS::Serverless-2016-10-31
Parameters:
  Seconds: {Type: Number, Default: 42}
  Memory: {Type: Number}
  Arch: {Type: String, Default: arm64}
  Code: {Type: String, Default: fn}
  Brokers: {Type: String}
  Sizes: {Type: String, Default: big}
Mappings:
  SizeMap:
    big: {Mb: "512"}
Globals:
  Function:
    Timeout: !Ref Seconds
    Runtime: !Sub "provided.${Version}"
    Handler: !Join ["", [boot, strap]]
    CodeUri: !Sub "${Code}/"
    Architectures: [!Ref Arch]
    Environment:
      Variables:
        MY_BROKERS: !Ref Brokers
Resources:
  Fn:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: !FindInMap [SizeMap, !Ref Sizes, Mb]
  NoMemory:
    Type: AWS::Serverless::Function
    Properties:
      MemorySize: !Ref Memory
  S3Code:
    Type: AWS::Serverless::Function
    Properties:
      CodeUri: {Bucket: b, Key: k}
  BadTimeout:
    Type: AWS::Serverless::Function
    Properties:
      Timeout: !Sub "${Seconds}00"
`

// TestFunctionIntrinsics: every property klt reads of a function may be an intrinsic, in the
// function or in Globals; a broker variable of any name gets the local Kafka; what cannot be
// evaluated or is out of range names the place.
func TestFunctionIntrinsics(t *testing.T) {
	path := filepath.Join(t.TempDir(), "template.yaml")
	src := strings.Replace(intrinsicsTemplate, "${Version}", "al2023", 1)
	if err := os.WriteFile(path, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	tpl := readTemplate(t, path)
	r := localResolver(t, tpl, nil, localKafka)
	f, err := r.Function("Fn")
	if err != nil {
		t.Fatal(err)
	}
	if f.Timeout != 42 || f.Memory != 512 || f.Runtime != "provided.al2023" || f.Handler != "bootstrap" ||
		f.Architecture != "arm64" || f.CodeURI != filepath.Join(filepath.Dir(path), "fn") {
		t.Errorf("function %+v", f)
	}
	if v, err := r.Str(f.Env["MY_BROKERS"], "MY_BROKERS"); err != nil || v != localKafka {
		t.Errorf("MY_BROKERS = %q, %v; want the local Kafka", v, err)
	}
	for name, want := range map[string]string{
		"NoMemory":   "NoMemory.MemorySize: parameter Memory has no Default, and no value was given; give it one with --parameter-overrides Memory=VALUE",
		"S3Code":     "function S3Code: CodeUri is a mapping {Bucket, Key}: klt builds a local directory",
		"BadTimeout": `function BadTimeout: Timeout must be a whole number of seconds from 1 to 900, not !Sub ${Seconds}00 ("4200")`,
	} {
		_, err := r.Function(name)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v\nwant ...%s", name, err, want)
		}
	}
	r.Params = map[string]string{"Memory": "256", "Arch": "sparc"}
	if _, err := r.Function("NoMemory"); err == nil || !strings.Contains(err.Error(), "Architectures must be [x86_64] or [arm64]") {
		t.Errorf("Arch=sparc: %v", err)
	}
}

func mustAbs(t *testing.T, p string) string {
	t.Helper()
	a, err := filepath.Abs(p)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
