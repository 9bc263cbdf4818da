//go:build linux

package secure

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"syscall"

	"golang.org/x/sys/unix"
)

// maxPayload bounds what the second start reads; tokens are far smaller.
const maxPayload = 64 << 10

// Harden keeps the forge token out of what other processes of the same
// user (agents among them) can read of converge's own (SEC-2). Call it
// first thing in main, with os.Args.
//
// The process becomes non-dumpable, which closes /proc/PID/mem, environ
// and ptrace to same-uid processes without CAP_SYS_PTRACE; root is not
// held back. /proc/PID/cmdline stays world-readable, and environ is the
// block the process started with, so when a token is in either, converge
// re-execs itself once through /proc/self/exe without it, handing the
// values over on an inherited pipe that is read once and closed.
//
// Harden returns on the first start only when there is nothing to hide or
// the re-exec failed (Start.Warning says why); on the second start it
// returns the original command line and the handed-over variables. An
// error means handed-over credentials were lost: the run must not go on.
func Harden(args []string) (*Start, error) {
	fd, second := os.LookupEnv(handoffEnv)
	if second {
		// Before the process stops being dumpable, since that makes
		// /proc/self root's and its comm unwritable to a non-root user.
		setComm()
	}
	// execve resets dumpability, so each start sets it for itself; the
	// first start does it too, since its environ still holds the token.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)

	if second {
		// Children must neither inherit the marker nor look for the pipe.
		_ = os.Unsetenv(handoffEnv)
		p, err := receive(fd)
		if err != nil {
			return nil, fmt.Errorf("cannot read the credentials handed over at start-up: %v", err)
		}
		return &Start{Args: p.restore(args), env: p.Env}, nil
	}

	env, argv, p := split(os.Environ(), args)
	if p.empty() {
		return &Start{Args: args}, nil
	}
	err := reexec(env, argv, p)
	return &Start{Args: args, Warning: fmt.Sprintf("the token stays visible in /proc to processes of this user: %v", err)}, nil
}

// reexec replaces the process with a fresh start of the same binary; it
// returns only on failure.
func reexec(env, argv []string, p payload) error {
	b, err := json.Marshal(p)
	if err != nil {
		return err
	}
	r, w, err := os.Pipe()
	if err != nil {
		return err
	}
	defer r.Close()
	// Nobody reads until after exec, so the whole payload must fit in the
	// pipe or the write would block for ever.
	if size, err := unix.FcntlInt(w.Fd(), unix.F_GETPIPE_SZ, 0); err != nil || len(b) > size {
		w.Close()
		return fmt.Errorf("credentials too large to hand over (%d bytes)", len(b))
	}
	if _, err := w.Write(b); err != nil {
		w.Close()
		return err
	}
	if err := w.Close(); err != nil {
		return err
	}
	// os.Pipe opens with close-on-exec; the read end must survive exec.
	rfd := int(r.Fd())
	if _, err := unix.FcntlInt(uintptr(rfd), unix.F_SETFD, 0); err != nil {
		return err
	}
	env = append(env, handoffEnv+"="+strconv.Itoa(rfd))
	return syscall.Exec("/proc/self/exe", argv, env)
}

// receive reads the payload from the inherited descriptor fd and closes
// it, so nothing later (an agent included) can find it open.
func receive(fd string) (payload, error) {
	var p payload
	n, err := strconv.Atoi(fd)
	if err != nil || n < 3 {
		return p, fmt.Errorf("%s=%q is not a descriptor converge passed", handoffEnv, fd)
	}
	var st unix.Stat_t
	if err := unix.Fstat(n, &st); err != nil {
		return p, fmt.Errorf("descriptor %d: %v", n, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFIFO {
		// Not the pipe converge made: reading a file or terminal the
		// marker happened to name would be worse than stopping.
		return p, fmt.Errorf("descriptor %d is not a pipe", n)
	}
	f := os.NewFile(uintptr(n), "converge-handoff")
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, maxPayload+1))
	if err != nil {
		return p, err
	}
	if len(b) > maxPayload {
		return p, errors.New("hand-over too large")
	}
	if err := json.Unmarshal(b, &p); err != nil {
		return p, fmt.Errorf("hand-over unreadable: %v", err)
	}
	return p, nil
}

// setComm names the process after its binary again: exec through
// /proc/self/exe makes the kernel call it "exe", which is what ps, top
// and pgrep would show instead of converge.
func setComm() {
	exe, err := os.Executable()
	if err != nil {
		return
	}
	_ = os.WriteFile("/proc/self/comm", []byte(filepath.Base(exe)), 0)
}
