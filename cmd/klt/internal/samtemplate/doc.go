// Package samtemplate is what klt's commands read of a SAM or CloudFormation template, over
// the one template model of internal/template (which reads the text and evaluates intrinsic
// functions): the FilterCriteria of "klt filter" and "klt lint" (ParseTemplate, SamTemplate),
// the functions, tables and queues of "klt invoke", "klt env-vars" and "klt local"
// (ReadInvokeTemplate) with the local values of their resources (Resolver), and the event
// source mappings "klt local" runs (LocalMappings).
package samtemplate
