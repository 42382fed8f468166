// Package samstack reads a SAM or CloudFormation template as a stack to run on this machine:
// its functions (ReadInvokeTemplate, FunctionSpec), tables and queues, the local values of
// their resources (Resolver: a queue's Ref is its local URL, a parameter its override or
// Default), and the Kafka and SQS event source mappings (LocalMappings, MappingSpec) that klt
// local and package esm/esmtest run. It reads the template through the one template model of
// internal/template.
package samspec
