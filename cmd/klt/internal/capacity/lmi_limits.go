package capacity

// Lambda Managed Instances (LMI): the limits and prices the LMI part of a plan rests on, each
// with the page that states it and the date it was read. Where a figure could not be read on
// an AWS page, its source says so, and the plan's notes repeat it: the plan never passes a
// guess off as a price.

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
	srcLMIPricing = "https://aws.amazon.com/lambda/pricing/ (Lambda Managed Instances): request charges of $0.20 per million requests and a " +
		"compute management fee of 15% on the EC2 on-demand instance price, on top of the EC2 instance charges; no duration " +
		"charge. The page renders its rates by script: this wording was read (2026-12-08) as transcribed verbatim from it on " +
		"2026-09-20 (api-evangelist/aws-lambda, plans/aws-lambda-plans-pricing.yml) and not on the live page"
	// srcEC2Price is the source of every instance price of lmiInstances: none could be read on
	// an AWS page here (https://aws.amazon.com/ec2/pricing/on-demand/ renders its prices by
	// script), so each is marked unconfirmed in the plan.
	srcEC2Price = "NOT CONFIRMED on an AWS page: https://aws.amazon.com/ec2/pricing/on-demand/ renders its prices by script and " +
		"could not be read here (2026-12-08); us-east-1 Linux on-demand price as commonly listed (m7g.large $0.0816 an hour " +
		"is corroborated by factualminds.com, June 2026); check it with `aws pricing get-products --service-code AmazonEC2` " +
		"and give the right one with --price lmi_instance_hour=USD"
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
	// lmiManagementFee is the management fee, a fraction of the instance's on-demand price.
	// srcLMIPricing.
	lmiManagementFee = 0.15
)

// lmiInstance is one EC2 instance type an LMI capacity provider may run: its vCPUs and
// memory (https://aws.amazon.com/ec2/instance-types/, the family's page: M7g, C7g, R7g, M7i,
// C7i) and its us-east-1 Linux on-demand price an hour (srcEC2Price: not confirmed).
type lmiInstance struct {
	name      string
	arch      string
	vcpus     int
	memoryGiB float64
	hourUSD   float64
}

// lmiInstances are the instance types the plan prices; lmiDefaultInstance names the one it
// takes for each architecture when none is given: the M family's large, whose 4 GiB per vCPU
// holds environments of every ratio up to 4.
var lmiInstances = []lmiInstance{
	{"m7g.large", archArm, 2, 8, 0.0816},
	{"m7g.xlarge", archArm, 4, 16, 0.1632},
	{"c7g.large", archArm, 2, 4, 0.0725},
	{"c7g.xlarge", archArm, 4, 8, 0.145},
	{"r7g.large", archArm, 2, 16, 0.1071},
	{"m7i.large", archX86, 2, 8, 0.1008},
	{"c7i.large", archX86, 2, 4, 0.08925},
}

var lmiDefaultInstance = map[string]string{archArm: "m7g.large", archX86: "m7i.large"}

func lmiInstanceByName(name string) (lmiInstance, bool) {
	for _, i := range lmiInstances {
		if i.name == name {
			return i, true
		}
	}
	return lmiInstance{}, false
}

func lmiInstanceNames() []string {
	var names []string
	for _, i := range lmiInstances {
		names = append(names, i.name)
	}
	return names
}
