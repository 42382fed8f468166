// Package metrics writes a Lambda function's own metrics in CloudWatch's Embedded Metric
// Format (EMF): JSON lines on standard output that CloudWatch Logs turns into metrics, with no
// API call and no client to link. It is Powertools for AWS Lambda's Metrics utility in Go's
// idiom, and writes the same documents, so that one dashboard reads the Go, Python and
// TypeScript functions of a team alike.
//
// # One Metrics per function, one recorder per invocation
//
// Make a Metrics at init: the namespace, the service dimension and the dimensions every
// metric carries. Wrap the handler with Handle (or Wrap, for a lambda.Handler): each
// invocation gets a recorder of its own in its context, and its metrics are written when the
// handler returns.
//
//	var m, err = metrics.New(metrics.WithNamespace("Orders"), metrics.WithService("checkout"))
//
//	func handler(ctx context.Context, e Event) (Response, error) {
//		metrics.Add(ctx, "OrdersPlaced", metrics.Count, 1)
//		metrics.Add(ctx, "BasketValue", metrics.None, e.Total)
//		...
//	}
//
//	lambda.Start(metrics.Handle(m, handler))
//
// Nothing of an invocation lives in a process global: on Lambda Managed Instances one process
// serves several invocations at once, and each writes its own metrics, with its own request
// ID (the metadata member function_request_id) in every document.
//
// # What a document holds
//
//   - Metrics: Add and AddWithResolution, in a CloudWatch unit (Count, Milliseconds, ...). A
//     name added again gets another value. Values are written as an array, even one, as
//     Powertools for Python writes them, so a field has one JSON type in every document.
//     High resolution is StorageResolution 1.
//   - Dimensions: the service (WithService or POWERTOOLS_SERVICE_NAME, as the dimension
//     "service"), WithDefaultDimensions, and AddDimension for this invocation; all of them in
//     one dimension set. AddDimensionSet publishes every metric once more under another set.
//   - Metadata: AddMetadata, members of the document that are neither metrics nor
//     dimensions: searchable in CloudWatch Logs Insights, free of metric charges.
//   - ColdStart: the execution environment's first invocation writes a ColdStart metric
//     (Count 1) in a document of its own, with the function_name and service dimensions, as
//     Powertools does (WithColdStartMetric(false) to leave it out).
//
// # Refused at the call, never dropped by CloudWatch
//
// CloudWatch drops a whole document it cannot read, and says so only in a metric of its own.
// So everything it would refuse is refused where it is added, with an *InvalidError (matching
// ErrInvalid): a unit it does not list, a resolution other than 1 or 60, a name that is empty
// or too long, a value that is NaN or infinite, a 31st dimension, a name used twice for
// different things. Options are checked by New (*toolkit.OptionError). An invocation holds at
// most 100,000 values between flushes, and 64 KiB of metadata.
//
// The limits of one document (MaxMetrics metrics, MaxValues values of a metric) are kept by
// splitting: Flush writes as many documents as it takes, each a line of its own, and each with
// every dimension and metadata member, so that each is valid alone.
//
// # Environment
//
// The variables are Powertools', with its meaning: POWERTOOLS_METRICS_NAMESPACE,
// POWERTOOLS_SERVICE_NAME, POWERTOOLS_METRICS_DISABLED (documents are built and checked, not
// written; POWERTOOLS_DEV=true disables too when it is unset), POWERTOOLS_METRICS_FUNCTION_NAME
// (the ColdStart metric's function_name). An option given to New wins over its variable.
//
// # Writing
//
// Documents go to standard output, one line each, written one at a time across every Metrics
// of the process, so no two lines interleave; WithOutput sends them elsewhere. This package is
// the toolkit's one EMF writer: package batch (batch.WithMetrics) and package fanout write
// their document of each batch through a Metrics of their own (no service dimension, no
// ColdStart), with a recorder of its own beside the function's (see Metrics.Start). A write that fails is returned by Flush, and by
// the wrapped handler, joined to its own error: an invocation whose metrics were lost fails.
package metrics
