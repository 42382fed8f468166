// Package template reads SAM and CloudFormation templates, YAML or JSON, for every part of the
// toolkit that looks into one: klt lint, klt filter lint and filter test, klt invoke and
// env-vars, klt local, and the tests of the repository's own template.yaml. It is the one
// package that imports the YAML library.
//
// # Reading
//
// Read (or ReadFile) parses the text once into a tree of *Node, each with the Pos (FILE:LINE:COL)
// it was written at, and refuses, naming the place, what CloudFormation would refuse or what
// would cost more than the text suggests: a key given twice in a mapping, a tag that is not
// one of CloudFormation's short forms, and YAML aliases that expand a small file past MaxNodes
// nodes, MaxText bytes or MaxDepth levels (a "billion laughs" of 754 bytes is refused in
// microseconds). The input is at most MaxSize bytes, CloudFormation's own limit.
//
// Short forms are normalised as CloudFormation reads them: !Ref X is the mapping {Ref: X},
// !GetAtt A.B is {Fn::GetAtt: [A, B]}, !Sub s is {Fn::Sub: s}, so a reader meets one form only
// (Node.Intrinsic recognises it). Aliases are shared nodes; a reader never meets one.
//
// The Template gives the sections as typed values: Parameters (Type, Default, AllowedValues),
// Conditions, Mappings, SAM's Globals, Resources in file order (LogicalID, Type, Properties,
// Condition, DependsOn) and, for a SAM function, its Events as typed event sources (Name, Type,
// Properties). Template.Property and Template.Environment apply SAM's Globals the way SAM does.
//
// # Values
//
// A Node is read as it is written (Node.Get, Node.Lookup, Node.String), turned into plain Go
// values for a JSON schema (Node.Plain: map[string]any, []any, string, float64, bool, nil, with
// intrinsic functions in their long form), or into JSON text with its key order kept
// (Node.AppendJSON, for a filter pattern written as a mapping).
//
// # Evaluating
//
// An Evaluator evaluates the intrinsic functions of a value: Ref, Fn::GetAtt, Fn::Sub,
// Fn::Join, Fn::Select, Fn::Split, Fn::If, Fn::FindInMap, Fn::Base64 and the conditions. What a
// resource stands for depends on who asks, so the caller says it through the Resources hook:
// lint knows only types, klt invoke has local table names and queue URLs, klt local ARNs too.
// The evaluator is total: every input gives a value or an *Error naming FILE:LINE:COL, and a
// value that cannot be known from the template (Fn::ImportValue, a parameter without a value)
// is an error errors.Is finds ErrUnknown in, so that a checker can say "cannot check" rather
// than pass or fail it. Refs lists what a value refers to without evaluating it.
//
// Reader and evaluator are fuzzed (FuzzRead, FuzzEval).
package template
