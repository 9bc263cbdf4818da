package proc

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
)

// Containment (SEC-7). Every Run that is neither Direct (converge's own
// git) nor Trusted (converge's own binary) is an agent or a build/test run
// of an agent's change, and runs contained, in its supervisor (see
// Supervise):
//
//   - its own PID namespace, whose init is the supervisor: the process sees
//     and can signal nothing but its own tree, cannot signal its init
//     (the kernel drops an in-namespace SIGKILL to init), and all of it dies
//     with its init, whatever it does to its parent;
//   - its own mount view: the whole filesystem read-only; the user's home,
//     /root, /home, /tmp, /var/tmp, /dev/shm, /run/user and the paths of
//     Policy.Hide (converge's state directory, with the clone cache and
//     every run's worktree) covered by empty filesystems; its Dir and
//     Spec.Writable bound back writable; a scratch HOME of its own at the
//     home's path; a private /tmp; the git directories of its Dir visible
//     read-only, so that what converge's own git reads of them (config,
//     hooks, the worktree's link) is not the agent's to write; the tool
//     directories under the home (PATH entries, Go's and Cargo's caches)
//     visible through a copy-on-write layer whose writes die with the run;
//     a fresh /proc;
//   - its own user namespace, mapping only the user converge runs as, with
//     no capability left: it cannot undo any of the above;
//   - resource limits: file size and processes (Limits).
//
// The network is left as it is: models are remote.
//
// Where the kernel offers none of that (no user namespaces, no /proc),
// Available says why; a Run that must be contained is then refused
// (ErrNoSandbox) unless the policy is Unsafe (--unsafe-no-sandbox).

// Policy is the process-wide containment of Runs.
type Policy struct {
	// Unsafe runs agents and their builds uncontained, as the user
	// (--unsafe-no-sandbox).
	Unsafe bool
	// Require refuses, rather than runs uncontained, a run that cannot be
	// contained (converge's commands set it; a test binary that never
	// calls Supervise runs its processes as before).
	Require bool
	// Hide are paths made invisible to contained runs beyond the defaults:
	// the state directory (its clone cache and worktrees with it).
	Hide []string
	// Expose are paths inside hidden ones a contained run still sees
	// through a copy-on-write layer; nil means ToolPaths(os.Environ()).
	Expose []string
	// Writable are places every contained run may write besides its Dir
	// (CONVERGE_SANDBOX_WRITABLE: a log directory of the user's agent).
	Writable []string
	Limits   Limits
}

// Limits bound a contained run's resources; zero means the default.
type Limits struct {
	// FileSize bounds one file the run writes (RLIMIT_FSIZE).
	FileSize int64
	// Processes bounds the run's processes and threads (RLIMIT_NPROC in
	// its own user namespace, and its pids control group where one can be
	// made: the kernel exempts root from RLIMIT_NPROC).
	Processes int64
	// Memory bounds the run's memory, in bytes, where a memory control
	// group can be made (root, or a delegated cgroup v2 subtree).
	Memory int64
}

// DefaultLimits are a contained run's bounds unless the policy names
// others: a build writes large objects, and a compiler many threads.
var DefaultLimits = Limits{FileSize: 2 << 30, Processes: 4096, Memory: 8 << 30}

var (
	policyMu sync.RWMutex
	policy   Policy
)

// SetPolicy sets the containment of every later Run of this process.
func SetPolicy(p Policy) {
	policyMu.Lock()
	defer policyMu.Unlock()
	policy = p
}

// CurrentPolicy is what SetPolicy last set.
func CurrentPolicy() Policy {
	policyMu.RLock()
	defer policyMu.RUnlock()
	return policy
}

// ErrNoSandbox is a Run that must be contained where containment is not
// available.
var ErrNoSandbox = errors.New("agents run contained (SEC-7) and this machine cannot contain them")

// jail is what the supervisor is told to build: every path resolved by
// converge, before the supervisor covers any of them.
type jail struct {
	Dir      string   `json:"dir"`
	ReadOnly bool     `json:"readonly,omitempty"` // Dir is not writable
	Writable []string `json:"writable,omitempty"`
	Hide     []string `json:"hide"`
	Expose   []string `json:"expose,omitempty"`
	GitDirs  []string `json:"gitdirs,omitempty"` // read-only parts of them
	// Sensitive are covered again wherever a place shown around them
	// would show them (the state directory).
	Sensitive []string `json:"sensitive,omitempty"`
	// ReadOnlyPaths are shown read-only where a hidden place holds them.
	ReadOnlyPaths []string `json:"ro,omitempty"`
	Home          string   `json:"home"`    // the user's home, where Scratch is mounted
	Scratch       string   `json:"scratch"` // the run's scratch HOME on the host
	FileSize      int64    `json:"fsize"`
	Processes     int64    `json:"nproc"`
	Memory        int64    `json:"mem"`
}

