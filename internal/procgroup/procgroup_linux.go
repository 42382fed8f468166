//go:build linux

package procgroup

import (
	"os/exec"
	"syscall"
)

// Set makes cmd's process lead a new process group, killed with SIGKILL by the kernel if the
// calling process dies first. Call it before cmd.Start; it replaces cmd.SysProcAttr.
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
