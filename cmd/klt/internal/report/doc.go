// Package report shows what klt local measures: a live progress display while records run
// through the emulated event source mappings, and, at the end (or on Ctrl-C), a report in
// three forms that says what happened to every record, as klt observed it.
//
// A run uses three parts, each fed by functions the caller owns:
//
//   - [Progress] samples the mappings' counters ([esm.Snapshot], counted per record as each
//     response arrives, through a func returning []MappingStatus) and writes one line per
//     mapping: delivered, succeeded, in flight, lag, the records succeeded per second, the
//     side effects the caller observed per second, and, once any is not 0, reported failed,
//     error failed, retried, dead-lettered, filtered and the function's failure queue. It
//     writes only when a figure changed: on a terminal it redraws its block in place (at most
//     every 250 ms); anywhere else (a file, a pipe, CI logs) it prints plain lines, at most a
//     block every 2 s, with no escape codes. An idle stack prints nothing.
//   - [Recorder] samples the same counters into time series over every phase of the run,
//     each phase marked ([Recorder.Phase]): records succeeded per second and side effects
//     observed per second for each function, and lag (records not yet delivered) for each
//     partition.
//   - [Report] is what the run found: per pipeline its records, throughput, latency, each
//     record's fate, what klt could and could not observe, its side effects per resource and
//     the correctness counts (lost, applied twice, order violations), each a [Count]: observed,
//     or UNOBSERVABLE, never 0 by default; the speedup of one pipeline over another; where
//     each injected fault and each record not simply succeeded once went; every message read
//     on a failure queue, an on-failure destination or a dead-letter queue; the mappings'
//     totals and their MetricsConfig figures as CloudWatch would show them; the series. Its
//     JSON form (report.json) is the contract scripts and tests read; [Report.Write] also
//     writes report.html, one self-contained page with inline CSS and SVG charts (nothing
//     fetched from the network), and report.svg, the same charts and key figures as one
//     picture. [Report.Text] prints it for a terminal, [Report.Summary] the short account to
//     print on Ctrl-C. Each counter is defined in the report itself: a legend of one line per
//     counter ([MappingDefinitions], [PipelineDefinitions]).
//
// What the report says of each record and pipeline it reads from klt local's ledger (package
// ledger), in one place (ledger.go): [Report.AddPipeline] takes a pipeline's account (its
// figures, the records not simply applied once, the messages of its failure queues),
// [Report.AddFailedMessages] the failure queues' messages of a served stack, and [LoadOf]
// measures a mapping's load from the invocations the ledger holds.
//
// [Report.Validate] (called by every form) refuses a report that contradicts itself: a
// mapping whose counters do not add up, a pipeline whose fates do not sum to its records or
// disagree with its counts or its mappings', a record reaching a failure queue with no
// delivery, a count left unobservable with no word on why.
//
// A typical run:
//
//	p, err := report.NewProgress(os.Stdout, statuses)
//	rec, err := report.NewRecorder(statuses, report.WithPartitionLag(lags))
//	...
//	p.Start()
//	rec.Start()
//	rec.Phase("direct")
//	// ... produce and wait ...
//	rec.Phase("faults")
//	// ... produce and wait ...
//	rec.Stop()
//	p.Stop() // prints the final block
//	r := report.Report{Tool: "klt local", Machine: report.ThisMachine(), Series: rec.Series(), ...}
//	err = r.Write("report")
//	err = r.Text(os.Stdout)
//
// On Ctrl-C, the caller sets Interrupted, fills what it has and prints [Report.Summary].
package report
