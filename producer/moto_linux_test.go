package producer_test

import (
	"os/exec"
	"syscall"
)

// setProcAttr puts moto_server in its own process group (pyenv's shim runs it under a shell),
// killed by the kernel if the test binary dies without running its cleanups.
func setProcAttr(cmd *exec.Cmd) {
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
}

// killTree kills moto_server's process group.
func killTree(cmd *exec.Cmd) {
	_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
	_ = cmd.Process.Kill()
}
