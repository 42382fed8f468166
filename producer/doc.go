// Package producer produces to Apache Kafka from AWS Lambda: franz-go's kgo configured for
// Amazon MSK (IAM, SCRAM, TLS) or a local broker, [Produce], which waits for every record
// within the invocation's deadline and says which ones failed, and [ProduceOnce], which
// produces a transform's outputs once per input record.
//
// The package does not wrap kgo. [Opts] returns kgo options and [NewClient] a *kgo.Client, so
// every kgo option and method stays available ([WithClientOptions] adds your own).
//
// # The Lambda pattern
//
// Make the client once per execution environment, outside the handler: connecting and
// authenticating then happen on the cold start only, and the client's connections and
// metadata survive between invocations (Lambda freezes the process in between). Call
// [Produce] in the handler: it returns only when every record is acknowledged or has failed,
// so nothing is left in a buffer when the handler returns and the environment is frozen.
//
//	var client *kgo.Client
//
//	func main() {
//		cfg, err := config.LoadDefaultConfig(context.Background())
//		if err != nil {
//			log.Fatal(err)
//		}
//		// Bootstrap servers from $KAFKA_BOOTSTRAP_SERVERS; the region from their host names.
//		client, err = producer.NewClient(producer.WithIAM(cfg.Credentials))
//		if err != nil {
//			log.Fatal(err)
//		}
//		lambda.Start(handle)
//	}
//
//	func handle(ctx context.Context, in Input) error {
//		results := producer.Produce(ctx, client, &kgo.Record{Topic: "orders", Key: in.Key, Value: in.Value})
//		return results.Err() // or report each failed result as a batch item failure
//	}
//
// # Connecting
//
// Bootstrap servers come from [WithBootstrapServers], else $KAFKA_BOOTSTRAP_SERVERS
// (host:port, comma-separated, as in an event's BootstrapServers). Authentication comes from
// an option, else from $KAFKA_AUTH, so that one binary runs against MSK and against a local
// broker:
//
//	option           KAFKA_AUTH   wire                           for
//	WithIAM          iam          SASL/OAUTHBEARER over TLS      MSK IAM access control (port 9098)
//	WithSCRAMSecret  scram        SASL/SCRAM-SHA-512 over TLS    MSK SCRAM (9096), self-managed
//	WithTLSConfig    tls          TLS, no SASL                   MSK TLS or mutual TLS (9094)
//	WithPlaintext    plaintext    no TLS, no SASL                local brokers, kfake
//
// With KAFKA_AUTH=iam the credentials are the default AWS chain's (a Lambda function's role).
// With KAFKA_AUTH=scram the user and password are those of the Secrets Manager secret
// $KAFKA_SCRAM_SECRET_ARN names, read with the default AWS configuration. With neither an
// option nor KAFKA_AUTH, [Opts] fails: no authentication is ever guessed. TLS is on unless
// plaintext is chosen. ([WithSCRAM] takes a user and password the caller already holds, as
// a command line tool does.)
//
// # Secrets
//
// A SCRAM password never goes in an environment variable: whoever may read the function's
// configuration (lambda:GetFunctionConfiguration) reads its variables too, and a template's
// {{resolve:secretsmanager:...}} in Environment puts the password there. Pass the secret's
// ARN instead; the producer reads the secret itself, once, when the client is made:
//
//	sm := secretsmanager.NewFromConfig(cfg)
//	client, err := producer.NewClient(producer.WithSCRAMSecret(sm, os.Getenv("KAFKA_SCRAM_SECRET_ARN")))
//
// The secret is the one a self-managed event source mapping's SASL_SCRAM_512_AUTH names, the
// JSON text {"username": "...", "password": "..."}, so the mapping and the function share it.
// The function's role needs secretsmanager:GetSecretValue on that ARN alone, and kms:Decrypt
// on the key only if a customer managed key encrypts the secret (the AWS managed key
// aws/secretsmanager needs no grant). A secret that is missing, unreadable or not of that
// form fails [NewClient]: the function fails its start and takes no events, rather than
// failing every batch. The credentials are kept for the execution environment; when the
// broker refuses them after accepting them before (the secret was rotated), the secret is
// read again for the next connection, within the same [Produce]. The reading is that of the
// Secrets Manager provider of package parameters (parameters/secrets, [secrets.API] is the
// client it takes): the same size cap, error wrapping (a missing secret matches
// parameters.ErrNotFound) and SDK-error scrubbing as a function's own secrets, and a function
// that reads its other secrets through it links that code once.
//
// MSK IAM tokens are made by aws-msk-iam-sasl-signer-go
// (GenerateAuthTokenFromCredentialsProvider) each time kgo authenticates a connection: on
// every new connection and on every re-authentication the broker asks for before its session
// runs out (KIP-368). A token lives 15 minutes and the credentials behind it rotate; making
// one per authentication keeps both current. The region is [WithRegion]'s, else the one in
// the brokers' host names (b-1.name.id.c2.kafka.<region>.amazonaws.com, serverless
// ...kafka-serverless.<region>...), else $AWS_REGION.
//
// Configuration errors are *toolkit.OptionError values (matching toolkit.ErrInvalidOption)
// whose Option names the option or variable at fault.
//
// # Producer defaults
//
// After the connection options, [Opts] sets, and documents here, what an operator expects:
//
//   - Acks from all in-sync replicas, with the idempotent producer (kgo's default with those
//     acks): a retried batch is written once, in order.
//   - Keyed records go to the partition the Java client picks: murmur2 of the key, its sign
//     bit cleared, modulo the topic's partition count (an empty key is a key; only a nil key
//     is none). Records without a key follow the Java client's uniform sticky partitioner
//     (KIP-794, Kafka 3.3 and later): one partition until 64 KiB are produced to it, then
//     another, leaning away from partitions with a backlog. This is
//     kgo.UniformBytesPartitioner with murmur2.
//   - zstd compression (none if a broker is older than Kafka 2.1). On JSON records a batch
//     shrinks to about a third of what snappy (kgo's default) or lz4 leave (5% of the raw
//     size against 15%, BenchmarkCompression), for about 0.2 µs of CPU per record. From
//     Lambda, what the bytes cost outweighs that: MSK Serverless bills every GB in and out,
//     provisioned MSK bills storage and is sized by broker disk and network, and traffic
//     between availability zones is billed per GB, while the compression time is small
//     beside a produce round trip. The encoder kgo keeps is small (a 64 KiB window, one
//     goroutine), which matters in a 128 MB function.
//   - No kgo delivery timeout, which kgo counts from each record's Timestamp and which would
//     fail at once a record that keeps an old one (a copied or replayed record); Produce
//     bounds its own wait instead: the context's deadline, or NoDeadlineWait (2 minutes, the
//     Java client's delivery.timeout.ms) without one.
//
// Each can be changed with [WithClientOptions] (for example kgo.ProducerBatchCompression).
//
// # Deadlines and results
//
// [Produce] returns at the latest at the context's deadline less a margin (a tenth of the
// time left, at most [MaxDeadlineMargin]), so a handler still has time to answer. It returns
// one [Result] per record, in order. A record that was not acknowledged by then fails with an
// error that matches [ErrNotAcknowledged]: its outcome is unknown (it may still be written),
// so report it failed and let the retry, which downstream idempotency makes harmless, settle
// it. When a connection fails in a way that retrying will not fix (authentication refused,
// a certificate that is not trusted), Produce does not wait for the deadline: the records
// still waiting fail with that error at once.
//
// # Tracing
//
// The tracing adapters (packages oteltrace and xraytrace) are kgo hooks that write the trace
// context of each record's Context into its headers: add them with
// WithClientOptions(kgo.WithHooks(hook)) (for X-Ray, xraytrace.NewProducerHook()). Produce
// sets a record's Context to the caller's ctx when it is nil, so the producer's span is the
// handler's.
//
// # Consume, transform, produce
//
// A function that produces records while handling Kafka records cannot commit its input
// offsets with its output in one Kafka transaction: the event source mapping owns the
// offsets. [ProduceOnce] is the safe path instead: it writes the input's identity into each
// output's header [SourceHeader] and produces under an idempotency key made of that identity,
// and a downstream batch.WithIdempotencyKey([SourceKey]) applies each output once, even when
// a retried transform wrote it twice. ProduceOnce's documentation gives the window that
// remains, and why. It takes any idempotency.Store (package idempotency is the engine alone),
// so a function that only produces links no DynamoDB client.
package producer
