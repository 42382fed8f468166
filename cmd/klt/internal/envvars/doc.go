// Package envvars is the command "klt env-vars": it starts the local servers a template's
// functions use (package funcrun) and writes a sam local invoke --env-vars file that points
// each function at them.
package envvars
