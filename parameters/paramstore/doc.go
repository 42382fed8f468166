// Package paramstore reads parameters of SSM Parameter Store (one by name, or every one under
// a path), decrypted, and caches them per execution environment: the SSM provider of package
// parameters, whose options ([parameters.WithMaxAge], [parameters.WithTimeout],
// [parameters.Force]) it takes and whose [parameters.Source] it is.
//
//	params, err := paramstore.New(ssm.NewFromConfig(cfg)) // once, in main
//	url, err := params.Get(ctx, "/orders/db/url")         // in the handler
//	all, err := params.GetByPath(ctx, "/orders")
//
// It is named for the service (Parameter Store), not as the SDK's package ssm, which a caller
// imports beside it for the client. Importing it links the SSM client; package parameters
// says how the cache, the bounds and the errors work.
package paramstore
