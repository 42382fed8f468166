// Package cfnschema checks the Properties of a CloudFormation resource against its resource
// provider schema, the JSON schema the CloudFormation registry publishes for each type and
// that CloudFormation itself validates a stack against. klt lint uses it so that a misspelt
// property (MaximumBatchingWindowInSecond on an AWS::Lambda::EventSourceMapping), a value of
// the wrong type, a missing required property or a value outside its enum is reported before
// deployment, at the property's FILE:LINE:COL, as cfn-lint reports it.
//
// The schemas are vendored from cfn-lint (schemas/SOURCES.md) for the types the toolkit's
// templates use: Lambda, SQS, SNS, DynamoDB, Kinesis, MSK, IAM, Secrets Manager, Logs,
// CloudWatch, S3, EventBridge, Pipes, EC2 networking and the Glue schema registry. Known
// reports whether a type has one; Unchecked names the types of a template that have none, so
// that klt says what it did not check instead of passing it silently.
//
// Checker.Resource validates one resource. It reads the keywords those schemas use: type,
// properties, additionalProperties, patternProperties, required, enum, const, minLength,
// maxLength, minimum, maximum, items, minItems, maxItems, $ref into definitions, allOf, anyOf,
// oneOf, if/then/else, dependencies, dependentRequired, and cfn-lint's dependentExcluded,
// requiredXor and requiredOr. A pattern is checked on a string written out when Go's regexp
// compiles it (the schemas are written for ECMAScript and Python engines: one with a
// lookahead is skipped); uniqueItems, formats and cfn-lint's own rules beyond the schemas are
// not checked.
//
// Scalars are read as CloudFormation reads them: a number or a boolean where a string is
// wanted is that string, "5" is an integer and "true" a boolean. An intrinsic function stands
// for any value of the type it produces: Fn::Sub and Fn::Join give strings, Fn::Split and
// Fn::GetAZs lists, a Ref to a List<...> or CommaDelimitedList parameter a list, a Ref to
// anything else a string, and Fn::GetAtt, Fn::Select, Fn::FindInMap and Fn::ImportValue
// anything. Fn::If is checked on each branch; Ref AWS::NoValue is an absent value.
package cfnschema
