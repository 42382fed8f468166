package capacity

// Lambda Managed Instances (LMI): the limits the LMI part of a plan rests on, each with the
// page that states it and the date it was read. Its prices are in prices.go, the one price
// table.

// Sources of LMI, one per page (read 2026-12-08).
const (
	srcLMIQuotas = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-quotas.html (read 2026-12-08): " +
		"\"Standard Kafka event source mapping throughput on Lambda Managed Instances: 1 MB per second. Cannot be increased.\"; " +
		"\"Standard Kafka event source mappings on Lambda Managed Instances: 100 event source mappings. Cannot be increased.\"; " +
		"\"Standard SQS event source mapping throughput on Lambda Managed Instances: 5 MB per second. Cannot be increased.\"; " +
		"vCPUs per capacity provider 15,000"
	srcLMIScaling = "https://docs.aws.amazon.com/lambda/latest/dg/lambda-managed-instances-scaling.html (read 2026-12-08): " +
		"Lambda launches three instances by default for AZ resiliency; the default minimum is 3 execution environments; " +
		"the smallest function is 2 GB and 1 vCPU; maximum concurrency up to 64 per vCPU; by default Lambda keeps " +
		"headroom for traffic to double within 5 minutes without throttles"
	srcLMIConfig = "https://docs.aws.amazon.com/AWSCloudFormation/latest/TemplateReference/aws-properties-lambda-function-lambdamanagedinstancescapacityproviderconfig.html (read 2026-12-08): " +
		"ExecutionEnvironmentMemoryGiBPerVCpu 2 to 8; PerExecutionEnvironmentMaxConcurrency 1 to 1,600 concurrent executions per execution environment"
)

const (
	// lmiKafkaBytesPerSecond is what one standard Kafka mapping carries to an LMI function:
	// 1 MB per second, not raisable (MB taken as 1,000,000 bytes, the smaller reading, as for
	// pollers). lmiKafkaMappings is how many such mappings an account may have. srcLMIQuotas.
	lmiKafkaBytesPerSecond = 1_000_000
	lmiKafkaMappings       = 100
	// lmiMinInstances and lmiMinEnvironments are what Lambda starts for a function version
	// by default, for AZ resiliency. srcLMIScaling.
	lmiMinInstances    = 3
	lmiMinEnvironments = 3
	// lmiMinMemory is the smallest LMI function (2 GB, 1 vCPU); lmiMaxPerVCPU the most
	// concurrent invocations per vCPU. srcLMIScaling.
	lmiMinMemory  = 2_048
	lmiMaxPerVCPU = 64
	// lmiMaxMemory is the planner's bound (not AWS's): 32 GB, the largest LMI function
	// reported (not confirmed on an AWS page here).
	lmiMaxMemory = 32_768
	// The ranges of the CapacityProviderConfig settings. srcLMIConfig.
	lmiMinRatio          = 2
	lmiMaxRatio          = 8
	lmiMaxEnvConcurrency = 1_600
	// lmiDefaultUtilization is the plan's reading of AWS's default target: "enough headroom
	// for your traffic to double within 5 minutes", capacity for twice the load, so half of
	// it in use. srcLMIScaling. An estimate: AWS does not give the target as a number.
	lmiDefaultUtilization = 0.5
)
