package proc

import (
	"bufio"
	"errors"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// The supervisor (AG-K1). Pdeathsig reaches only the direct child of a
// converge killed by SIGKILL: an agent run as `sh -c CMD` loses its shell
// and keeps the rest, which goes on writing to the tree. So every
// non-Direct Run starts the converge binary again, as a supervisor, and
// the supervisor starts the process. It adopts whatever the process
// leaves (a child subreaper), so everything the run started stays its
// descendant, whichever group or session it moved to. When converge
// dies — the control pipe, whose only writer is converge, reads EOF, or
// the parent-death signal arrives — it SIGKILLs all of it at once, no
// grace, waits until it is gone, and exits.
//
// While converge lives, the supervisor is transparent: the process gets
// the supervisor's stdin, stdout and stderr (Run's pipes), its exit code
// is the supervisor's (a process killed by a signal makes the supervisor
// die by SIGKILL: Result.ExitCode -1 either way), and converge keeps the
// time-box. At the budget converge sends the supervisor SIGTERM, which it
// passes to the whole family, and from then on waits for the family to
// end by itself; at the end of the grace converge closes the control
// pipe, and the supervisor kills what is left. A process that ends
// without being told to has what it left killed at once, as Run always
// did.

const (
	// supervisorEnv marks a start as a supervisor's; its value is the
	// OwnerEnv value of the converge that started it.
	supervisorEnv = "_CONVERGE_SUPERVISOR"
	// supervisorArg is argv[1] of a supervisor: ps shows what it is, and
	// the marker alone does not make one.
	supervisorArg = "__supervise"
	// deathSignal is the supervisor's parent-death signal: one it can
	// catch, unlike the SIGKILL a direct child gets.
	deathSignal = syscall.SIGUSR1
	// selfExe is converge's own binary, even when the file was replaced
	// or removed since it started.
	selfExe = "/proc/self/exe"
)

// supervising: Supervise was called, so Runs are supervised.
var supervising atomic.Bool

// Supervise must be called first thing in main, before anything reads
// the environment or starts a goroutine that matters. When this process
// was started as a supervisor it supervises, and exits with the
// process's code; it does not return. Otherwise every later Run that is
// not Direct is supervised.
//
// A binary that never calls it (a test binary of a package whose tests
// run processes without it) runs them as before: in a group of their
// own, the direct child killed by Pdeathsig, the rest left to
// ReapOrphans at the next claim (REL-2). converge's main calls it, so the
// real binary always supervises; so do the TestMains of internal/proc and
// internal/cli. Without /proc (no /proc/self/exe to start) nothing is
// supervised either.
func Supervise() {
	if tag, ok := os.LookupEnv(supervisorEnv); ok {
		_ = os.Unsetenv(supervisorEnv)
		if len(os.Args) >= 4 && os.Args[1] == supervisorArg {
			os.Exit(runSupervisor(tag, os.Args[2], os.Args[3:]))
		}
		if len(os.Args) >= 4 && os.Args[1] == jailArg {
			os.Exit(runJail(os.Args[2], os.Args[3:]))
		}
	}
	if _, err := os.Stat(selfExe); err == nil {
		supervising.Store(true)
	}
}

// supervisor is converge's end of one supervisor: the write end of the
// control pipe, and the read end of the pipe the supervisor says on
// whether it started the process.
type supervisor struct {
	cmd     *exec.Cmd
	path    string     // the process's program
	child   []*os.File // the supervisor's ends, closed here once it has them
	control *os.File
	status  *os.File
	closing sync.Once
	mu      sync.Mutex
	backup  *time.Timer // kills a supervisor that outlives its kill
	jailed  bool
	limits  Limits
	group   *runGroup // a jailed run's control groups, or nil
}

// ended removes a jailed run's control groups once its supervisor has
// exited.
func (s *supervisor) ended() {
	if s == nil {
		return
	}
	s.group.remove()
	s.group = nil
}

// supervise makes cmd start a supervisor that runs what cmd named, or
// returns nil when Runs are not supervised (or cmd cannot start anyway,
// so that Start reports why as it always did).
//
// With a jail the supervisor is the init of the run's own namespaces
// and builds the jail before it starts the process (SEC-7, see Policy).
func supervise(cmd *exec.Cmd, j *jail) (*supervisor, error) {
	if j != nil && !supervising.Load() {
		return nil, ErrNoSandbox
	}
	if !supervising.Load() || cmd.Err != nil {
		return nil, nil
	}
	controlR, controlW, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	statusR, statusW, err := os.Pipe()
	if err != nil {
		_ = controlR.Close()
		_ = controlW.Close()
		return nil, err
	}
	s := &supervisor{cmd: cmd, path: cmd.Path, child: []*os.File{controlR, statusW}, control: controlW, status: statusR}
	cmd.Args = append([]string{os.Args[0], supervisorArg, cmd.Path}, cmd.Args...)
	cmd.Path = selfExe
	// The supervisor carries the owner tag in its marker, not as
	// OwnerEnv, and gives it back to the process: a ReapOrphans (REL-2)
	// run by another converge while it kills its family must not find
	// it, since what carries no tag is the supervisor's alone to kill.
	cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, supervisorEnv+"=") || strings.HasPrefix(kv, OwnerEnv+"=")
	}), supervisorEnv+"="+owner())
	// Files 3 and 4 of the supervisor.
	cmd.ExtraFiles = []*os.File{controlR, statusW}
	cmd.SysProcAttr.Pdeathsig = deathSignal
	if j != nil {
		if err := jailCmd(cmd, j); err != nil {
			return nil, err
		}
		s.jailed = true
		s.limits = Limits{Processes: j.Processes, Memory: j.Memory}
	}
	return s, nil
}

