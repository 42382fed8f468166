package lambdaemu

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// logQueue is how many lines the pool holds for a slow Logs callback before it drops some.
const logQueue = 4096

// maxLine is the longest line passed to Logs whole; longer ones are cut.
const maxLine = 1 << 20

type logLine struct {
	instance int
	line     []byte
}

// logSink reads the processes' output line by line and calls Logs from one goroutine.
type logSink struct {
	fn      func(int, []byte)
	q       chan logLine
	done    chan struct{} // closed when the consumer has delivered the last line
	readers sync.WaitGroup

	mu    sync.Mutex
	files map[*os.File]struct{} // read ends still open
}

func newLogSink(fn func(int, []byte)) *logSink {
	s := &logSink{fn: fn, q: make(chan logLine, logQueue), done: make(chan struct{}), files: map[*os.File]struct{}{}}
	go func() {
		defer close(s.done)
		for l := range s.q {
			s.fn(l.instance, l.line)
		}
	}()
	return s
}

// add starts reading instance n's stdout and stderr. It must not be called after close.
func (s *logSink) add(n int, stdout, stderr *os.File) {
	var dropped atomic.Int64
	var left atomic.Int32
	left.Store(2)
	s.readers.Add(2)
	for _, f := range []*os.File{stdout, stderr} {
		s.mu.Lock()
		s.files[f] = struct{}{}
		s.mu.Unlock()
		go func() {
			defer s.readers.Done()
			err := s.read(n, f, &dropped)
			s.mu.Lock()
			delete(s.files, f)
			s.mu.Unlock()
			_ = f.Close()
			if err != nil && !errors.Is(err, os.ErrClosed) {
				s.q <- logLine{n, fmt.Appendf(nil, "lambdaemu: instance %d: reading its output: %v", n, err)}
			}
			if left.Add(-1) == 0 {
				if d := dropped.Load(); d > 0 {
					// The process is gone: waiting for room here blocks nobody.
					s.q <- logLine{n, fmt.Appendf(nil, "lambdaemu: instance %d: %d log lines dropped: the Logs callback did not keep up", n, d)}
				}
			}
		}()
	}
}

// read passes f's lines to the queue until EOF, dropping (and counting) those that find it full.
func (s *logSink) read(n int, f io.Reader, dropped *atomic.Int64) error {
	r := bufio.NewReaderSize(f, 64*1024)
	for {
		line, err := r.ReadSlice('\n')
		var out []byte
		switch {
		case err == nil:
			out = append([]byte(nil), line[:len(line)-1]...)
		case errors.Is(err, bufio.ErrBufferFull):
			out, err = longLine(r, line)
		case len(line) > 0: // the last line has no newline
			out = append([]byte(nil), line...)
		}
		if out != nil {
			select {
			case s.q <- logLine{n, out}:
			default:
				dropped.Add(1)
			}
		}
		if err != nil {
			if errors.Is(err, io.EOF) {
				return nil
			}
			return err
		}
	}
}

// longLine reads the rest of a line that did not fit r's buffer; first is its start. It keeps
// maxLine bytes and notes how many it cut.
func longLine(r *bufio.Reader, first []byte) ([]byte, error) {
	out := append(make([]byte, 0, 2*len(first)), first...)
	cut := 0
	for {
		chunk, err := r.ReadSlice('\n')
		end := len(chunk)
		if err == nil {
			end--
		}
		part := chunk[:end]
		if room := maxLine - len(out); room < len(part) {
			cut += len(part) - max(room, 0)
			part = part[:max(room, 0)]
		}
		out = append(out, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cut > 0 {
			out = fmt.Appendf(out, "... [lambdaemu: %d bytes of this line cut]", cut)
		}
		if errors.Is(err, io.EOF) {
			return out, io.EOF
		}
		return out, err
	}
}

// close waits for the readers to reach the end of their pipes (closing those still open after
// 2 s: a process outside the group still holds them), then for the last line's delivery.
func (s *logSink) close() {
	finished := make(chan struct{})
	go func() {
		s.readers.Wait()
		close(finished)
	}()
	select {
	case <-finished:
	case <-time.After(shutdownGrace):
		s.mu.Lock()
		for f := range s.files {
			_ = f.Close()
		}
		s.mu.Unlock()
		<-finished
	}
	close(s.q)
	<-s.done
}
