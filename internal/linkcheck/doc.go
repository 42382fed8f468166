// Package linkcheck holds no code: its tests build minimal Lambda functions (in testdata/) the
// way `sam build` would and check what importing the toolkit links into them: binary sizes
// for linux/arm64, the packages linked (no tracing SDK, gRPC or fasthttp behind package
// batch; no Kafka client code behind batch or oteltrace; no AWS Glue client behind codec), and
// what package initialisation does at start-up.
//
// To print the sizes:
//
//	go test -count=1 -v -run TestBinarySizes ./internal/linkcheck
package linkcheck
