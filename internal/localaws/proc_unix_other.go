//go:build unix && !linux

package localaws

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, so that Stop can kill the whole group.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
