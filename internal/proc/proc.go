// Package proc runs a subprocess under a time-box: in a process group of
// its own, told to stop (SIGTERM) at its budget and killed (SIGKILL) after
// a grace period, with whatever it left running killed when it ends —
// descendants that moved to a group or session of their own included
// (Linux), and gone, not just signalled, when Run returns. Every
// subprocess converge starts goes through Run — agent runs (AG-T1),
// build/test runs (AG-T5, PR-S10) and git — so their time-boxes and
// process handling cannot drift apart. On Linux every run but git's sits
// under a supervisor that ends it when converge dies, even by SIGKILL
// (AG-K1, see Supervise).
package proc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"sync"
	"time"
)

// DefaultGrace is the time between SIGTERM and SIGKILL when a Spec names
// none.
const DefaultGrace = 10 * time.Second

// DefaultMaxOutput is how much of each stream Run keeps when a Spec names
// no limit.
const DefaultMaxOutput = 1 << 20

// Spec is a subprocess to run.
type Spec struct {
	Argv  []string
	Dir   string
	Env   []string // as in exec.Cmd: nil inherits this process's environment
	Stdin []byte   // nil reads as an empty stdin
	// Budget is the time-box; zero or less means none (only ctx ends it).
	Budget time.Duration
	// Grace is the time between SIGTERM and SIGKILL, at the budget or when
	// ctx ends; zero means DefaultGrace.
	Grace time.Duration
	// MaxOutput is how many bytes of each stream are kept (the tail);
	// zero means DefaultMaxOutput, and a negative value keeps everything
	// (for output that is read whole, such as git's).
	MaxOutput int
	// Combined sends stderr into Stdout, interleaved as written.
	Combined bool
	// Clock makes the budget's and the grace's timers; nil is the real
	// clock. Tests inject one to fire them when they choose (AG-T1).
	Clock Clock
	// StdoutHead keeps the first this many bytes of stdout as well as its
	// tail: what a process names first (an agent CLI's session id) is
	// still there after a long run dropped it from the tail.
	StdoutHead int
	// Direct starts the process as this process's own child, without the
	// supervisor (AG-K1, see Supervise). Git runs are direct: git is
	// converge's own tool, called often, and the helpers it may start to
	// outlive one command (a credential cache, an ssh master, gpg-agent)
	// must not be killed at its end; git itself still dies with converge
	// (Pdeathsig). Agent and build/test runs never are.
	Direct bool
	// OnLine, when set, is called with each line the process writes
	// (without its newline; stderr true for stderr), as it is written, one
	// call at a time: a caller watching a CLI's event stream stops the
	// run on what a line says (an agent CLI's authentication failure)
	// instead of waiting for the budget. A last line without a newline is
	// passed when the stream ends. Lines longer than 1 MiB are passed cut.
	OnLine func(stderr bool, line string)
	// Abort, when closed, stops the process as the budget does (SIGTERM,
	// then SIGKILL after the grace); Result.Aborted says it did.
	Abort <-chan struct{}
	// MaxRead bounds the bytes read from the process's output, both
	// streams together; zero means none. A process that writes more is a
	// flood: it is stopped at once (SIGKILL, no grace: a process that
	// floods is not asked to print more) and Result.Flooded says so. The
	// tail kept is MaxOutput's, as ever.
	MaxRead int64
	// Trusted runs converge's own binary (a detached run, a test
	// server): supervised, not contained. Agents and build/test runs of
	// their changes never are (SEC-7, see Policy).
	Trusted bool
	// ReadOnly: a contained run sees its Dir but cannot write it (review
	// and judge runs).
	ReadOnly bool
	// Writable are places beside Dir a contained run may write (a test
	// report's directory).
	Writable []string
	// Home is a contained run's HOME, a directory of the caller's that
	// several runs may share (an agent CLI's session, resumed); empty
	// means a fresh empty one, removed when the run ends.
	Home string
	// ExtraFiles are inherited as descriptors 3, 4, … (as exec.Cmd's),
	// for what must reach the process on a descriptor and nowhere else:
	// git's credential (SEC-8). Only Direct runs take them.
	ExtraFiles []*os.File

	// jail, when set, is the containment itself (Available's probe).
	jail *jail
}

