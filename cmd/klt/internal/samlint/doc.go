// Package samlint checks a SAM template for "klt lint": first against the SAM JSON schema of
// the SAM translator, with every event property the transform accepts (vendored in schema/),
// and the transform's own rules; then what the transform makes of the template, as cfn-lint
// checks it after running the transform (the AWS::Lambda::Function and event source mappings
// it writes against their CloudFormation schemas, reference cycles, primary identifiers);
// then the mistakes that lose records or fail at run time (partial-batch responses, batch
// windows, visibility timeouts, FilterCriteria, idempotency tables and their TTL, the IAM
// grants a function's code needs, read from its Go code, the mappings' MetricsConfig and
// LoggingConfig, the dimensions of CloudWatch alarms, and the functions' Powertools
// environment variables, their names and values).
package samlint
