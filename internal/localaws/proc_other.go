//go:build !unix

package localaws

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
