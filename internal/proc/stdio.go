package proc

import (
	"io"
	"os"
	"os/exec"
	"sync"
	"time"
)

// stdio is a process's stdin, stdout and stderr, connected through pipes
// Run owns rather than exec.Cmd's: Cmd.Wait then returns when the leader
// exits, not when the last process holding a pipe does, so Run can kill
// what the leader left before reading the output to its end.
type stdio struct {
	child   []*os.File // the ends the process gets; closed here once it has them
	readers []*os.File // the ends Run reads output from
	stdin   *os.File   // the end Run writes stdin to
	copying sync.WaitGroup
}

// connect makes the pipes and sets them on cmd; stdin is written and the
// output copied to stdout and stderr (or both to stdout when combined)
// once the process has started.
func connect(cmd *exec.Cmd, stdin []byte, stdout, stderr io.Writer, combined bool) (*stdio, error) {
	s := &stdio{}
	inR, inW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	s.child, s.stdin = append(s.child, inR), inW
	cmd.Stdin = inR
	outs := []io.Writer{stdout}
	if !combined {
		outs = append(outs, stderr)
	}
	var writers []*os.File
	for _, w := range outs {
		r, pw, err := os.Pipe()
		if err != nil {
			s.abandon()
			return nil, err
		}
		s.child, s.readers = append(s.child, pw), append(s.readers, r)
		writers = append(writers, pw)
		s.copying.Add(1)
		go func(dst io.Writer, src *os.File) {
			defer s.copying.Done()
			_, _ = io.Copy(dst, src)
		}(w, r)
	}
	cmd.Stdout, cmd.Stderr = writers[0], writers[len(writers)-1]
	go func() {
		// A process that exits without reading its stdin breaks the
		// pipe, which ends the write with EPIPE.
		_, _ = s.stdin.Write(stdin)
		_ = s.stdin.Close()
	}()
	return s, nil
}

// started closes the process's ends in this process, so that the output
// pipes end when the last process holding them does.
func (s *stdio) started() {
	for _, f := range s.child {
		_ = f.Close()
	}
}

// abandon closes every end, for a process that did not start.
func (s *stdio) abandon() {
	s.started()
	for _, f := range s.readers {
		_ = f.Close()
	}
	_ = s.stdin.Close()
	s.copying.Wait()
}

// drain reads the output to its end, waiting at most bound for a process
// that escaped the kill and still holds a pipe; after that what it would
// write is dropped.
func (s *stdio) drain(bound time.Duration) {
	copied := make(chan struct{})
	go func() {
		s.copying.Wait()
		close(copied)
	}()
	t := time.NewTimer(bound)
	defer t.Stop()
	select {
	case <-copied:
	case <-t.C:
		for _, f := range s.readers {
			_ = f.Close()
		}
		<-copied
	}
	for _, f := range s.readers {
		_ = f.Close()
	}
	_ = s.stdin.Close()
}