// Clock makes timers. NewTimer returns a channel that receives once d
// has passed, and a stop function, as time.NewTimer does.
type Clock interface {
	NewTimer(d time.Duration) (c <-chan time.Time, stop func() bool)
}

type realClock struct{}

func (realClock) NewTimer(d time.Duration) (<-chan time.Time, func() bool) {
	t := time.NewTimer(d)
	return t.C, t.Stop
}

// Result is what Run observed.
type Result struct {
	Started bool
	Stdout  string // last MaxOutput bytes (all when MaxOutput < 0)
	Stderr  string // last MaxOutput bytes (all when MaxOutput < 0); empty when Combined
	// StdoutDropped and StderrDropped count the bytes cut from the head.
	StdoutDropped, StderrDropped int64
	// StdoutHead is the first Spec.StdoutHead bytes of stdout.
	StdoutHead string
	ExitCode   int  // -1 when ended by a signal or never started
	TimedOut   bool // stopped at the budget
	// Interrupted is ctx's error when ctx ended the run.
	Interrupted error
	// Aborted: Spec.Abort stopped the run.
	Aborted bool
	// Flooded: the process wrote more than Spec.MaxRead and was killed.
	Flooded  bool
	Duration time.Duration
}

// Run runs s.Argv and waits for it. Stopping — at the budget or when ctx
// ends — signals the whole process group, so the shells, compilers and
// test binaries the process started stop with it; the group is also
// killed once the leader exits. A process that runs and fails, or is
// stopped, is not an error: the Result says so. The error reports a
// process that could not start (Started false) or a wait that failed for
// another reason than the exit status.
func Run(ctx context.Context, s Spec) (Result, error) {
	res := Result{ExitCode: -1}
	var err error
	if len(s.Argv) == 0 {
		return res, errors.New("run: empty argv")
	}
	if err = ctx.Err(); err != nil {
		res.Interrupted = err
		return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
	}
	grace := s.Grace
	if grace <= 0 {
		grace = DefaultGrace
	}
	clock := s.Clock
	if clock == nil {
		clock = realClock{}
	}
	max := s.MaxOutput
	if max == 0 {
		max = DefaultMaxOutput
	}
	stdout := &Tail{Max: max, Head: s.StdoutHead}
	stderr := stdout
	if !s.Combined {
		stderr = &Tail{Max: max}
	}
	var outW, errW io.Writer = stdout, stderr
	var lines []*lineWriter
	if s.OnLine != nil {
		mu := &sync.Mutex{}
		lo := &lineWriter{next: stdout, mu: mu, fn: s.OnLine}
		le := &lineWriter{next: stderr, mu: mu, fn: s.OnLine, stderr: !s.Combined}
		outW, errW, lines = lo, le, []*lineWriter{lo, le}
	}
	var flood *floodGate
	if s.MaxRead > 0 {
		flood = newFloodGate(s.MaxRead)
		outW, errW = flood.wrap(outW), flood.wrap(errW)
	}
	cmd := exec.Command(s.Argv[0], s.Argv[1:]...)
	cmd.Dir = s.Dir
	cmd.Env = withOwner(s.Env)
	setProcessGroup(cmd)
	if len(s.ExtraFiles) > 0 {
		if !s.Direct {
			return res, fmt.Errorf("run %s: extra descriptors are for direct runs only", s.Argv[0])
		}
		cmd.ExtraFiles = s.ExtraFiles
	}
	var sup *supervisor
	if !s.Direct {
		j, cleanup, err := s.jail, func() {}, error(nil)
		if j == nil {
			j, cleanup, err = contain(s)
		}
		if err != nil {
			return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
		}
		defer cleanup()
		if sup, err = supervise(cmd, j); err != nil {
			return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
		}
	}
	pipes, err := connect(cmd, s.Stdin, outW, errW, s.Combined)
	if err != nil {
		sup.abandon()
		return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
	}

	start := time.Now()
	if err := cmd.Start(); err != nil {
		pipes.abandon()
		sup.abandon()
		return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
	}
	pipes.started()
	if err := sup.started(); err != nil {
		// The supervisor could not start the process, and has exited.
		_ = cmd.Wait()
		pipes.drain(grace)
		sup.abandon()
		return res, fmt.Errorf("run %s: %w", s.Argv[0], err)
	}
	res.Started = true
	fam := newFamily(cmd, sup)
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()

	var flooded <-chan struct{}
	if flood != nil {
		flooded = flood.over
	}
	var budget <-chan time.Time
	if s.Budget > 0 {
		c, stopTimer := clock.NewTimer(s.Budget)
		defer stopTimer()
		budget = c
	}
	var waitErr error
	select {
	case waitErr = <-done:
		fam.reaped = true
	case <-budget:
		res.TimedOut = true
		waitErr = stop(fam, done, clock, grace)
	case <-ctx.Done():
		res.Interrupted = ctx.Err()
		waitErr = stop(fam, done, clock, grace)
	case <-s.Abort:
		res.Aborted = true
		waitErr = stop(fam, done, clock, grace)
	case <-flooded:
		res.Flooded = true
		fam.stopping(true)
		waitErr = <-done
		fam.reaped = true
	}
	// What the leader left is killed before its output is read to the
	// end: a background process holding the pipes would otherwise keep
	// the run open.
	fam.kill(killWait)
	pipes.drain(grace)
	for _, l := range lines {
		l.flush()
	}

	res.Duration = time.Since(start)
	res.Stdout, res.StdoutDropped = stdout.Content()
	res.StdoutHead = stdout.HeadContent()
	if !s.Combined {
		res.Stderr, res.StderrDropped = stderr.Content()
	}
	if cmd.ProcessState != nil {
		res.ExitCode = cmd.ProcessState.ExitCode()
	}
	sup.ended()
	var exitErr *exec.ExitError
	if waitErr != nil && !errors.As(waitErr, &exitErr) {
		return res, fmt.Errorf("run %s: %w", s.Argv[0], waitErr)
	}
	return res, nil
}

