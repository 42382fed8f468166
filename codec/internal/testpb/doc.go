// Package testpb holds the Protobuf messages of package codec's tests, generated from
// test.proto by ./gen (protocompile and protoc-gen-go's generator, so that no protoc is needed).
package testpb

//go:generate go run ./gen test.proto
