//go:build !unix

package lambdaemu

import "os/exec"

type signal int

const (
	sigTerm signal = iota
	sigKill
)

// setProcessGroup does nothing: without Unix process groups only the bootstrap is killed.
func setProcessGroup(*exec.Cmd) {}

// signalGroup kills the process (there is no SIGTERM to send).
func signalGroup(cmd *exec.Cmd, _ signal) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// killGroupOnly does nothing: there is no group.
func killGroupOnly(*exec.Cmd) {}
