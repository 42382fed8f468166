// Package idemcore is package idempotency without its DynamoDB store: Do, its options, the
// Entry and Store types, the formats of Powertools' records and the errors. Package
// idempotency gives each of these its public name (type aliases, constants and variables of
// the same values, functions that call these), and documents them there.
//
// It is a package of its own for the size of every function that uses package batch: batch
// imports this package, under the name idempotency, rather than package idempotency, which
// imports the aws-sdk-go-v2 DynamoDB client. The linker keeps the package initialisation of
// every imported package, used or not, and the DynamoDB client's (its service schemas and
// endpoint tables) adds 0.6 MB to a linux/arm64 binary: a function that uses batch without
// idempotency does not carry it, and one that makes a DynamoDBStore imports idempotency
// and does. internal/linkcheck measures it.
package idemcore
