package proc

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// jailEnv carries the jail to the supervisor, which removes it before it
// starts the process. It holds paths and limits, never a secret.
const jailEnv = "_CONVERGE_JAIL"

// rootAlias is the id root is in a jail.
const rootAlias = 1000

// cowRoot is where, inside the jail, the copy-on-write layers of the
// exposed tool directories keep what the run writes.
const cowRoot = "/dev/shm/.converge-cow"

// jailArg is argv[1] of a jail's init, which the supervisor starts in
// the run's own namespaces (runJail).
const jailArg = "__jail"

// jailCmd tells the supervisor cmd starts to run its process in j.
//
// The supervisor itself stays where converge is, and starts the jail's
// init (converge's binary again) in a new user, mount and PID namespace.
// Two steps, not one: converge is not dumpable (SEC-2), so what it forks
// has /proc files only root may open, and the new namespace's id maps
// are written there by the parent; the supervisor, a fresh exec, is
// dumpable, and writes its child's.
func jailCmd(cmd *exec.Cmd, j *jail) error {
	b, err := json.Marshal(j)
	if err != nil {
		return err
	}
	cmd.Env = append(slices.DeleteFunc(cmd.Env, func(kv string) bool {
		return strings.HasPrefix(kv, jailEnv+"=")
	}), jailEnv+"="+string(b))
	return nil
}

// jailStart is how the supervisor starts its process in the jail: the
// jail's init, in its namespaces, told to build raw and start the
// process; relay is where the init says it did.
func jailStart(attr *os.ProcAttr, raw string) (start func(string, []string, *os.ProcAttr) (*os.Process, error), relay *os.File, err error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, nil, err
	}
	start = func(path string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
		defer w.Close()
		a := *attr
		// The marker makes the start the jail's init (Supervise), not a
		// command line.
		a.Env = append(slices.Clone(attr.Env), jailEnv+"="+raw, supervisorEnv+"=jail")
		a.Files = append(slices.Clone(attr.Files), w)
		uid, gid := os.Getuid(), os.Getgid()
		inUID, inGID := uid, gid
		if uid == 0 {
			inUID = rootAlias
		}
		if gid == 0 {
			inGID = rootAlias
		}
		a.Sys = &syscall.SysProcAttr{
			Setpgid: true, Pdeathsig: syscall.SIGKILL,
			Cloneflags: syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS | syscall.CLONE_NEWPID,
			// Only converge's own user is mapped: the run is that user in
			// there. Root is mapped to an ordinary id (rootAlias): the run
			// owns what root owns, as before, but is not root to the
			// programs it runs, which then do in there what they do for a
			// user (Codex's own bubblewrap maps its user in a namespace of
			// its own, which a root without CAP_SETFCAP may not; Claude Code
			// refuses root).
			UidMappings:                []syscall.SysProcIDMap{{ContainerID: inUID, HostID: uid, Size: 1}},
			GidMappings:                []syscall.SysProcIDMap{{ContainerID: inGID, HostID: gid, Size: 1}},
			GidMappingsEnableSetgroups: false,
			// An ordinary user would lose the namespace's capabilities at
			// the init's exec; it needs these to build the jail (mounts;
			// the bounding set and securebits; what overlayfs does in its
			// work directory), and gives them up before the process
			// starts.
			AmbientCaps: []uintptr{unix.CAP_SYS_ADMIN, unix.CAP_SETPCAP, unix.CAP_MKNOD, unix.CAP_DAC_OVERRIDE, unix.CAP_FOWNER, unix.CAP_CHOWN},
		}
		return os.StartProcess(selfExe, append([]string{os.Args[0], jailArg, path}, argv...), &a)
	}
	return start, r, nil
}

// jailKilled reads, once the jail's init has exited, whether it said the
// process was killed: the init of a namespace cannot die by its own
// signal, so it says so and exits.
func jailKilled(relay *bufio.Reader) bool {
	if relay == nil {
		return false
	}
	line, _ := relay.ReadString('\n')
	return strings.TrimSpace(line) == "killed"
}

