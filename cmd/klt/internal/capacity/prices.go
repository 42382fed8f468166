package capacity

// US East (N. Virginia) prices, in US dollars, each with the page that states it: the one price
// table of the plan. The LMI prices below were read 2026-12-08; where one could not be read on
// an AWS page its source says so, and the plan lists it under lmi.unconfirmed: the plan never
// passes a guess off as a price. Of the on-demand Lambda prices, the request charge ($0.20 per
// million) and the x86 rate ($0.0000166667 per GB-second) were checked again on 2026-12-08
// against a transcription of the pricing page (api-evangelist/aws-lambda,
// plans/aws-lambda-plans-pricing.yml, May 2026); the page renders its rate tables by script,
// so the Arm rate was not checked again. The plan prices the first tier of each (the first 6 billion GB-seconds a month, the first 100 billion
// SQS requests, the first 10 TB out) and does not take the free tiers off (1 million Lambda
// requests and 400,000 GB-seconds, 1 million SQS requests, 100 GB out a month): a plan is for
// a stack that shares its account with others.
const (
	// https://aws.amazon.com/lambda/pricing/: "$0.0000133334" per GB-second on Arm (the
	// durable functions example, us-east-1, ARM-based), "$0.0000166667 per GB-s" on x86;
	// requests "$0.20 per 1M".
	priceArmGBSecond = 0.0000133334
	priceX86GBSecond = 0.0000166667
	priceLambdaPerM  = 0.20
	srcLambdaPricing = "https://aws.amazon.com/lambda/pricing/: requests $0.20 per million; duration $0.0000133334 per GB-second (Arm), $0.0000166667 (x86), us-east-1, billed by the ms"
	// https://aws.amazon.com/lambda/pricing/, "Provisioned Mode for Event Source Mapping
	// (ESM) Pricing": "EPU-hours price is $0.185/hour and supports 10 event pollers per EPU";
	// an MSK or self-managed Kafka EPU "supports up to 20 MB/s throughput capacity", "with a
	// default of 10 event pollers"; "720 hours per month"; the grouped example: 10 one-poller
	// mappings in a poller group use 1 EPU, "720 EPU-hours * $0.185 = $133.2".
	priceEPUHour  = 0.185
	srcEPUPricing = "https://aws.amazon.com/lambda/pricing/ (Provisioned Mode for ESM): $0.185 per EPU-hour; a Kafka EPU is 20 MB/s and 10 event pollers; mappings of a poller group share EPUs; billed per second with a 1-minute minimum"
	// https://aws.amazon.com/sqs/pricing/: standard $0.40, FIFO $0.50 per million requests
	// (first 100 billion a month); "each 64 KB chunk of a payload is billed as 1 request".
	priceSQSStandardPerM = 0.40
	priceSQSFIFOPerM     = 0.50
	srcSQSPricing        = "https://aws.amazon.com/sqs/pricing/: $0.40 per million requests (standard), $0.50 (FIFO); each 64 KB chunk of a request's payload is billed as one request"
	// https://aws.amazon.com/dynamodb/pricing/on-demand/: $0.625 per million write request
	// units (us-east-1, Standard table class); a write request unit writes an item of up to
	// 1 KB, larger items take more.
	priceDynamoDBWritePerM = 0.625
	srcDynamoDBPricing     = "https://aws.amazon.com/dynamodb/pricing/on-demand/: $0.625 per million write request units; one unit writes up to 1 KB"
	// https://aws.amazon.com/ec2/pricing/on-demand/ (Data Transfer): out to the internet
	// $0.09 per GB, the first 10 TB a month (the first 100 GB free, not taken off here).
	// https://aws.amazon.com/lambda/pricing/ (Data Transfer): data transfer with Lambda
	// functions is free in the same Region between S3, DynamoDB, SQS, SNS, Kinesis and other
	// services; data in and out from outside the Region is charged at EC2 rates.
	priceTransferOutPerGB = 0.09
	srcTransferPricing    = "https://aws.amazon.com/ec2/pricing/on-demand/ (Data Transfer): $0.09 per GB out to the internet, first 10 TB a month; https://aws.amazon.com/lambda/pricing/: in-Region transfer between Lambda and DynamoDB, SQS and the like is free"

	// Lambda Managed Instances (read 2026-12-08).
	srcLMIPricing = "https://aws.amazon.com/lambda/pricing/ (Lambda Managed Instances): request charges of $0.20 per million requests and a " +
		"compute management fee of 15% on the EC2 on-demand instance price, on top of the EC2 instance charges; no duration " +
		"charge. The page renders its rates by script: this wording was read (2026-12-08) in a transcription of it made " +
		"2026-09-20 (api-evangelist/aws-lambda, plans/aws-lambda-plans-pricing.yml: \"15% premium on the EC2 on-demand " +
		"instance price\", \"$0.20 per million requests\") and in others' accounts of it (edjgeek.com, packetsensei.com), not on the live page"
	// srcEC2Price is the source of every instance price of lmiInstances: none could be read on
	// an AWS page here (https://aws.amazon.com/ec2/pricing/on-demand/ renders its prices by
	// script), so each is marked unconfirmed in the plan.
	srcEC2Price = "NOT CONFIRMED on an AWS page: https://aws.amazon.com/ec2/pricing/on-demand/ renders its prices by script and " +
		"could not be read here (2026-12-08); us-east-1 Linux on-demand price as commonly listed (m7g.large $0.0816 an hour " +
		"is corroborated by factualminds.com, June 2026); check it with `aws pricing get-products --service-code AmazonEC2` " +
		"and give the right one with --price lmi_instance_hour=USD"
	// lmiManagementFee is the management fee, a fraction of the instance's on-demand price.
	// srcLMIPricing.
	lmiManagementFee = 0.15
)

// DefaultPrices returns the us-east-1 prices for a function architecture: "x86_64" prices
// the GB-seconds of x86, anything else those of Arm ("arm64", the default). Make checks the
// architecture before it asks.
func DefaultPrices(arch string) Prices {
	gbs := priceArmGBSecond
	if arch == archX86 {
		gbs = priceX86GBSecond
	}
	return Prices{
		LambdaGBSecond:       gbs,
		LambdaRequests:       priceLambdaPerM,
		EventPollerUnitHour:  priceEPUHour,
		SQSStandardRequests:  priceSQSStandardPerM,
		SQSFIFORequests:      priceSQSFIFOPerM,
		DynamoDBWriteUnits:   priceDynamoDBWritePerM,
		DataTransferOutPerGB: priceTransferOutPerGB,
		LMIManagementFee:     lmiManagementFee,
	}
}

// fill returns p with every zero price taken from d.
func (p Prices) fill(d Prices) Prices {
	take := func(v *float64, def float64) {
		if *v == 0 {
			*v = def
		}
	}
	take(&p.LambdaGBSecond, d.LambdaGBSecond)
	take(&p.LambdaRequests, d.LambdaRequests)
	take(&p.EventPollerUnitHour, d.EventPollerUnitHour)
	take(&p.SQSStandardRequests, d.SQSStandardRequests)
	take(&p.SQSFIFORequests, d.SQSFIFORequests)
	take(&p.DynamoDBWriteUnits, d.DynamoDBWriteUnits)
	take(&p.DataTransferOutPerGB, d.DataTransferOutPerGB)
	take(&p.LMIInstanceHour, d.LMIInstanceHour)
	take(&p.LMIManagementFee, d.LMIManagementFee)
	return p
}

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