// stop asks the process and everything it started to end, and gives
// them the grace period to do it: the leader may be a wrapper (sh -c) that
// dies at once, while the agent it started writes its record. What is left
// at the end of the grace period is killed.
func stop(fam *family, done <-chan error, clock Clock, grace time.Duration) error {
	fam.stopping(false)
	c, stopTimer := clock.NewTimer(grace)
	defer stopTimer()
	var err error
	// The family is polled for only once the leader is gone: until then
	// the leader's exit is what ends the wait.
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	var poll <-chan time.Time
	for {
		select {
		case err = <-done:
			fam.reaped, done, poll = true, nil, tick.C
		case <-c:
			fam.stopping(true)
			if !fam.reaped {
				err = <-done
				fam.reaped = true
			}
			return err
		case <-poll:
		}
		if fam.reaped && fam.gone() {
			return err
		}
	}
}

// waitUntil returns once done reports true, or after bound: it polls
// what the kernel does on its own time (a SIGKILLed process exiting).
func waitUntil(done func() bool, bound time.Duration) {
	if done() {
		return
	}
	tick := time.NewTicker(5 * time.Millisecond)
	defer tick.Stop()
	deadline := time.NewTimer(bound)
	defer deadline.Stop()
	for !done() {
		select {
		case <-tick.C:
		case <-deadline.C:
			return
		}
	}
}

// killWait bounds how long Run waits, after the SIGKILL, for what the
// process left to be gone.
const killWait = 5 * time.Second

// Tail is an io.Writer that keeps the last Max bytes written: a failing
// command prints its verdict and an agent its status record last, and the
// bound keeps chatty processes from filling memory. A negative Max keeps
// every byte. With Head > 0 it also keeps the first Head bytes.
type Tail struct {
	Max     int
	Head    int
	mu      sync.Mutex
	buf     []byte
	head    []byte
	dropped int64
}

