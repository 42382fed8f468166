// Package samlint checks a SAM template for "klt lint": first against the official SAM JSON
// schema (vendored in schema/), then for the mistakes that lose records or fail at run time
// (partial-batch responses, batch windows, visibility timeouts, FilterCriteria, idempotency
// tables and their TTL, the IAM grants a function's code needs, read from its Go code, the
// mappings' MetricsConfig and LoggingConfig, and the dimensions of CloudWatch alarms).
package samlint
