package main

import (
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// TestScripts runs the scripts in testdata/script: klt as a user runs it, one behaviour per
// script, with klt on the PATH (see TestMain) and the commands of scriptCmds (a Kafka broker).
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{Dir: "testdata/script", RequireExplicitExec: true, RequireUniqueNames: true,
		Cmds: scriptCmds})
}