func (t *Tail) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(p)
	if room := t.Head - len(t.head); room > 0 {
		t.head = append(t.head, p[:min(room, len(p))]...)
	}
	if t.Max < 0 {
		t.buf = append(t.buf, p...)
		return n, nil
	}
	if len(p) >= t.Max {
		t.dropped += int64(len(t.buf) + len(p) - t.Max)
		t.buf = append(t.buf[:0], p[len(p)-t.Max:]...)
		return n, nil
	}
	if over := len(t.buf) + len(p) - t.Max; over > 0 {
		t.dropped += int64(over)
		t.buf = append(t.buf[:0], t.buf[over:]...)
	}
	t.buf = append(t.buf, p...)
	return n, nil
}

// Content returns the kept bytes and how many were dropped before them.
func (t *Tail) Content() (string, int64) {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.buf), t.dropped
}

// HeadContent returns the first Head bytes written (fewer when fewer
// were).
func (t *Tail) HeadContent() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return string(t.head)
}

// String is the kept bytes, preceded by a note when some were dropped.
func (t *Tail) String() string {
	s, dropped := t.Content()
	return WithDropNote(s, dropped)
}

// WithDropNote prefixes s with a note of how many bytes were cut before it,
// so that a reader of a tail does not take it for the whole output.
func WithDropNote(s string, dropped int64) string {
	if dropped == 0 {
		return s
	}
	return "[… " + strconv.FormatInt(dropped, 10) + " earlier bytes dropped]\n" + s
}

// maxLine bounds a line lineWriter holds for OnLine: a stream without
// newlines must not fill memory.
const maxLine = 1 << 20

// lineWriter passes what is written to next, and each complete line to fn
// under mu (shared by a run's two streams, so fn is called one line at a
// time).
type lineWriter struct {
	next   io.Writer
	mu     *sync.Mutex
	fn     func(stderr bool, line string)
	stderr bool
	buf    []byte
	cut    bool // buf was cut at maxLine; the rest of its line is dropped
}

func (w *lineWriter) Write(p []byte) (int, error) {
	n, err := w.next.Write(p)
	w.mu.Lock()
	defer w.mu.Unlock()
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		if i < 0 {
			w.add(p)
			break
		}
		w.add(p[:i])
		w.emit()
		p = p[i+1:]
	}
	return n, err
}

func (w *lineWriter) add(p []byte) {
	if w.cut {
		return
	}
	if room := maxLine - len(w.buf); len(p) > room {
		p, w.cut = p[:room], true
	}
	w.buf = append(w.buf, p...)
}

func (w *lineWriter) emit() {
	line := string(w.buf)
	w.buf, w.cut = w.buf[:0], false
	if len(line) > 0 && line[len(line)-1] == '\r' {
		line = line[:len(line)-1]
	}
	w.fn(w.stderr, line)
}

// flush passes a last line that ended without a newline.
func (w *lineWriter) flush() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.buf) > 0 || w.cut {
		w.emit()
	}
}

// floodGate counts what a process writes on both streams and closes over
// once more than max bytes came: the bytes past the bound are dropped
// unread, so a flood costs no more memory or CPU than the bound.
type floodGate struct {
	mu   sync.Mutex
	left int64
	over chan struct{}
	shut bool
}

func newFloodGate(max int64) *floodGate {
	return &floodGate{left: max, over: make(chan struct{})}
}

func (g *floodGate) wrap(w io.Writer) io.Writer { return &floodWriter{g: g, next: w} }

type floodWriter struct {
	g    *floodGate
	next io.Writer
}

func (w *floodWriter) Write(p []byte) (int, error) {
	n := len(p)
	w.g.mu.Lock()
	keep := int64(len(p))
	if keep > w.g.left {
		keep = w.g.left
	}
	w.g.left -= keep
	if keep < int64(len(p)) && !w.g.shut {
		w.g.shut = true
		close(w.g.over)
	}
	w.g.mu.Unlock()
	if keep > 0 {
		if _, err := w.next.Write(p[:keep]); err != nil {
			return n, err
		}
	}
	return n, nil
}
