// Package appconfig reads the configuration profiles of an AppConfig application and
// environment, and caches them per execution environment: the AppConfig provider of package
// parameters, whose options ([parameters.WithMaxAge], [parameters.WithTimeout],
// [parameters.Force]) it takes and whose [parameters.Source] it is.
//
//	flags, err := appconfig.New(appconfig.NewClient(cfg, ""), "orders", "prod") // once, in main
//	f, err := parameters.GetJSON[Flags](ctx, flags, "features")                // in the handler
//
// It reads through the AppConfig Data API, the one AWS asks clients to use (AppConfig's
// GetConfiguration is deprecated): one session per configuration profile, its token kept
// between calls, and no call sooner than the poll interval AppConfig gives (the value held is
// served until then). [Client] speaks that API itself, signed with the aws.Config's
// credentials and retried by its retryer, so that a function needs no AppConfig SDK module;
// [API] is what [New] takes, for an adapter over the SDK's appconfigdata client.
//
// The package is named for the service; the SDK's package of the same name is AppConfig's
// control plane, which a function reading its configuration does not import. Package
// parameters says how the cache, the bounds and the errors work.
package appconfig
