package capacity

// US East (N. Virginia) prices, in US dollars, each with the page that states it. The plan
// prices the first tier of each (the first 6 billion GB-seconds a month, the first 100 billion
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
