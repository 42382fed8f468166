// Package samspec is an engine of klt and of package esmtest: it reads a SAM or CloudFormation
// template as a stack to run on this machine. A test that runs a handler behind a template's
// mapping uses esmtest.ReadMapping; this package's API is what klt local, klt invoke and
// esmtest need, and nothing more.
//
// It gives the template's functions (ReadInvokeTemplate, FunctionSpec), tables and queues, the
// local values of their resources (Resolver: a queue's Ref is its local URL, a parameter its
// override or Default), and the Kafka and SQS event source mappings (LocalMappings,
// MappingSpec) with the esm options their properties imply (MappingSpec.KafkaOptions and
// SQSOptions), so that a mapping behaves the same in klt local and in esmtest. It reads the
// template through the one template model of internal/template.
package samspec
