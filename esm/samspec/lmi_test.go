package samspec

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const lmiTemplate = `Transform: AWS::Serverless-2016-10-31
Parameters:
  PerEnv:
    Type: Number
    Default: 12
Globals:
  Function:
    CodeUri: fn
    Handler: bootstrap
    Runtime: provided.al2023
    MemorySize: 8192
    CapacityProviderConfig:
      ExecutionEnvironmentMemoryGiBPerVCpu: 4
Resources:
  Provider:
    Type: AWS::Serverless::CapacityProvider
    Properties:
      VpcConfig: {SubnetIds: [subnet-1]}
  Explicit:
    Type: AWS::Serverless::Function
    Properties:
      CapacityProviderConfig:
        Arn: !GetAtt Provider.Arn
        PerExecutionEnvironmentMaxConcurrency: !Ref PerEnv
  Default:
    Type: AWS::Serverless::Function
    Properties:
      CapacityProviderConfig:
        Arn: !GetAtt Provider.Arn
  TooMany:
    Type: AWS::Serverless::Function
    Properties:
      CapacityProviderConfig:
        Arn: !GetAtt Provider.Arn
        PerExecutionEnvironmentMaxConcurrency: 1601
`

// TestLMIConcurrency: CapacityProviderConfig makes a function an LMI one, with its
// PerExecutionEnvironmentMaxConcurrency, or 8 per vCPU of an environment (MemorySize over
// ExecutionEnvironmentMemoryGiBPerVCpu, merged from Globals).
func TestLMIConcurrency(t *testing.T) {
	path := filepath.Join(t.TempDir(), "template.yaml")
	if err := os.WriteFile(path, []byte(lmiTemplate), 0o644); err != nil {
		t.Fatal(err)
	}
	r := localResolver(t, readTemplate(t, path), nil, localKafka)
	for name, want := range map[string]int{"Explicit": 12, "Default": 8 * 2} {
		f, err := r.Function(name)
		if err != nil {
			t.Fatal(err)
		}
		if f.LMI == nil || f.LMI.MemoryGiBPerVCPU != 4 || f.LMIConcurrency() != want {
			t.Errorf("%s: LMI %+v, LMIConcurrency %d, want %d", name, f.LMI, f.LMIConcurrency(), want)
		}
	}
	if _, err := r.Function("TooMany"); err == nil || !strings.Contains(err.Error(), "PerExecutionEnvironmentMaxConcurrency must be a whole number from 1 to 1600, not \"1601\"") {
		t.Errorf("TooMany: %v", err)
	}
	f, err := readTemplate(t, sampleTemplate).Function("ConsumerFunction")
	if err != nil || f.LMI != nil || f.LMIConcurrency() != 0 {
		t.Errorf("the sample's consumer: LMI %+v, %d, %v; want none", f.LMI, f.LMIConcurrency(), err)
	}
}
