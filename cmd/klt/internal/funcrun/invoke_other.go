//go:build !linux

package funcrun

import "os/exec"

// setProcessGroup does nothing: klt invoke refuses to run outside Linux.
func setProcessGroup(*exec.Cmd) {}

// killProcessGroup kills the emulator.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
