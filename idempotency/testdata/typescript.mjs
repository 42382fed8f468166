// Drives Powertools for AWS Lambda (TypeScript)'s idempotency utility, as pinned in the
// repository's package.json, against a DynamoDB endpoint (dynalite), for the Go tests in
// typescript_test.go. It reads one JSON request on stdin and writes one JSON line per step:
//
//   {"endpoint": "http://127.0.0.1:N", "table": "t", "prefix": "p", "steps": [step, ...]}
//
// A step is either
//   {"op": "invoke", "event": {...}, "validate": bool, "crash": bool, "remainingMs": N}
//     runs a handler made idempotent with makeIdempotent and DynamoDBPersistenceLayer, keyed
//     on event.key (eventKeyJmesPath "key"), validating event.order when validate is set
//     (payloadValidationJmesPath "order"), with a Lambda context whose remaining time is
//     remainingMs. The handler returns event.result; with crash it prints
//     {"ran": true, "crashed": true} and exits, leaving its record in progress.
//     Prints {"ran": bool, "result": ..., "error": {"name", "message"}}.
//   {"op": "hash", "docs": ["<JSON text>", ...]}
//     prints {"ids": [...]}: the stored ID the persistence layer computes for each document
//     (getHashedIdempotencyKey over JSON.parse(doc), no JMESPath).
import { readFileSync } from 'node:fs';
import { makeIdempotent, IdempotencyConfig } from '@aws-lambda-powertools/idempotency';
import { DynamoDBPersistenceLayer } from '@aws-lambda-powertools/idempotency/dynamodb';
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';

const req = JSON.parse(readFileSync(0, 'utf8'));
const client = new DynamoDBClient({
  endpoint: req.endpoint,
  region: 'us-east-1',
  credentials: { accessKeyId: 'test', secretAccessKey: 'test' },
  maxAttempts: 1,
});
const layer = () => new DynamoDBPersistenceLayer({ tableName: req.table, awsSdkV3Client: client });
const out = (v) => process.stdout.write(JSON.stringify(v) + '\n');

for (const step of req.steps) {
  if (step.op === 'hash') {
    const p = layer();
    p.configure({ config: new IdempotencyConfig({}), keyPrefix: req.prefix });
    out({ ids: step.docs.map((d) => p.getHashedIdempotencyKey(JSON.parse(d))) });
    continue;
  }
  if (step.op !== 'invoke') throw new Error(`unknown op ${step.op}`);
  let ran = false;
  const handler = makeIdempotent(
    async (event) => {
      ran = true;
      if (step.crash) {
        out({ ran: true, crashed: true });
        process.exit(0);
      }
      return event.result;
    },
    {
      persistenceStore: layer(),
      keyPrefix: req.prefix,
      config: new IdempotencyConfig({
        eventKeyJmesPath: 'key',
        ...(step.validate ? { payloadValidationJmesPath: 'order' } : {}),
      }),
    },
  );
  const context = { getRemainingTimeInMillis: () => step.remainingMs ?? 60000 };
  try {
    const result = await handler(step.event, context);
    out({ ran, result: result === undefined ? null : result });
  } catch (err) {
    out({ ran, error: { name: err.name, message: err.message } });
  }
}