// started closes the supervisor's ends here and waits for it to say
// whether it started the process: nil, or why not, as exec.Cmd.Start
// would have said it.
func (s *supervisor) started() error {
	if s == nil {
		return nil
	}
	for _, f := range s.child {
		_ = f.Close()
	}
	s.child = nil
	if s.jailed {
		// A jail's supervisor is put in the run's control groups, then
		// told to go on.
		s.group = newRunGroup(s.limits)
		if err := s.group.add(s.cmd.Process.Pid); err != nil {
			s.group.remove()
			s.group = nil
		}
		if _, err := s.control.Write([]byte{'g'}); err != nil {
			return errors.New("the supervisor ended before it started the process")
		}
	}
	line, _ := bufio.NewReader(s.status).ReadString('\n')
	_ = s.status.Close()
	switch word, rest, _ := strings.Cut(strings.TrimSpace(line), " "); word {
	case "started":
		return nil
	case "errno":
		if n, err := strconv.Atoi(rest); err == nil {
			return &os.PathError{Op: "fork/exec", Path: s.path, Err: syscall.Errno(n)}
		}
	case "error":
		return errors.New(rest)
	}
	return errors.New("the supervisor ended before it started the process")
}

// abandon closes every end, for a supervisor that did not start or
// could not start the process.
func (s *supervisor) abandon() {
	if s == nil {
		return
	}
	s.group.remove()
	s.group = nil
	for _, f := range s.child {
		_ = f.Close()
	}
	_ = s.status.Close()
	s.close()
}

// stop tells the supervisor to stop the family: SIGTERM, which it passes
// on, or at once, by closing the control pipe. A supervisor that has not
// exited well after its own bound for the kill is killed, so Run does
// not wait for ever; what it had not killed then is ReapOrphans's.
func (s *supervisor) stop(force bool) {
	if !force {
		_ = s.cmd.Process.Signal(syscall.SIGTERM)
		return
	}
	s.close()
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backup == nil {
		p := s.cmd.Process
		s.backup = time.AfterFunc(killWait+2*time.Second, func() { _ = p.Kill() })
	}
}

// close closes the control pipe: the supervisor kills what is left of
// the family and exits.
func (s *supervisor) close() {
	s.closing.Do(func() { _ = s.control.Close() })
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.backup != nil {
		s.backup.Stop()
	}
}

