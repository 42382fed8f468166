// Package testpb holds the Protobuf messages of package codec's tests, generated from
// test.proto by tools/protogen (protocompile and protoc-gen-go's generator, so that no protoc is needed).
package testpb

//go:generate env GOWORK=off go run -C ../../../tools ./protogen -dir ../codec/internal/testpb test.proto
