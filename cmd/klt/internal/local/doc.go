// Package local is the command "klt local": it runs a SAM stack on this machine, event
// source mappings included, with package stackrun.
package local
