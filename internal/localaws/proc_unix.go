//go:build unix

package localaws

import (
	"os/exec"
	"syscall"
)

// killTree kills the process group that setProcAttr gave cmd, then cmd itself in case the group
// kill could not be sent.
func killTree(cmd *exec.Cmd) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
