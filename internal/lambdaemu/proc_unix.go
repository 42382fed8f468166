//go:build unix

package lambdaemu

import (
	"os/exec"
	"syscall"
)

// signalGroup sends sig to the process group of cmd's process (led by it). The caller
// ensures the process has not been reaped, so its pid is still the group's.
func signalGroup(cmd *exec.Cmd, sig syscall.Signal) {
	if cmd.Process == nil {
		return
	}
	_ = syscall.Kill(-cmd.Process.Pid, sig)
}

// killGroupOnly kills what is left of cmd's process group after its leader was reaped.
func killGroupOnly(cmd *exec.Cmd) { signalGroup(cmd, syscall.SIGKILL) }
