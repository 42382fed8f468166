// Package samtemplate reads SAM and CloudFormation templates for klt's commands: the YAML
// loader (LoadYAML, with its caps), the template of "klt filter" (ParseTemplate), that of
// "klt invoke", "klt env-vars" and "klt local" (ReadInvokeTemplate) with its evaluator of
// intrinsic functions, the mappings of "klt local" (LocalMappings), and the JSON value of a
// template that "klt lint" checks (TemplateValue).
//
// It holds the code moved as it was from klt's main package; the one template model of
// internal/template replaces it.
package samtemplate