// runJail is the jail's init, PID 1 of the run's namespaces: it builds the
// jail, starts the process in it with no capability, says so on file 3,
// and exits with the process's code once it has ended (at once, when it
// ended untold: the namespace dies with its init, and all the process
// left with it; after the rest, when the supervisor passed on a SIGTERM,
// so that they have their grace).
func runJail(path string, argv []string) int {
	relay := os.NewFile(3, "relay")
	if relay == nil {
		return 126
	}
	syscall.CloseOnExec(3)
	say := func(line string) { _, _ = io.WriteString(relay, strings.ReplaceAll(line, "\n", " ")+"\n") }
	signals := make(chan os.Signal, 4)
	signal.Notify(signals, syscall.SIGTERM)
	j, err := readJail()
	if err != nil || j == nil {
		say(fmt.Sprintf("error sandbox: %v", cmpErr(err, "no jail")))
		return 126
	}
	if err := j.build(); err != nil {
		say("error " + err.Error())
		return 126
	}
	p, err := startJailed(path, argv, &os.ProcAttr{
		Env:   j.environ(os.Environ()),
		Dir:   j.Dir,
		Files: []*os.File{os.Stdin, os.Stdout, os.Stderr},
		Sys:   &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL},
	})
	if err != nil {
		var errno syscall.Errno
		if errors.As(err, &errno) {
			say("errno " + strconv.Itoa(int(errno)))
		} else {
			say("error " + err.Error())
		}
		return 127
	}
	say("started")
	_ = os.Stdin.Close()
	exited, gone := reapAll(p.Pid)
	var (
		ws       syscall.WaitStatus
		stopping bool
	)
	end := func() int {
		if ws.Exited() {
			return ws.ExitStatus()
		}
		say("killed")
		return 128 + int(syscall.SIGKILL)
	}
	for {
		select {
		case <-signals:
			stopping = true
			_ = syscall.Kill(-1, syscall.SIGTERM)
		case ws = <-exited:
			if !stopping {
				return end()
			}
		case <-gone:
			select {
			case ws = <-exited:
			default:
			}
			return end()
		}
	}
}

func cmpErr(err error, def string) string {
	if err != nil {
		return err.Error()
	}
	return def
}

// readJail is the jail the supervisor was told to build, or nil; the
// variable is gone from its environment after.
func readJail() (*jail, error) {
	v, ok := os.LookupEnv(jailEnv)
	if !ok {
		return nil, nil
	}
	_ = os.Unsetenv(jailEnv)
	var j jail
	if err := json.Unmarshal([]byte(v), &j); err != nil {
		return nil, fmt.Errorf("sandbox: %w", err)
	}
	return &j, nil
}

