//go:build unix

package procgroup

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// startShell starts a shell that starts a child (sleep) and waits for it, and returns the
// shell's command and the child's pid.
func startShell(t *testing.T) (*exec.Cmd, int) {
	t.Helper()
	cmd := exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!; wait")
	Set(cmd)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		t.Fatal(err)
	}
	child, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		t.Fatal(err)
	}
	return cmd, child
}

// gone waits up to 5 s for pid to be gone or a zombie (dead, not yet reaped by init).
func gone(pid int) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		if err := syscall.Kill(pid, 0); errors.Is(err, syscall.ESRCH) {
			return true
		}
		// Linux: the state follows the command name in parentheses.
		if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
			if _, rest, ok := strings.Cut(string(stat), ") "); ok && strings.HasPrefix(rest, "Z") {
				return true
			}
		}
	}
	return false
}

// TestKillStopsTheGroup checks that Kill stops what the process started, not just the
// process: the reason the package exists.
func TestKillStopsTheGroup(t *testing.T) {
	cmd, child := startShell(t)
	if pgid, err := syscall.Getpgid(cmd.Process.Pid); err != nil || pgid != cmd.Process.Pid {
		t.Fatalf("process group %d (%v), want the process's own %d", pgid, err, cmd.Process.Pid)
	}
	Kill(cmd)
	_ = cmd.Wait()
	if !gone(child) {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("the shell's child %d outlived Kill", child)
	}
}

// TestTerminateAndKillGroup checks that Terminate signals the whole group, and that
// KillGroup reaches a child whose parent has been reaped.
func TestTerminateAndKillGroup(t *testing.T) {
	cmd, child := startShell(t)
	Terminate(cmd)
	_ = cmd.Wait()
	if !gone(child) {
		_ = syscall.Kill(child, syscall.SIGKILL)
		t.Fatalf("the shell's child %d outlived Terminate", child)
	}

	cmd = exec.Command("sh", "-c", "sleep 60 >/dev/null 2>&1 & echo $!")
	Set(cmd)
	out, err := cmd.Output() // the shell exits at once and is reaped; its child lives on
	if err != nil {
		t.Fatal(err)
	}
	orphan, err := strconv.Atoi(strings.TrimSpace(string(out)))
	if err != nil {
		t.Fatal(err)
	}
	KillGroup(cmd)
	if !gone(orphan) {
		_ = syscall.Kill(orphan, syscall.SIGKILL)
		t.Fatalf("the orphan %d outlived KillGroup", orphan)
	}
}
