package standin

import (
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sync"
	"time"

	"github.com/kafkalambda/toolkit/internal/procgroup"
)

// Moto is a running moto_server (moto 5, `pip install 'moto[server]'`): AWS services emulated
// in Python, here Secrets Manager and SSM Parameter Store, which the tests of producer and
// parameters use. It comes from PyPI, which nothing here installs: it is on the machine or
// [StartMoto] fails. Its methods are safe for concurrent use.
type Moto struct {
	endpoint string
	cmd      *exec.Cmd
	out      *logBuffer
	exited   chan struct{} // closed once cmd.Wait has returned
	stopOnce sync.Once
}

// motoRunning is werkzeug's line once moto_server listens (on standard error).
var motoRunning = regexp.MustCompile(`Running on (http://127\.0\.0\.1:[0-9]+)`)

// StartMoto starts moto_server on a free loopback port in its own process group and returns
// once it listens, or an error (with what it printed) when it is not on PATH, exits first, or
// does not listen within ctx and [StartTimeout].
func StartMoto(ctx context.Context) (*Moto, error) {
	bin, err := exec.LookPath("moto_server")
	if err != nil {
		return nil, fmt.Errorf("moto_server (moto 5, pip install 'moto[server]') is not on PATH: %w", err)
	}
	out := &logBuffer{max: 64 << 10}
	ready := make(chan string, 1)
	w := &lineWatcher{w: out, found: ready, match: func(line string) (string, bool) {
		m := motoRunning.FindStringSubmatch(line)
		if m == nil {
			return "", false
		}
		return m[1], true
	}}
	cmd := exec.Command(bin, "-H", "127.0.0.1", "-p", "0")
	// One writer for both streams: os/exec then calls it from one goroutine at a time, as
	// lineWatcher needs.
	cmd.Stdout, cmd.Stderr = w, w
	cmd.WaitDelay = 2 * time.Second
	procgroup.Set(cmd)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start %s: %w", bin, err)
	}
	m := &Moto{cmd: cmd, out: out, exited: make(chan struct{})}
	go func() {
		_ = cmd.Wait()
		close(m.exited)
	}()
	ctx, cancel := startContext(ctx)
	defer cancel()
	select {
	case m.endpoint = <-ready:
		return m, nil
	case <-m.exited:
		return nil, fmt.Errorf("moto_server exited before it listened:\n%s", out)
	case <-ctx.Done():
		m.Stop()
		return nil, fmt.Errorf("moto_server did not listen in time (%w):\n%s", ctx.Err(), out)
	}
}

// Endpoint is the server's URL, http://127.0.0.1:PORT.
func (m *Moto) Endpoint() string { return m.endpoint }

// Output returns what the server has printed so far (its first 64 KiB), for diagnostics.
func (m *Moto) Output() string { return m.out.String() }

// Stop kills the server (and its process group) and waits for it to exit. It may be called
// more than once.
func (m *Moto) Stop() {
	m.stopOnce.Do(func() {
		select {
		case <-m.exited:
			return // once reaped, its pid may belong to someone else
		default:
		}
		procgroup.Kill(m.cmd)
		select {
		case <-m.exited:
		case <-time.After(10 * time.Second):
			// Not expected after SIGKILL; do not hang the caller over it.
		}
	})
}