// build makes the jail's mount view and limits in the supervisor, the
// init of its namespaces, before it starts the process. The order
// matters: every place to show again is opened before anything is
// covered, and the whole tree is made read-only after every mount but
// before the writable places are opened up again.
func (j *jail) build() error {
	if err := unix.Mount("", "/", "", unix.MS_REC|unix.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("sandbox: private mounts: %w", err)
	}
	type bind struct {
		fd     int
		target string
		kind   int  // what the target becomes
		file   bool // a file (a CLI's state file), not a directory
	}
	const (
		writable = iota
		readonly
		cow
		cover // the state, under a place shown around it
	)
	var binds []bind
	open := func(p string, kind int) error {
		fd, err := unix.Open(p, unix.O_PATH|unix.O_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("sandbox: %s: %w", p, err)
		}
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("sandbox: %s: %w", p, err)
		}
		binds = append(binds, bind{fd: fd, target: p, kind: kind, file: st.Mode&unix.S_IFMT != unix.S_IFDIR})
		return nil
	}
	dirKind := writable
	if j.ReadOnly {
		dirKind = readonly
	}
	if err := open(j.Dir, dirKind); err != nil {
		return err
	}
	for _, w := range j.Writable {
		if err := open(w, writable); err != nil {
			return err
		}
	}
	for _, g := range append(slices.Clone(j.ReadOnlyPaths), j.GitDirs...) {
		if err := open(g, readonly); err != nil {
			return err
		}
	}
	// The tools' copy-on-write layers are made where the tools are, while
	// they are still in view, their writes kept in a private /dev/shm;
	// what is bound back later is the layer.
	if len(j.Expose) > 0 {
		if err := unix.Mount("tmpfs", "/dev/shm", "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=1777,size=1g"); err != nil {
			return fmt.Errorf("sandbox: cover /dev/shm: %w", err)
		}
	}
	for i, e := range j.Expose {
		kind := readonly
		up := filepath.Join(cowRoot, strconv.Itoa(i))
		if os.MkdirAll(up+"/up", 0o755) == nil && os.MkdirAll(up+"/work", 0o755) == nil {
			opts := "lowerdir=" + e + ",upperdir=" + up + "/up,workdir=" + up + "/work"
			if unix.Mount("overlay", e, "overlay", 0, opts) == nil {
				kind = cow
			}
		}
		// Without an overlay here, the tools are seen read-only.
		if err := open(e, kind); err != nil {
			return err
		}
	}
	if j.Home != "" && j.Scratch != "" {
		fd, err := unix.Open(j.Scratch, unix.O_PATH|unix.O_CLOEXEC|unix.O_DIRECTORY, 0)
		if err != nil {
			return fmt.Errorf("sandbox: scratch home: %w", err)
		}
		binds = append(binds, bind{fd: fd, target: j.Home, kind: writable})
	}
	for _, h := range j.Hide {
		if h == "/dev/shm" && len(j.Expose) > 0 {
			continue // covered above
		}
		if err := unix.Mount("tmpfs", h, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1g"); err != nil {
			return fmt.Errorf("sandbox: cover %s: %w", h, err)
		}
	}
	// The state shows nowhere: under a place shown around it, it is
	// covered again, and what converge gives the run from inside it (its
	// worktree, its git directories) is bound after, on top.
	// The same for every hidden place: binds are not recursive (a
	// recursive one would copy the cover on its own source back on top),
	// so a place shown around a hidden one shows it, until it is covered.
	// (The paths were resolved by converge: here, under the covers, they
	// no longer resolve.)
	hidden := append(slices.Clone(j.Sensitive), j.Hide...)
	slices.Sort(hidden)
	for _, sens := range slices.Compact(hidden) {
		for _, b := range binds {
			if b.target != sens && under(sens, []string{b.target}) {
				binds = append(binds, bind{fd: -1, target: sens, kind: cover})
				break
			}
		}
	}
	// Parents before children: a worktree under the home is bound after
	// the scratch home that covers it.
	slices.SortStableFunc(binds, func(a, b bind) int {
		return strings.Count(a.target, "/") - strings.Count(b.target, "/")
	})
	var reopen []string // the mounts opened up again once all is read-only
	// The private /tmp and /dev/shm are the run's, unless something else
	// was bound on them (then what was bound decides).
	for _, h := range []string{"/tmp", "/dev/shm"} {
		if slices.Contains(j.Hide, h) && !slices.ContainsFunc(binds, func(b bind) bool { return b.target == h }) {
			reopen = append(reopen, h)
		}
	}
	// The run's own /proc stays writable: a tool that makes a namespace
	// of its own (Codex's bubblewrap) writes its maps there.
	reopen = append(reopen, "/proc")
	for _, b := range binds {
		if b.kind == cover {
			if err := os.MkdirAll(b.target, 0o755); err != nil {
				return fmt.Errorf("sandbox: %s: %w", b.target, err)
			}
			if err := unix.Mount("tmpfs", b.target, "tmpfs", unix.MS_NOSUID|unix.MS_NODEV, "mode=0755,size=1m"); err != nil {
				return fmt.Errorf("sandbox: cover %s: %w", b.target, err)
			}
			continue
		}
		if b.file {
			if err := mountPointFile(b.target); err != nil {
				return err
			}
			if err := unix.Mount("/proc/self/fd/"+strconv.Itoa(b.fd), b.target, "", unix.MS_BIND, ""); err != nil {
				return fmt.Errorf("sandbox: bind %s: %w", b.target, err)
			}
			if b.kind == writable {
				reopen = append(reopen, b.target)
			}
			continue
		}
		if err := os.MkdirAll(b.target, 0o755); err != nil {
			return fmt.Errorf("sandbox: %s: %w", b.target, err)
		}
		src := "/proc/self/fd/" + strconv.Itoa(b.fd)
		if err := unix.Mount(src, b.target, "", unix.MS_BIND, ""); err != nil {
			return fmt.Errorf("sandbox: bind %s: %w", b.target, err)
		}
		if b.kind == writable || b.kind == cow {
			reopen = append(reopen, b.target)
		}
	}
	for _, b := range binds {
		if b.fd >= 0 {
			_ = unix.Close(b.fd)
		}
	}
	if err := unix.Mount("proc", "/proc", "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		return fmt.Errorf("sandbox: mount /proc: %w", err)
	}
	if err := unix.MountSetattr(unix.AT_FDCWD, "/", unix.AT_RECURSIVE, &unix.MountAttr{Attr_set: unix.MOUNT_ATTR_RDONLY}); err != nil {
		return fmt.Errorf("sandbox: read-only mounts (mount_setattr, Linux 5.12): %w", err)
	}
	for _, p := range reopen {
		if err := unix.MountSetattr(unix.AT_FDCWD, p, 0, &unix.MountAttr{Attr_clr: unix.MOUNT_ATTR_RDONLY}); err != nil {
			return fmt.Errorf("sandbox: writable %s: %w", p, err)
		}
	}
	for _, l := range []struct {
		res int
		max int64
	}{{unix.RLIMIT_FSIZE, j.FileSize}, {unix.RLIMIT_NPROC, j.Processes}} {
		if l.max <= 0 {
			continue
		}
		if err := unix.Setrlimit(l.res, &unix.Rlimit{Cur: uint64(l.max), Max: uint64(l.max)}); err != nil {
			return fmt.Errorf("sandbox: limit: %w", err)
		}
	}
	// The supervisor's memory and /proc entries are not the process's
	// to read.
	_ = unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	return nil
}

