package runtimeapi

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
				s.q <- logLine{n, fmt.Appendf(nil, "runtimeapi: instance %d: reading its output: %v", n, err)}
			}
			if left.Add(-1) == 0 {
				if d := dropped.Load(); d > 0 {
					// The process is gone: waiting for room here blocks nobody.
					s.q <- logLine{n, fmt.Appendf(nil, "runtimeapi: instance %d: %d log lines dropped: the Logs callback did not keep up", n, d)}
				}
			}
		}()
	}
}

// read passes f's lines to the queue until EOF, dropping (and counting) those that find it full.
func (s *logSink) read(n int, f io.Reader, dropped *atomic.Int64) error {
	return splitLines(f, 64*1024, maxLine, func(line []byte) {
		select {
		case s.q <- logLine{n, line}:
		default:
			dropped.Add(1)
		}
	})
}

// splitLines reads r through a buffer of bufSize bytes and calls emit with each line, without
// its newline, in a slice emit may keep; a last line without a newline is emitted too. A line
// longer than limit is emitted cut to limit bytes, followed by a note of how many were cut.
// It returns nil at EOF, or the read error.
func splitLines(r io.Reader, bufSize, limit int, emit func([]byte)) error {
	br := bufio.NewReaderSize(r, bufSize)
	for {
		line, err := br.ReadSlice('\n')
		switch {
		case err == nil:
			line = line[:len(line)-1]
			if len(line) > limit {
				emit(cutLine(line[:limit:limit], len(line)-limit))
			} else {
				emit(append([]byte(nil), line...))
			}
		case errors.Is(err, bufio.ErrBufferFull):
			var out []byte
			out, err = longLine(br, line, limit)
			emit(out)
		case len(line) > 0: // the last line has no newline
			if len(line) > limit {
				emit(cutLine(line[:limit:limit], len(line)-limit))
			} else {
				emit(append([]byte(nil), line...))
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

// cutLine returns a copy of kept followed by the note that cut bytes were cut.
func cutLine(kept []byte, cut int) []byte {
	return fmt.Appendf(append([]byte(nil), kept...), "... [runtimeapi: %d bytes of this line cut]", cut)
}

// longLine reads the rest of a line that did not fit br's buffer; first is its start. It keeps
// limit bytes and notes how many it cut.
func longLine(br *bufio.Reader, first []byte, limit int) ([]byte, error) {
	out := append(make([]byte, 0, min(2*len(first), limit)), first[:min(len(first), limit)]...)
	cut := len(first) - min(len(first), limit)
	for {
		chunk, err := br.ReadSlice('\n')
		end := len(chunk)
		if err == nil {
			end--
		}
		part := chunk[:end]
		if room := limit - len(out); room < len(part) {
			cut += len(part) - room
			part = part[:room]
		}
		out = append(out, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if cut > 0 {
			out = fmt.Appendf(out, "... [runtimeapi: %d bytes of this line cut]", cut)
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
