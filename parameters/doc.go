// Package parameters reads a function's configuration and secrets at run time, from SSM
// Parameter Store, Secrets Manager and AppConfig, and keeps them in a cache for the life of
// the execution environment: Powertools' Parameters utility, in Go's idiom.
//
// # A package per store
//
// Each store has a provider of its own, in a package of its own, so that a function links the
// client of the store it reads and no other:
//
//	parameters/paramstore   SSM Parameter Store   paramstore.New(*ssm.Client)
//	parameters/secrets      Secrets Manager       secrets.New(*secretsmanager.Client)
//	parameters/appconfig    AppConfig             appconfig.New(appconfig.NewClient(cfg, ""), app, env)
//
// (Named for the service's role, not as the AWS SDK's packages ssm, secretsmanager and
// appconfigdata, which a caller imports beside them.) This package holds what they share: the
// options ([WithMaxAge], [WithTimeout], [Force]), each defined once and taken by every
// provider; [Source], which every provider is; the typed getter [GetJSON]; and the errors. It
// imports no AWS service client.
//
// # One provider per store, made once
//
// Make each provider in main (or init), with the SDK client of its store, and share it: its
// cache then serves every invocation of the execution environment, and it is safe for
// concurrent use (on Lambda Managed Instances one process serves several invocations at once).
//
//	cfg, err := config.LoadDefaultConfig(ctx)
//	params, err := paramstore.New(ssm.NewFromConfig(cfg))
//	keys, err := secrets.New(secretsmanager.NewFromConfig(cfg))
//	flags, err := appconfig.New(appconfig.NewClient(cfg, ""), "orders", "prod")
//
// In the handler, ask for values by name, typed:
//
//	url, err := params.Get(ctx, "/orders/db/url")                   // a string (a SecureString decrypted)
//	all, err := params.GetByPath(ctx, "/orders")                    // every parameter under a path
//	key, err := keys.GetBinary(ctx, "orders/signing-key")           // bytes
//	db, err := parameters.GetJSON[DBCredentials](ctx, keys, "orders/db") // JSON into a type
//	f, err := parameters.GetJSON[Flags](ctx, flags, "features")     // an AppConfig profile
//
// A secret is never put in an environment variable (anyone who may read the function's
// configuration reads those): pass its name or ARN, and read it here.
//
// # The cache
//
// A value is served from the cache for its max age ([DefaultMaxAge], 5 seconds, as in
// Powertools; $POWERTOOLS_PARAMETERS_MAX_AGE or [WithMaxAge] change it), and the first Get
// after that fetches it again. Concurrent Gets of one name that miss the cache make one call
// between them. [Force] fetches now, whatever the cache holds.
//
// When a value turns out to be wrong (a database refuses the password of a secret that was
// just rotated), say so with Invalidate: the next Get of that name fetches at once, rather
// than serving the refused value for the rest of its max age.
//
//	if isAuthError(err) {
//		keys.Invalidate("orders/db") // the next invocation reads the rotated secret
//	}
//
// A failed fetch is an error, never the old value: a function that cannot read its
// configuration says so rather than running on a stale one.
//
// # Bounds
//
// Every fetch runs within the caller's context: pass the invocation's, and a store that does
// not answer ends the call by the invocation's deadline, the SDK's retries included. A context
// with no deadline gets [DefaultTimeout] ([WithTimeout] changes it). Each value is capped at
// its store's own limit, in package limits: limits.MaxSSMParameterValueBytes (8 KB, an
// advanced parameter), limits.MaxSecretsManagerSecretBytes (64 KiB) and
// limits.MaxAppConfigConfigurationBytes (2 MB); a path at paramstore.MaxPathParameters
// parameters. A larger value is an error matching [ErrTooLarge], not a truncated one.
//
// # Errors
//
// Every error of a Get is an *[Error] that names the provider ("ssm", "secretsmanager",
// "appconfig") and the name asked for, and wraps the cause: [ErrNotFound], [ErrTooLarge],
// [ErrType], the SDK's error, or the context's. No error holds the value or any part of it:
// a JSON error says where the JSON went wrong, not what it held.
//
// # Linking
//
// This package links no AWS service client. paramstore links the SSM client, secrets the
// Secrets Manager client, appconfig neither (it speaks the AppConfig Data API itself, with
// the SDK's signer); each adds to a function little more than its client
// (internal/linkcheck's TestSecretsProviderSize holds secrets to it). Package producer reads
// its SCRAM secret through parameters/secrets.
package parameters