// environ is the process's environment in the jail: a TMPDIR the jail
// hides is its private /tmp.
func (j *jail) environ(env []string) []string {
	for i, kv := range env {
		if v, ok := strings.CutPrefix(kv, "TMPDIR="); ok && under(v, j.Hide) && !under(v, j.Writable) {
			env[i] = "TMPDIR=/tmp"
		}
	}
	return env
}

// The securebits that keep uid 0 from gaining capabilities at exec
// (linux/securebits.h), each locked.
const (
	secbitNoRoot              = 1 << 0
	secbitNoRootLocked        = 1 << 1
	secbitNoSetuidFixup       = 1 << 2
	secbitNoSetuidFixupLocked = 1 << 3
	secbitKeepCapsLocked      = 1 << 5
	secbitNoAmbientRaise      = 1 << 6
	secbitNoAmbientRaiseLock  = 1 << 7
)

// startJailed starts the process from a thread that has given up every
// capability for good, so that the process has none: whatever user it
// is, it cannot unmount, remount or trace its way out of the jail, nor
// signal its init. Credentials are per thread, and a child takes the
// forking thread's, so the thread stays locked (and dies with the
// goroutine) rather than go back to the runtime's pool.
func startJailed(path string, argv []string, attr *os.ProcAttr) (*os.Process, error) {
	type started struct {
		p   *os.Process
		err error
	}
	c := make(chan started, 1)
	go func() {
		runtime.LockOSThread()
		if err := dropPrivileges(); err != nil {
			c <- started{err: err}
			return
		}
		p, err := os.StartProcess(path, argv, attr)
		c <- started{p, err}
		if err == nil {
			// The process's parent-death signal follows this thread:
			// it must live as long as the supervisor does.
			select {}
		}
	}()
	s := <-c
	return s.p, s.err
}

// dropPrivileges empties this thread's capability sets (bounding,
// ambient, inheritable, permitted, effective) and locks securebits so
// that no exec gives any back; no_new_privs closes setuid binaries.
func dropPrivileges() error {
	if err := unix.Prctl(unix.PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: no_new_privs: %w", err)
	}
	for c := 0; ; c++ {
		if err := unix.Prctl(unix.PR_CAPBSET_DROP, uintptr(c), 0, 0, 0); err != nil {
			if errors.Is(err, unix.EINVAL) && c > 0 {
				break // past the last capability
			}
			return fmt.Errorf("sandbox: bounding set: %w", err)
		}
	}
	bits := secbitNoRoot | secbitNoRootLocked | secbitNoSetuidFixup | secbitNoSetuidFixupLocked |
		secbitKeepCapsLocked | secbitNoAmbientRaise | secbitNoAmbientRaiseLock
	if err := unix.Prctl(unix.PR_SET_SECUREBITS, uintptr(bits), 0, 0, 0); err != nil {
		return fmt.Errorf("sandbox: securebits: %w", err)
	}
	_ = unix.Prctl(unix.PR_CAP_AMBIENT, unix.PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0)
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capset(&hdr, &data[0]); err != nil {
		return fmt.Errorf("sandbox: capabilities: %w", err)
	}
	return nil
}

// probe starts one contained run of true in a directory of its own.
func probe() error {
	if !supervising.Load() {
		return errors.New("converge's supervisor is not in this process (proc.Supervise was not called)")
	}
	bin, err := exec.LookPath("true")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	dir, err := os.MkdirTemp("", "converge-probe-")
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	defer os.RemoveAll(dir)
	if err := os.Mkdir(filepath.Join(dir, "home"), 0o700); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	if err := os.Mkdir(filepath.Join(dir, "work"), 0o700); err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	j, err := newJail(Spec{Dir: filepath.Join(dir, "work")}, CurrentPolicy(), filepath.Join(dir, "home"))
	if err != nil {
		return fmt.Errorf("probe: %w", err)
	}
	res, err := Run(context.Background(), Spec{Argv: []string{bin}, Dir: filepath.Join(dir, "work"), Budget: time.Minute, jail: j})
	switch {
	case err != nil:
		return unwrapRun(err)
	case res.ExitCode != 0:
		return fmt.Errorf("a contained run of true exited %d: %s", res.ExitCode, strings.TrimSpace(res.Stderr))
	}
	return nil
}

// unwrapRun is err without Run's "run PROGRAM: " prefix.
func unwrapRun(err error) error {
	if u := errors.Unwrap(err); u != nil {
		return u
	}
	return err
}

// mountPointFile makes an empty file at p to bind a file on, unless one
// is there.
func mountPointFile(p string) error {
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return fmt.Errorf("sandbox: %s: %w", p, err)
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_RDONLY, 0o600)
	if err != nil {
		return fmt.Errorf("sandbox: %s: %w", p, err)
	}
	return f.Close()
}
