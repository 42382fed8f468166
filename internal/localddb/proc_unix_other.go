//go:build unix && !linux

package localddb

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts dynalite in its own process group, so that Stop can kill the whole group.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
