// Package stackrun runs a SAM stack on this machine for "klt local": Kafka (kfake), DynamoDB
// (dynalite) and SQS (local-aws-sqs) with the template's tables, queues and topics; each
// function an event source mapping invokes, built as sam build builds it and run under the
// Lambda Runtime API; the mappings themselves, emulated by package esm.
//
// Nothing of a stack's domain is here. Served (no records), the stack runs until Ctrl-C and
// prints a summary. With records of the user's (--records, or --generate from a template of a
// record), it runs each pipeline in a phase of its own (run_phase.go), injects the faults named
// against a record or a server (fault_*.go), and follows every record through what it
// observes (observe*.go, sink_*.go: the mappings' events, the fault proxies in front of the
// local servers, the failure-queue lister, the output topics, the HTTP sink) into a
// ledger.Ledger (package ledger, the model: facts only, and the accounting that tells each
// record's fate); package report reads its pipelines, records, failed messages and load
// figures from the ledger (report.AddPipeline, report.LoadOf).
package stackrun
