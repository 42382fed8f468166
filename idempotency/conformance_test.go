package idempotency_test

import (
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/kafkalambda/toolkit/idempotency"
	"github.com/kafkalambda/toolkit/idempotency/idempotencytest"
)

// TestDynamoDBStoreConformance runs idempotencytest's suite on the DynamoDB store, on
// dynalite, in both formats and in the sort-key layout.
func TestDynamoDBStoreConformance(t *testing.T) {
	t.Parallel()
	e := newEnv(t)
	for _, tc := range []struct {
		name string
		opts []idempotency.StoreOption
		sort bool
	}{
		{"python", nil, false},
		{"typescript", []idempotency.StoreOption{idempotency.WithFormat(idempotency.FormatTypeScript)}, false},
		{"python-sort-key", []idempotency.StoreOption{idempotency.WithAttributes(idempotency.Attributes{Key: "pk", SortKey: "sk"})}, true},
		{"typescript-sort-key", []idempotency.StoreOption{idempotency.WithFormat(idempotency.FormatTypeScript),
			idempotency.WithAttributes(idempotency.Attributes{Key: "pk", SortKey: "sk"})}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			table := e.newTable(t)
			if tc.sort {
				table += "-sk"
				e.createTable(t, &dynamodb.CreateTableInput{
					TableName: aws.String(table),
					AttributeDefinitions: []types.AttributeDefinition{
						{AttributeName: aws.String("pk"), AttributeType: types.ScalarAttributeTypeS},
						{AttributeName: aws.String("sk"), AttributeType: types.ScalarAttributeTypeS},
					},
					KeySchema: []types.KeySchemaElement{
						{AttributeName: aws.String("pk"), KeyType: types.KeyTypeHash},
						{AttributeName: aws.String("sk"), KeyType: types.KeyTypeRange},
					},
				})
			}
			store := newStore(t, e.client, table, tc.opts...)
			idempotencytest.TestStore(t, func(*testing.T) idempotency.Store { return store })
		})
	}
}
