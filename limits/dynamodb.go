package limits

// MaxDynamoDBItemBytes is the largest DynamoDB item, in bytes: 400 KB, counting the binary length
// of its attribute names and values. Package idempotency keeps a stored result under it
// (idempotency.ErrResultTooLarge).
// https://docs.aws.amazon.com/amazondynamodb/latest/developerguide/ServiceQuotas.html#limits-items
const MaxDynamoDBItemBytes = 400 * 1024
