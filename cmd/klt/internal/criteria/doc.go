// Package criteria is FilterCriteria as klt reads them and the events they are tested on.
//
// A Spec is one FilterCriteria from a file of JSON, a single pattern, or an event source of a
// SAM template; Spec.Compile compiles it with package filter's engine and reports every problem
// as Lambda would. EngineFlags are the flags that choose the engine's rules. ReadTestEvent
// reads a Kafka or SQS event into records in the order a function sees them.
package criteria
