// The Node side of the Kafka peer benchmark (see main.go beside this file, which starts it):
// Powertools for AWS Lambda (TypeScript) deserializing the values of a Kafka event as a Lambda
// function of the documented shape does, once per format:
//
//   const schemaConfig = { value: { type: SchemaType.AVRO, schema: readFileSync('order.avsc', 'utf8') } };
//   export const handler = kafkaConsumer(async (event, context) => {
//     for (const { value } of event.records) { ... }
//   }, schemaConfig);
//
// with SchemaType.JSON (no schema), SchemaType.AVRO (the .avsc text, decoded by avro-js) and
// SchemaType.PROTOBUF (the message type, decoded by protobufjs: its Type for kafkapeer.Order,
// looked up in the parsed order.proto, which generates the same decoder code at run time as
// pbjs's static modules hold). Each invocation is what the Node.js runtime and the function
// do with one event: JSON.parse of the payload, then the handler, which reads every record's
// value and adds up the quantities of its items (the checksum main.go compares with its own).
//
// Usage: node powertools.mjs DIR. DIR holds json.json, avro.json and protobuf.json (the events)
// and order.avsc and order.proto (the schemas). The script reads them once and writes one JSON
// line, {"node":"v20...","powertools":"2.35.0","avro-js":"...","protobufjs":"...",
// "records":{"json":N,...}}; then it answers each line "round FORMAT N" on standard input
// with one JSON line on standard output,
// {"format":"json","iterations":N,"records":R,"ns":T,"checksum":C}, T being the time N
// invocations took and C the checksum of the last, and exits when standard input ends.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import { createInterface } from 'node:readline';
import { SchemaType, kafkaConsumer } from '@aws-lambda-powertools/kafka';
import protobuf from 'protobufjs';

const dir = process.argv[2];
if (!dir) {
  console.error('usage: node powertools.mjs DIR');
  process.exit(2);
}

const Order = protobuf.parse(readFileSync(join(dir, 'order.proto'), 'utf8')).root.lookupType('kafkapeer.Order');
const schemaConfigs = {
  json: { value: { type: SchemaType.JSON } },
  avro: { value: { type: SchemaType.AVRO, schema: readFileSync(join(dir, 'order.avsc'), 'utf8') } },
  protobuf: { value: { type: SchemaType.PROTOBUF, schema: Order } },
};

// The function's handler: every value read, its items' quantities added up.
const recordsHandler = async (event, _context) => {
  let checksum = 0;
  for (const { value } of event.records) {
    for (const item of value.items) checksum += item.quantity;
  }
  return checksum;
};

const context = {
  functionName: 'peer-benchmark',
  awsRequestId: '00000000-0000-4000-8000-000000000000',
  getRemainingTimeInMillis: () => 840000,
};

const formats = {};
for (const [format, config] of Object.entries(schemaConfigs)) {
  const payload = readFileSync(join(dir, `${format}.json`), 'utf8');
  const event = JSON.parse(payload);
  let records = 0;
  for (const rs of Object.values(event.records)) records += rs.length;
  formats[format] = { payload, records, handler: kafkaConsumer(recordsHandler, config) };
}

// invoke is one Lambda invocation of the format's function.
async function invoke(f) {
  const event = JSON.parse(f.payload);
  return f.handler(event, context);
}

async function round(format, n) {
  const f = formats[format];
  if (!f) throw new Error(`unknown format ${JSON.stringify(format)}`);
  let checksum = 0;
  const start = process.hrtime.bigint();
  for (let i = 0; i < n; i++) {
    checksum = await invoke(f);
  }
  const ns = Number(process.hrtime.bigint() - start);
  return { format, iterations: n, records: f.records, ns, checksum };
}

// version returns the version of an installed package, from the package.json above its entry
// point (the packages do not all export it).
function version(pkg) {
  let d = dirname(fileURLToPath(import.meta.resolve(pkg)));
  while (!d.endsWith(join('node_modules', pkg))) {
    if (dirname(d) === d) throw new Error(`cannot find the package.json of ${pkg}`);
    d = dirname(d);
  }
  return JSON.parse(readFileSync(join(d, 'package.json'), 'utf8')).version;
}

const records = Object.fromEntries(Object.entries(formats).map(([k, f]) => [k, f.records]));
process.stdout.write(`${JSON.stringify({
  node: process.version,
  powertools: version('@aws-lambda-powertools/kafka'),
  'avro-js': version('avro-js'),
  protobufjs: version('protobufjs'),
  records,
})}\n`);

const lines = createInterface({ input: process.stdin });
for await (const line of lines) {
  const m = /^round (\w+) (\d+)$/.exec(line.trim());
  if (!m) {
    console.error(`powertools.mjs: unknown command ${JSON.stringify(line)}`);
    process.exit(2);
  }
  process.stdout.write(`${JSON.stringify(await round(m[1], Number(m[2])))}\n`);
}