// defaultHidden are the places every contained run is kept out of: the
// users' homes (dotfiles, tokens, other tools' logins) and the shared
// temporary directories (other runs' files).
var defaultHidden = []string{"/root", "/home", "/tmp", "/var/tmp", "/dev/shm", "/run/user"}

// newJail resolves what a contained run of s sees. scratch is its HOME.
func newJail(s Spec, p Policy, scratch string) (*jail, error) {
	dir := s.Dir
	if dir == "" {
		wd, err := os.Getwd()
		if err != nil {
			return nil, err
		}
		dir = wd
	}
	dir, err := realPath(dir)
	if err != nil {
		return nil, err
	}
	j := &jail{Dir: dir, ReadOnly: s.ReadOnly, Scratch: scratch}
	home, _ := os.UserHomeDir()
	if home != "" {
		if h, err := realPath(home); err == nil {
			j.Home = h
		}
	}
	hide := append(slices.Clone(defaultHidden), p.Hide...)
	if j.Home != "" {
		hide = append(hide, j.Home)
	}
	j.Hide = topmost(resolveAll(hide))
	// What the policy hides by name (the state directory) is never shown
	// again: nothing inside it is, and the supervisor covers it again
	// under whatever place around it is shown (Sensitive). Only the run's
	// own Dir, the places converge gives it (Spec.Writable) and its git
	// directories, which are in the state, are shown from inside it.
	sensitive := resolveAll(p.Hide)
	j.Sensitive = sensitive
	inside := func(r string) bool {
		for _, h := range sensitive {
			if under(r, []string{h}) {
				return true
			}
		}
		return false
	}
	shown := append([]string{dir}, s.Writable...)
	for _, w := range s.Writable {
		if r, err := realPath(w); err == nil && r != dir && !slices.Contains(j.Writable, r) {
			j.Writable = append(j.Writable, r)
		}
	}
	// The policy's places (CONVERGE_SANDBOX_WRITABLE) and a HOME of the
	// run's own (not the user's: a caller's directory, a test's) are the
	// run's to write, as the scratch one would be.
	writable := slices.Clone(p.Writable)
	if h := envValue(s.Env, "HOME"); h != "" && filepath.IsAbs(h) {
		writable = append(writable, h)
	}
	for _, w := range writable {
		if r, err := realPath(w); err == nil && r != j.Home && r != dir && !inside(r) && !slices.Contains(j.Writable, r) {
			j.Writable = append(j.Writable, r)
		}
	}
	shown = append(shown, j.Writable...)
	readable := func(r string) bool {
		for _, h := range j.Hide {
			if under(h, []string{r}) {
				return false // a hidden place whole ("/tmp"), or around one
			}
		}
		return under(r, j.Hide) && !under(r, shown) && !under(r, j.Expose) && !inside(r) && !slices.Contains(j.ReadOnlyPaths, r)
	}
	expose := p.Expose
	if expose == nil {
		expose = ToolPaths(os.Environ())
	}
	for _, e := range resolveAll(expose) {
		if under(e, j.Hide) && !under(e, []string{dir}) && !inside(e) {
			j.Expose = append(j.Expose, e)
		}
	}
	// What the command line names by path (the agent command of the
	// user's, in /tmp or the home: the program and what lies beside it),
	// and what the run's environment names (a credentials file of its
	// model's provider, a configuration directory), it may read: the
	// caller chose to give it those.
	for _, word := range pathWords(s.Argv) {
		r, err := realPath(word)
		if err != nil {
			continue
		}
		if fi, err := os.Stat(r); err == nil && !fi.IsDir() {
			r = filepath.Dir(r)
		}
		if readable(r) {
			j.ReadOnlyPaths = append(j.ReadOnlyPaths, r)
		}
	}
	env := s.Env
	if env == nil {
		env = os.Environ()
	}
	for _, kv := range env {
		k, v, _ := strings.Cut(kv, "=")
		switch k {
		case "HOME", "PWD", "OLDPWD", "TMPDIR", OwnerEnv:
			continue
		}
		if !filepath.IsAbs(v) || strings.ContainsRune(v, filepath.ListSeparator) {
			continue
		}
		r, err := realPath(v)
		if err != nil {
			continue
		}
		// A credentials file may name others beside it (Google's
		// external account names its subject token): its directory,
		// unless that is a hidden place whole (the home).
		if fi, err := os.Stat(r); err == nil && !fi.IsDir() && readable(filepath.Dir(r)) {
			r = filepath.Dir(r)
		}
		if readable(r) {
			j.ReadOnlyPaths = append(j.ReadOnlyPaths, r)
		}
	}
	// Its git directories are the run's to commit in (objects, refs,
	// logs, its worktree's HEAD and index: agents commit, and converge
	// folds what they commit into its own commit), but not what converge's
	// own git would run or follow from them (SEC-8). A linked worktree's
	// git directories are the clone's, shared with every other run of the
	// repository: there the run writes into a copy-on-write layer that
	// dies with it (its commits show as the changed files they leave), so
	// it can neither move another run's refs nor replace an object another
	// run reads; without a layer it sees them read-only. In a repository
	// of its own (.git inside its Dir), the repository's config and hooks,
	// info (attributes name filters) and links stay read-only.
	gitdirs := gitDirs(dir)
	for _, g := range gitdirs {
		if !under(g, []string{dir}) {
			j.Expose = append(j.Expose, g)
			continue
		}
		for _, name := range []string{"config", "config.worktree", "commondir", "gitdir", "hooks", "info", "worktrees", "modules"} {
			if _, err := os.Lstat(filepath.Join(g, name)); err == nil {
				j.GitDirs = append(j.GitDirs, filepath.Join(g, name))
			}
		}
	}
	j.Expose = topmost(j.Expose)
	lim := p.Limits
	if lim.FileSize <= 0 {
		lim.FileSize = DefaultLimits.FileSize
	}
	if lim.Processes <= 0 {
		lim.Processes = DefaultLimits.Processes
	}
	if lim.Memory <= 0 {
		lim.Memory = DefaultLimits.Memory
	}
	j.FileSize, j.Processes, j.Memory = lim.FileSize, lim.Processes, lim.Memory
	return j, nil
}

