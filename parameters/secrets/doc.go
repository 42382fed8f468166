// Package secrets reads the current version of Secrets Manager secrets, as text, bytes or
// JSON into a type, and caches them per execution environment: the Secrets Manager provider
// of package parameters, whose options ([parameters.WithMaxAge], [parameters.WithTimeout],
// [parameters.Force]) it takes and whose [parameters.Source] it is.
//
//	keys, err := secrets.New(secretsmanager.NewFromConfig(cfg))     // once, in main
//	db, err := parameters.GetJSON[DBCredentials](ctx, keys, arn)     // in the handler
//	keys.Invalidate(arn)                                             // the database refused it: rotated
//
// It is named for what it reads, not as the SDK's package secretsmanager, which a caller
// imports beside it for the client. Importing it links the Secrets Manager client and
// little else (internal/linkcheck holds it to that); package producer reads its SCRAM secret
// through it. Package parameters says how the cache, the bounds and the errors work.
package secrets
