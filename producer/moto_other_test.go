//go:build !linux

package producer_test

import "os/exec"

// setProcAttr leaves the process as it is: off Linux, only the process itself is stopped.
func setProcAttr(*exec.Cmd) {}

func killTree(cmd *exec.Cmd) { _ = cmd.Process.Kill() }