// ToolPaths are the directories under the home a build or an agent CLI
// needs to run at all: the PATH entries there (with the prefix a bin or
// shims directory belongs to, node_modules/.bin's package tree, pyenv's
// root), and Go's and Cargo's module and build caches.
func ToolPaths(environ []string) []string {
	get := func(k string) string {
		for i := len(environ) - 1; i >= 0; i-- {
			if v, ok := strings.CutPrefix(environ[i], k+"="); ok {
				return v
			}
		}
		return ""
	}
	home := get("HOME")
	var out []string
	for _, e := range filepath.SplitList(get("PATH")) {
		if e == "" || !filepath.IsAbs(e) {
			continue
		}
		out = append(out, toolRoot(e, home))
	}
	cache := get("XDG_CACHE_HOME")
	if cache == "" && home != "" {
		cache = filepath.Join(home, ".cache")
	}
	gopath := get("GOPATH")
	if gopath == "" && home != "" {
		gopath = filepath.Join(home, "go")
	}
	for _, p := range []string{get("GOCACHE"), get("GOMODCACHE"), gopath, get("CARGO_HOME"), get("RUSTUP_HOME"), get("PYENV_ROOT"), get("NVM_DIR"), get("npm_config_prefix")} {
		if p != "" && filepath.IsAbs(p) {
			out = append(out, filepath.Clean(p))
		}
	}
	if cache != "" {
		out = append(out, filepath.Join(cache, "go-build"))
	}
	if home != "" {
		for _, d := range []string{".cargo", ".rustup"} {
			out = append(out, filepath.Join(home, d))
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// toolRoot is the directory a PATH entry's programs need beside them.
func toolRoot(entry, home string) string {
	entry = filepath.Clean(entry)
	base, parent := filepath.Base(entry), filepath.Dir(entry)
	switch {
	case base == ".bin" && filepath.Base(parent) == "node_modules":
		return filepath.Dir(parent)
	case base == "bin" || base == "shims":
		// ~/bin and ~/.local/bin hold programs, not a prefix: their
		// siblings are the user's own files.
		if parent == home || parent == filepath.Join(home, ".local") {
			return entry
		}
		if filepath.Base(parent) == "pyenv-virtualenv" {
			return filepath.Dir(filepath.Dir(parent))
		}
		return parent
	}
	return entry
}

// gitDirs are the git directories of the tree dir is in: a .git
// directory, or a linked worktree's own directory and its common one.
func gitDirs(dir string) []string {
	for d := dir; ; d = filepath.Dir(d) {
		dotgit := filepath.Join(d, ".git")
		fi, err := os.Lstat(dotgit)
		if err == nil {
			if fi.IsDir() {
				return []string{dotgit}
			}
			if !fi.Mode().IsRegular() {
				return nil
			}
			b, err := os.ReadFile(dotgit)
			if err != nil {
				return nil
			}
			gd, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir:")
			if !ok {
				return nil
			}
			gd = strings.TrimSpace(gd)
			if !filepath.IsAbs(gd) {
				gd = filepath.Join(d, gd)
			}
			out := []string{gd}
			if c, err := os.ReadFile(filepath.Join(gd, "commondir")); err == nil {
				cd := strings.TrimSpace(string(c))
				if !filepath.IsAbs(cd) {
					cd = filepath.Join(gd, cd)
				}
				out = append(out, filepath.Clean(cd))
			}
			return resolveAll(out)
		}
		if d == filepath.Dir(d) {
			return nil
		}
	}
}

// realPath is p absolute with its symbolic links resolved: the
// supervisor mounts on what the kernel sees.
func realPath(p string) (string, error) {
	a, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	return filepath.EvalSymlinks(a)
}

// resolveAll resolves the paths that exist and drops the rest.
func resolveAll(ps []string) []string {
	var out []string
	for _, p := range ps {
		if r, err := realPath(p); err == nil {
			out = append(out, r)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// topmost drops the paths under another of ps.
func topmost(ps []string) []string {
	slices.Sort(ps)
	var out []string
	for _, p := range ps {
		if !under(p, out) {
			out = append(out, p)
		}
	}
	return out
}

// under reports whether p is one of roots or inside one.
func under(p string, roots []string) bool {
	for _, r := range roots {
		if p == r || strings.HasPrefix(p, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// contain is the jail a non-Direct Run of s starts in, nil for one run
// uncontained, and what removes its scratch home after.
func contain(s Spec) (*jail, func(), error) {
	p := CurrentPolicy()
	if s.Trusted || p.Unsafe {
		return nil, func() {}, nil
	}
	if err := Available(); err != nil {
		if p.Require {
			return nil, nil, fmt.Errorf("%w: %v", ErrNoSandbox, err)
		}
		return nil, func() {}, nil
	}
	home, cleanup := s.Home, func() {}
	if home == "" {
		tmp, err := os.MkdirTemp("", "converge-home-")
		if err != nil {
			return nil, nil, fmt.Errorf("sandbox: scratch home: %w", err)
		}
		home, cleanup = tmp, func() { _ = os.RemoveAll(tmp) }
	}
	j, err := newJail(s, p, home)
	if err != nil {
		cleanup()
		return nil, nil, fmt.Errorf("sandbox: %w", err)
	}
	return j, cleanup, nil
}

var (
	availableOnce sync.Once
	availableErr  error
)

// Available is nil when contained runs can start here, or why not: the
// first call starts one (a user, mount and PID namespace, the mounts,
// the dropped capabilities), later calls say what it found.
func Available() error {
	availableOnce.Do(func() { availableErr = probe() })
	return availableErr
}

// envValue is k's value in env (the last entry wins, as in exec), or "".
func envValue(env []string, k string) string {
	for i := len(env) - 1; i >= 0; i-- {
		if v, ok := strings.CutPrefix(env[i], k+"="); ok {
			return v
		}
	}
	return ""
}

// pathWords are the absolute paths among argv's words and, for a shell's
// script (sh -c 'sh /tmp/agent.sh'), among the script's words.
func pathWords(argv []string) []string {
	var out []string
	for _, a := range argv {
		for _, w := range strings.FieldsFunc(a, func(r rune) bool {
			return r == ' ' || r == '\t' || r == '\n' || r == '\'' || r == '"' || r == ';' || r == '|' || r == '&' || r == '(' || r == ')' || r == '<' || r == '>' || r == '='
		}) {
			if filepath.IsAbs(w) {
				out = append(out, filepath.Clean(w))
			}
		}
	}
	return out
}
