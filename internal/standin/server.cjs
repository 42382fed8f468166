// Starts local-aws-sqs (an SQS API server, pinned in the repository's package.json) for klt and
// the Go tests; see sqs.go. local-aws-sqs ships no command line, only createSqsServer.
//
//   node internal/standin/server.cjs [--host 127.0.0.1] [--port 0]
//
// Port 0 (the default) lets the kernel choose a free port; local-aws-sqs then uses the bound
// port in the queue URLs it returns. Once listening, it prints one line:
//
//   local-aws-sqs listening at: http://HOST:PORT
//
// Queues live in memory only. A deleted queue's name can be created again at once
// (emulateQueueCreationLifecycle false). The process exits when stdin closes, so that it
// does not outlive the test binary that started it.
"use strict";

const { createSqsServer } = require("local-aws-sqs");

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 && i + 1 < process.argv.length ? process.argv[i + 1] : def;
}

const host = arg("--host", "127.0.0.1");
const port = Number(arg("--port", "0"));
if (!Number.isInteger(port) || port < 0 || port > 65535) {
  console.error(`local-aws-sqs: bad --port ${arg("--port")}`);
  process.exit(2);
}

process.on("uncaughtException", (err) => {
  console.error(`local-aws-sqs: ${err && err.stack ? err.stack : err}`);
  process.exit(1);
});

if (process.argv.includes("--exit-on-stdin-close")) {
  process.stdin.on("end", () => process.exit(0));
  process.stdin.on("error", () => process.exit(0));
  process.stdin.resume();
}

createSqsServer({ port, hostname: host, emulateQueueCreationLifecycle: false }).then((server) => {
  const a = server.address();
  console.log(`local-aws-sqs listening at: http://${host}:${a.port}`);
});
