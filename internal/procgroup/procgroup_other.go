//go:build !unix

package procgroup

import "os/exec"

// Set does nothing: there are no process groups.
func Set(*exec.Cmd) {}

// Terminate kills cmd's process: there is no SIGTERM to send.
func Terminate(cmd *exec.Cmd) { Kill(cmd) }

// Kill kills cmd's process.
func Kill(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}

// KillGroup does nothing: there is no group.
func KillGroup(*exec.Cmd) {}
