// Package lint is the command "klt lint": it checks a SAM template with package samlint and
// prints the problems.
package lint
