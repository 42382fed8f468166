//go:build unix && !linux

package localsqs

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts the server in its own process group, so that Stop can kill the whole
// group. (The server also exits when its stdin, a pipe from the test binary, closes.)
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
}
