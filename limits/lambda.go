package limits

// Lambda's limits on one synchronous invocation, which every event source mapping makes.

// MaxLambdaPayloadBytes is the largest event (request payload) of a synchronous invocation,
// 6 MB as Lambda counts it: 6 MiB, 6,291,456 bytes. An event source mapping stops a batch
// before its event would exceed it. AWS: "6 MB each for request and response (synchronous)"
// (https://docs.aws.amazon.com/lambda/latest/dg/gettingstarted-limits.html, "Invocation
// payload (request and response)").
const MaxLambdaPayloadBytes = 6 << 20

// MaxLambdaResponseBytes is the largest response a function may return to a synchronous
// invocation, in bytes. AWS: "For synchronous invocations, the maximum payload size is 6 MB"
// (https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html); Lambda counts a response's
// 6 MB as 6 MiB plus 100 bytes, the MaxPayloadSize of AWS's runtime interface emulator
// (https://github.com/aws/aws-lambda-runtime-interface-emulator), and fails a larger one as
// "Function.ResponseSizeTooLarge".
const MaxLambdaResponseBytes = 6<<20 + 100
