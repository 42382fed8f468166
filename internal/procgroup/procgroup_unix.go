//go:build unix

package procgroup

import (
	"os/exec"
	"syscall"
)

// Terminate sends SIGTERM to cmd's process group, asking it to stop.
func Terminate(cmd *exec.Cmd) { signal(cmd, syscall.SIGTERM) }

// Kill sends SIGKILL to cmd's process group, then to cmd's process itself in case the group
// signal could not be sent (Set was not called, or the process left its group).
func Kill(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	signal(cmd, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}

// KillGroup sends SIGKILL to what is left of cmd's process group after its leader was reaped.
func KillGroup(cmd *exec.Cmd) { signal(cmd, syscall.SIGKILL) }

// signal sends sig to the process group led by cmd's process.
func signal(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}
