// The Node side of the SQS peer benchmark (see main.go beside this file, which starts it):
// Powertools for AWS Lambda (TypeScript) decoding and processing an SQS event as a Lambda
// function of the documented shape does:
//
//   const processor = new BatchProcessor(EventType.SQS);
//   export const handler = async (event, context) =>
//     processPartialResponse(event, recordHandler, processor, { context });
//
// plus what the Node.js runtime does around the handler: JSON.parse of the payload and
// JSON.stringify of the response. The record handler does nothing.
//
// Usage: node powertools.mjs EVENT_FILE. It reads the event once and writes one JSON line,
// {"node":"v20...","powertools":"2.35.0","messages":M}; then it answers each line "round N" on
// standard input with one JSON line on standard output,
// {"iterations":N,"messages":M,"ns":T,"failures":F}, T being the time N invocations took, and
// exits when standard input ends.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import {
  BatchProcessor,
  EventType,
  processPartialResponse,
} from '@aws-lambda-powertools/batch';

const file = process.argv[2];
if (!file) {
  console.error('usage: node powertools.mjs EVENT_FILE');
  process.exit(2);
}
const payload = readFileSync(file, 'utf8');
const messages = JSON.parse(payload).Records.length;

const processor = new BatchProcessor(EventType.SQS);
const recordHandler = async (_record) => {};
const context = {
  functionName: 'peer-benchmark',
  awsRequestId: '00000000-0000-4000-8000-000000000000',
  getRemainingTimeInMillis: () => 900000,
};

// invoke is one Lambda invocation: decode, process, encode the response.
async function invoke() {
  const event = JSON.parse(payload);
  const response = await processPartialResponse(event, recordHandler, processor, { context });
  return JSON.stringify(response);
}

async function round(n) {
  let failures = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    const out = await invoke();
    if (out !== '{"batchItemFailures":[]}') failures++;
  }
  const ns = Number(process.hrtime.bigint() - start);
  return { iterations: n, messages, ns, failures };
}

// The package does not export its package.json: find it above its entry point.
let dir = dirname(fileURLToPath(import.meta.resolve('@aws-lambda-powertools/batch')));
while (!dir.endsWith(join('@aws-lambda-powertools', 'batch'))) {
  if (dirname(dir) === dir) throw new Error('cannot find the package.json of @aws-lambda-powertools/batch');
  dir = dirname(dir);
}
const { version } = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
process.stdout.write(`${JSON.stringify({ node: process.version, powertools: version, messages })}\n`);

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const m = /^round (\d+)$/.exec(line.trim());
  if (!m) {
    console.error(`powertools.mjs: unknown command ${JSON.stringify(line)}`);
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify(await round(Number(m[1])))}\n`);
}
