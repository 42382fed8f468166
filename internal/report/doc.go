// Package report shows what klt local measures: a live progress display while load runs
// through the emulated event source mappings, and, at the end, a report in three forms.
//
// A run uses three parts, each fed by functions the caller owns:
//
//   - [Progress] samples the mappings' counters ([esm.Snapshot], through a func returning
//     []MappingStatus) and writes one line per mapping: records in, in flight, done, failed,
//     filtered, lag and the rate of the last second. On a terminal it redraws its block in place
//     every 250 ms; anywhere else (a file, a pipe, CI logs) it prints plain lines, a block every
//     2 s, with no escape codes.
//   - [Recorder] samples the same counters into time series: records done per second for each
//     function (throughput over time) and lag for each partition.
//   - [Report] is what the run found: per pipeline its throughput, latency percentiles and the
//     correctness counts (lost, applied twice, order violations), the speedup of one pipeline
//     over another, where each injected fault went, the mappings' totals and the series. Its
//     JSON form (report.json) is the contract scripts and tests read; [Report.Write] also writes
//     report.html, one self-contained page with inline CSS and SVG charts (nothing fetched from
//     the network), and report.svg, the same charts and key figures as one picture.
//     [Report.Text] prints the summary for a terminal.
//
// A typical run:
//
//	p, err := report.NewProgress(os.Stdout, statuses)
//	rec, err := report.NewRecorder(statuses, report.WithPartitionLag(lags))
//	...
//	p.Start()
//	rec.Start()
//	// ... produce and wait ...
//	rec.Stop()
//	p.Stop() // prints the final block
//	r := report.Report{Tool: "klt local", Machine: report.ThisMachine(), Series: rec.Series(), ...}
//	err = r.Write("report")
//	err = r.Text(os.Stdout)
package report
