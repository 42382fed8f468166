package limits

// Limits of Lambda's FilterCriteria, which package filter enforces.
const (
	// MaxFilterPatternLength is the longest filter pattern Lambda accepts, in characters
	// (the length constraint of Filter.Pattern, 0 to 4096):
	// https://docs.aws.amazon.com/lambda/latest/api/API_Filter.html
	MaxFilterPatternLength = 4096

	// FilterQuota is the number of filters an event source mapping may have by default, and
	// RaisedFilterQuota the most a quota increase allows ("You can define up to five
	// different filters for a single event source mapping", a quota that can be raised to
	// 10): https://docs.aws.amazon.com/lambda/latest/dg/invocation-eventfiltering.html
	// (CloudFormation's schema allows 20 items in Filters; the service quota is what binds.)
	FilterQuota       = 5
	RaisedFilterQuota = 10

	// MaxFilterOrCombinations is the most alternatives the $or clauses of one pattern may
	// expand to (the product of the branch counts). It is EventBridge's limit on $or matching
	// (event patterns, whose language and engine, event-ruler, Lambda's filters share); Lambda's
	// own pages state none, so filter applies EventBridge's:
	// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html
	MaxFilterOrCombinations = 1000
)
