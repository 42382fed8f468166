// Package samtemplate is what klt filter and klt lint read of a SAM or CloudFormation
// template, over the one template model of internal/template (which reads the text and
// evaluates intrinsic functions): the FilterCriteria of each event source mapping
// (ParseTemplate, SamTemplate). The template as a stack to run locally is package
// internal/samspec.
package samtemplate
