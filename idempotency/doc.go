// Package idempotency makes side effects happen once, however often the event source mapping
// delivers a record, through conditional writes to a DynamoDB table.
//
// Delivery is at least once: a batch is retried after a timeout, a partial failure replays
// the rest of a partition, a producer's retry writes the same order twice. [Do] runs a
// function once per key and replays its stored result afterwards:
//
//	store := idempotency.NewDynamoDBStore(ddb, "idempotency", idempotency.WithLocalCache(256))
//	receipt, err := idempotency.Do(ctx, store, idempotency.KafkaKey(r), order,
//		func(ctx context.Context) (Receipt, error) { return charge(ctx, order) })
//
// The first call writes an in-progress record with a conditional PutItem, runs the function
// and stores its result as COMPLETED; a later call with the same key returns the result
// without running the function, until the record expires ([WithExpiry], 1 hour by default).
// While the first call runs, others get [ErrInProgress]: report the record as failed so it
// comes back later. The in-progress lease ends at the context's deadline, the Lambda timeout,
// so a crashed or timed-out invocation frees the key; [WithMaxLease] shortens it.
//
// # Choosing the key
//
// [KafkaKey] ("topic-partition-offset") and [SQSKey] (the message ID) identify redeliveries
// of the same record: they protect against the event source mapping's retries. A producer
// that retries writes a new record at a new offset, with a new message ID: against that, key
// on a business identifier from the payload (an order ID, a payment reference). The payload
// argument is the part that must not change for the same key; a later call with a different
// one gets [ErrPayloadMismatch].
//
// # Compatibility with Powertools for Python
//
// The table layout, the condition, the status machine and the key are those of Powertools'
// idempotency utility: attributes id, expiration (epoch seconds, the TTL attribute),
// in_progress_expiration (epoch milliseconds), status, data (the result as a JSON string) and
// validation; the stored ID is "<prefix>#<md5 hex>" of the key serialized as Python's
// json.dumps(key, sort_keys=True) writes it. A Go function and a Python function that use the
// same prefix and key share records. [TableInput] gives the table's definition.
//
// # Failures
//
// If the function fails or panics, its in-progress record is deleted, by the caller that
// created it only, so a retry runs it again; the error is returned (joined with a failure to
// delete, if any) or the panic goes on. If the store fails before the function runs, it does
// not run: the error is a [*PersistenceError] (fail closed). If the store fails after, the
// function's result is returned with a *PersistenceError, and the record stays in progress
// until its lease ends. A result too large for a DynamoDB item is an error
// ([ErrResultTooLarge]) unless [WithoutResult] says to store none.
//
// Setting POWERTOOLS_IDEMPOTENCY_DISABLED=true turns it all off, as in Powertools.
package idempotency
