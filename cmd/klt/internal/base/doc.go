// Package base holds what every klt command shares, written once: the Command type of the
// command table in klt's main package, flag parsing that lets flags and arguments mix, usage
// errors and one-line messages, the exit codes, and the one capped reader of files and
// standard input.
//
// Exit codes are ExitOK (0), ExitFail (1: bad input, a failed read or write, a cluster that
// cannot be reached) and ExitUsage (2: a wrong command line). A command reports a mistake on
// its command line with UsageError and anything else with Errorf; both make the message one
// line of printable text, so input quoted in it never reaches the terminal raw.
//
// Every input klt reads has a cap (EventLimit, TemplateLimit, LinesLimit ...), each stated with
// the reason for its number; ReadInput and ReadFileCapped stop one byte past it with a
// *TooLargeError.
package base
