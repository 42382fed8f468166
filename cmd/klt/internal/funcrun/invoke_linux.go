//go:build linux

package funcrun

import (
	"os/exec"
	"syscall"
)

// setProcessGroup puts the emulator (and the function it starts) in a process group of its own,
// killed with klt if klt dies first.
func setProcessGroup(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killProcessGroup kills the emulator's process group: the emulator and the function.
func killProcessGroup(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
