// Package limits holds the AWS limits the toolkit enforces, in one place, each with the AWS
// page that states it. A package that enforces one of them refers to the constant here
// rather than repeating the number, so a limit AWS raises is changed once.
//
// Limits of the toolkit's own choosing (a cap on a secret's size, a parser's depth) are not
// here: they are documented beside the option that sets them.
package limits