// runSupervisor is the supervisor: it starts path with argv, reports on
// file 4 whether it could, and returns the code to exit with once the
// process and everything it started are gone.
func runSupervisor(tag, path string, argv []string) int {
	parent, _, _ := strings.Cut(tag, ".")
	control, status := os.NewFile(3, "control"), os.NewFile(4, "status")
	if control == nil || status == nil {
		return 126
	}
	syscall.CloseOnExec(3)
	syscall.CloseOnExec(4)
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM, deathSignal)
	// Go set the parent-death signal at the fork; it is set again here,
	// where the check that the parent still lives follows it: a converge
	// that died before sends no signal.
	_ = unix.Prctl(unix.PR_SET_PDEATHSIG, uintptr(deathSignal), 0, 0, 0)
	jail, jailed := os.LookupEnv(jailEnv)
	_ = os.Unsetenv(jailEnv)
	if strconv.Itoa(os.Getppid()) != parent {
		_, _ = io.WriteString(status, "error converge ended before the process started\n")
		return 126
	}
	attr := &os.ProcAttr{
		Env:   append(os.Environ(), OwnerEnv+"="+tag),
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		// The process dies with the supervisor too: converge kills a
		// supervisor that does not end in time.
		Sys: &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	}
	start := os.StartProcess
	var relay *bufio.Reader // the jail's init's word on its start and end
	if jailed {
		// converge moves this supervisor into the run's control groups,
		// then says go: what it starts is born in them.
		var b [1]byte
		if n, _ := control.Read(b[:]); n != 1 {
			_, _ = io.WriteString(status, "error converge ended before the process started\n")
			return 126
		}
		var err error
		var pipe *os.File
		if start, pipe, err = jailStart(attr, jail); err != nil {
			_, _ = io.WriteString(status, "error "+strings.ReplaceAll(err.Error(), "\n", " ")+"\n")
			return 126
		}
		relay = bufio.NewReader(pipe)
	}
	if err := unix.Prctl(unix.PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0); err != nil {
		_, _ = io.WriteString(status, "error supervisor: "+err.Error()+"\n")
		return 126
	}
	p, err := start(path, argv, attr)
	if err == nil && relay != nil {
		// The jail's init says whether it built the jail and started the
		// process, as a supervisor says it to converge.
		// One reader for both of the init's lines: they may come in one
		// read.
		line, _ := relay.ReadString('\n')
		if line = strings.TrimSpace(line); line != "started" {
			_ = p.Kill()
			_, _ = p.Wait()
			if line == "" {
				line = "error the sandbox's init ended before it started the process"
			}
			_, _ = io.WriteString(status, line+"\n")
			return 126
		}
	}
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			_, _ = io.WriteString(status, "errno "+strconv.Itoa(int(errno))+"\n")
		} else {
			_, _ = io.WriteString(status, "error "+strings.ReplaceAll(err.Error(), "\n", " ")+"\n")
		}
		return 127
	}
	_, _ = io.WriteString(status, "started\n")
	_ = status.Close()
	// The process holds stdin now: when it closes it, converge's writer
	// sees the pipe break, as without the supervisor.
	_ = os.Stdin.Close()

	// Everything below the supervisor is the family; with the supervisor
	// a subreaper, a wait for any child ends with ECHILD only once the
	// last of it is gone.
	exited, gone := reapAll(p.Pid)
	orphaned := make(chan struct{})
	go func() {
		// Converge never writes: the read ends when it closes the pipe
		// or dies.
		_, _ = io.Copy(io.Discard, control)
		close(orphaned)
	}()

	fam := &family{pid: p.Pid, root: os.Getpid()}
	var (
		ws       syscall.WaitStatus
		done     bool // the process exited, ws says how
		stopping bool // converge asked the family to stop: it gets its grace
		tick     <-chan time.Time
		bound    <-chan time.Time
	)
	kill := func() {
		if tick == nil {
			tick = time.NewTicker(10 * time.Millisecond).C
			bound = time.After(killWait)
		}
		// The group first, before the process table is read: that is
		// most of the family at once.
		fam.signal(syscall.SIGKILL)
		fam.look()
		fam.signal(syscall.SIGKILL)
	}
	for {
		select {
		case sig := <-signals:
			switch {
			case sig == deathSignal:
				kill()
			case tick == nil && relay != nil:
				// The jail's init passes it on to everything in the jail,
				// having marked itself stopping first: told here at once,
				// it could see its process die of the signal before its
				// own came, and end the rest without their grace.
				stopping = true
				_ = syscall.Kill(p.Pid, syscall.SIGTERM)
			case tick == nil:
				stopping = true
				fam.look()
				fam.signal(syscall.SIGTERM)
			}
		case <-orphaned:
			orphaned = nil
			kill()
		case ws = <-exited:
			done = true
			if !stopping {
				kill()
			}
		case <-tick:
			fam.look()
			fam.signal(syscall.SIGKILL)
		case <-bound:
			// What is left is stuck in the kernel, where it runs no
			// code of its own.
			return exitAs(ws, done && !jailKilled(relay))
		case <-gone:
			select {
			case ws = <-exited:
				done = true
			default:
			}
			return exitAs(ws, done && !jailKilled(relay))
		}
	}
}

// exitAs is the code the supervisor exits with for a process that ended
// as ws says; one killed by a signal (or never seen to end) makes the
// supervisor kill itself, so that converge sees a process killed.
func exitAs(ws syscall.WaitStatus, done bool) int {
	if done && ws.Exited() {
		return ws.ExitStatus()
	}
	_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
	select {}
}

// reapAll waits for every child of this process, to the last: exited
// receives how the child pid ended, and gone closes once no child is
// left (ECHILD). A subreaper's or a namespace's init's children include
// whatever their descendants left.
func reapAll(pid int) (exited <-chan syscall.WaitStatus, gone <-chan struct{}) {
	ex := make(chan syscall.WaitStatus, 1)
	g := make(chan struct{})
	go func() {
		for {
			var ws syscall.WaitStatus
			got, err := syscall.Wait4(-1, &ws, 0, nil)
			switch {
			case errors.Is(err, syscall.EINTR):
			case err != nil:
				close(g)
				return
			case got == pid:
				ex <- ws
			}
		}
	}()
	return ex, g
}
