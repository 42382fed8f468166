package idempotency_test

import (
	"context"
	"errors"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsdynamodb "github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/dynamodb"
)

// BenchmarkDo measures Do against dynalite, with the DynamoDB calls it makes per operation
// (ddb-calls/op), beside the alternative: one raw conditional PutItem with the same
// condition, which gives exactly-once only when nothing fails and no result is needed.
//
//	op=new-key    a key never seen: Do makes PutItem (acquire) + PutItem (complete)
//	op=replay     a completed key: PutItem (condition fails) + GetItem, because dynalite
//	              ignores ReturnValuesOnConditionCheckFailure (real DynamoDB: 1 call)
//	op=cache-hit  a completed key in WithLocalCache: no call
//
// Compare with: go test -run '^$' -bench Do -count 10 ./idempotency/ > bench.txt &&
// go tool benchstat -col /impl bench.txt
func BenchmarkDo(b *testing.B) {
	e := newEnv(b)
	table := e.newTable(b)
	ctx := context.Background()
	var seq atomic.Int64
	fresh := func() string { return "bench-" + strconv.FormatInt(seq.Add(1), 10) }
	fn := func(context.Context) (receipt, error) { return receipt{ID: "r", Amount: 9.99}, nil }
	payload := map[string]any{"order": 42, "amount": 9.99}

	// measure runs loop under b.Loop and reports the DynamoDB calls per iteration.
	measure := func(b *testing.B, loop func()) {
		b.Helper()
		e.calls.reset()
		for b.Loop() {
			loop()
		}
		b.ReportMetric(float64(e.calls.total.Load())/float64(b.N), "ddb-calls/op")
	}
	do := func(b *testing.B, store idempotency.Store, key string) {
		if _, err := idempotency.Do(ctx, store, key, payload, fn); err != nil {
			b.Fatal(err)
		}
	}
	bare := func(b *testing.B, key string, wantErr bool) {
		now := time.Now()
		_, err := e.client.PutItem(ctx, &awsdynamodb.PutItemInput{
			TableName: aws.String(table),
			Item: map[string]types.AttributeValue{
				"id":                     s(key),
				"expiration":             n(now.Add(time.Hour).Unix()),
				"in_progress_expiration": n(now.Add(5 * time.Minute).UnixMilli()),
				"status":                 s("INPROGRESS"),
			},
			ConditionExpression: aws.String("attribute_not_exists(#id) OR #expiry < :now OR " +
				"(#status = :inprogress AND attribute_exists(#in_progress_expiry) AND #in_progress_expiry < :now_in_millis)"),
			ExpressionAttributeNames: map[string]string{
				"#id": "id", "#expiry": "expiration", "#status": "status", "#in_progress_expiry": "in_progress_expiration",
			},
			ExpressionAttributeValues: map[string]types.AttributeValue{
				":now": n(now.Unix()), ":now_in_millis": n(now.UnixMilli()), ":inprogress": s("INPROGRESS"),
			},
			ReturnValuesOnConditionCheckFailure: types.ReturnValuesOnConditionCheckFailureAllOld,
		})
		var ccf *types.ConditionalCheckFailedException
		if failed := errors.As(err, &ccf); failed != wantErr || (err != nil && !failed) {
			b.Fatalf("PutItem: %v", err)
		}
	}

	b.Run("op=new-key/impl=toolkit", func(b *testing.B) {
		store := newStore(b, e.client, table)
		measure(b, func() { do(b, store, fresh()) })
	})
	b.Run("op=new-key/impl=bare-conditional-put", func(b *testing.B) {
		measure(b, func() { bare(b, fresh(), false) })
	})
	b.Run("op=replay/impl=toolkit", func(b *testing.B) {
		store := newStore(b, e.client, table)
		key := fresh()
		do(b, store, key)
		measure(b, func() { do(b, store, key) })
	})
	b.Run("op=replay/impl=bare-conditional-put", func(b *testing.B) {
		// The condition fails on the existing record; the result is not read back.
		key := fresh()
		bare(b, key, false)
		measure(b, func() { bare(b, key, true) })
	})
	b.Run("op=cache-hit/impl=toolkit", func(b *testing.B) {
		store := newStore(b, e.client, table, dynamodb.WithLocalCache(256))
		key := fresh()
		do(b, store, key)
		measure(b, func() { do(b, store, key) })
	})
}
