// Package invoke is the command "klt invoke": it runs one function of a SAM template with an
// event, as sam local invoke does, without Docker; package funcrun builds and runs it.
package invoke
