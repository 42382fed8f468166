//go:build !unix

package localddb

import "os/exec"

func setProcAttr(*exec.Cmd) {}

func killTree(cmd *exec.Cmd) {
	if cmd.Process != nil {
		_ = cmd.Process.Kill()
	}
}
