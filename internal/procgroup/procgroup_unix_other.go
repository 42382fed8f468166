//go:build unix && !linux

package procgroup

import (
	"os/exec"
	"syscall"
)

// Set makes cmd's process lead a new process group. Call it before cmd.Start; it replaces
// cmd.SysProcAttr. (Only Linux can also have the kernel kill it when the caller dies.)
func Set(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
