// Package linkcheck holds no code: its tests build minimal Lambda functions (in testdata/) the
// way `sam build` would and check what importing the toolkit links into them: binary sizes
// for linux/arm64, the packages linked (no tracing SDK, gRPC, fasthttp or AWS service client
// behind package batch; no Kafka client code behind batch or oteltrace; no AWS Glue client
// behind codec; no SSM or AppConfig code behind the producer and parameters/secrets), and what
// package initialisation does at start-up.
//
// To print the sizes:
//
//	go test -count=1 -v -run 'TestBinarySizes|TestSecretsProviderSize' ./internal/linkcheck
//
// To measure a cold start with Valgrind's callgrind (instructions from process start to the
// first GET /next under a fake Runtime API, against a bare aws-lambda-go function):
//
//	go test -count=1 -v -run TestColdStart ./internal/linkcheck -coldstart
package linkcheck
