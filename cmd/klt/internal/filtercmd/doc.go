// Package filtercmd is the commands "klt filter test" (which records of an event pass
// FilterCriteria, and why the others do not) and "klt filter lint" (FilterCriteria checked as
// Lambda checks them). It is named filtercmd, as cmd/go names envcmd, beside the library
// package filter whose engine it runs; the FilterCriteria sources are package criteria's.
package filtercmd
