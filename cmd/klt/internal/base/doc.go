// Package base holds what every klt command shares, written once: the Command type of the
// command table in klt's main package (each command package exports one), flag parsing that
// lets flags and arguments mix (WithFlags makes a command's Run from its flags and its run
// function, so no command repeats the opening), usage errors and "klt: " messages, the exit
// codes and the version line.
//
// It is the command layer: only command packages import it. The engines they run take what
// they need as parameters and return errors; what both share (the capped reader of files and
// standard input, the wording of messages) is below them, in packages input and clitext.
//
// Exit codes are ExitOK (0), ExitFail (1: bad input, a failed read or write, a cluster that
// cannot be reached) and ExitUsage (2: a wrong command line). A command reports a mistake on
// its command line with UsageError and anything else with Errorf; both make the message one
// line of printable text, so input quoted in it never reaches the terminal raw.
package base
