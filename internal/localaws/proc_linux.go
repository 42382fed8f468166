//go:build linux

package localaws

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group (so that Stop can kill the whole group)
// and has the kernel kill it if the test binary dies without running its cleanups (a panic or
// a go test -timeout kill).
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}
