// Package nodepeer runs the Node.js side of a peer benchmark: a script that answers each line
// it reads on standard input ("round N", say) with one line of JSON on standard output, after
// a first JSON line that says it is ready. The benchmark programs of bench/ time rounds of it
// interleaved with their Go side.
package nodepeer

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
)

// Peer is a running Node.js script.
type Peer struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Scanner
}

// Start runs node script args..., with its standard error on ours, and reads its ready line
// into ready. hint says what installs the script's packages, for the error when it does not
// start.
func Start(node, script string, ready any, hint string, args ...string) (*Peer, error) {
	if _, err := os.Stat(script); err != nil {
		return nil, fmt.Errorf("%w (run from the repository root)", err)
	}
	cmd := exec.Command(node, append([]string{script}, args...)...)
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("starting Node.js: %w", err)
	}
	p := &Peer{cmd: cmd, in: in, out: bufio.NewScanner(out)}
	p.out.Buffer(nil, 1<<20)
	if err := p.Read(ready); err != nil {
		p.Close()
		return nil, fmt.Errorf("the Node.js side did not start (%s): %w", hint, err)
	}
	return p, nil
}

// Ask writes the command line (a newline is added) and reads the answer into v.
func (p *Peer) Ask(v any, format string, args ...any) error {
	if _, err := fmt.Fprintf(p.in, format+"\n", args...); err != nil {
		return err
	}
	return p.Read(v)
}

// Read reads the next JSON line into v.
func (p *Peer) Read(v any) error {
	if !p.out.Scan() {
		if err := p.out.Err(); err != nil {
			return err
		}
		return io.ErrUnexpectedEOF
	}
	return json.Unmarshal(p.out.Bytes(), v)
}

// Close ends the script's input and waits for it; an unclean exit is printed on stderr.
func (p *Peer) Close() {
	p.in.Close()
	if err := p.cmd.Wait(); err != nil {
		fmt.Fprintln(os.Stderr, "Node.js:", err)
	}
}
