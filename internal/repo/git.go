// Package repo drives git through the git command line (never a Go git
// library, so behaviour matches what users and CI see) and discovers a
// repository's own build, test and lint commands (REPO-C1).
//
// Every git it runs is pinned (SEC-8): no hooks, no fsmonitor, no user's
// or system's config, no external diff or textconv driver (see Git).
// A forge token reaches only the one git command that talks to the
// remote, through a credential helper fed on an inherited descriptor
// (AuthEnvFor, Credential): never an environment, argv, a remote URL or
// a file, and errors never carry one.
package repo

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/proc"
)

// DefaultGitTimeout time-boxes a git command whose context has no
// deadline: long enough for a first clone of a large repository over a
// slow link, short enough that a stalled network call does not hold a run
// for ever. A context deadline replaces it.
const DefaultGitTimeout = 30 * time.Minute

// gitGrace is how long git, stopped at its time-box or by its context, has
// between SIGTERM and SIGKILL; git itself exits at once on SIGTERM.
const gitGrace = 5 * time.Second

// Git runs git commands in one working directory, each through proc.Run:
// in a process group of its own, so that stopping it also stops the
// remote helpers and ssh it started, and time-boxed by the context's
// deadline or DefaultGitTimeout.
//
// Every command runs with the process environment (less the variables
// that carry git config), then the defaults below, then Env (later
// entries win), then the pins:
//   - GIT_TERMINAL_PROMPT=0 and GCM_INTERACTIVE=never: a missing or
//     rejected credential fails at once instead of waiting for a human.
//   - LC_ALL=C: messages we match (push rejections) stay in English.
//   - GIT_CONFIG_GLOBAL=/dev/null and GIT_CONFIG_NOSYSTEM=1, and
//     -c core.hooksPath=/dev/null -c core.fsmonitor=false
//     -c credential.helper= (SEC-8): the only config is the repository's
//     own and converge's; no hook, fsmonitor or stored credential runs.
//     diff, log and show get --no-ext-diff --no-textconv.
//   - GitDir and WorkTree, when set, as --git-dir and --work-tree: a .git
//     file an agent rewrote in the work tree cannot point git elsewhere.
//
// Identity never comes from config: Commit sets it explicitly.
type Git struct {
	Dir string
	// Env is added to git's environment; AuthEnvFor's entries carry a CA
	// and a token, which Git hands to the network commands only (SEC-8).
	Env []string
	// Cred, when set, is the token of the network commands, asked for as
	// each starts (credential.go); Env then carries none.
	Cred *Credential
	// GitDir and WorkTree pin the repository of a linked worktree to
	// what git said when converge made it (AddWorktree, PinWorktree).
	GitDir, WorkTree string
}

// WithEnv is a copy of g whose Env has env added.
func (g *Git) WithEnv(env ...string) *Git {
	c := *g
	c.Env = append(append([]string{}, g.Env...), env...)
	return &c
}

// PinWorktree is g pinned (GitDir, WorkTree) to the repository git finds
// in g.Dir now: call it when converge has just made the worktree, before
// any agent has worked in it. At a work tree's top it reads the .git file
// or directory there, as git does; elsewhere it asks git.
func (g *Git) PinWorktree(ctx context.Context) (*Git, error) {
	c := *g
	if dir, err := filepath.Abs(g.Dir); err == nil {
		if gd, ok := gitDirAt(dir); ok {
			c.GitDir, c.WorkTree = gd, dir
			return &c, nil
		}
	}
	probe := *g
	probe.GitDir, probe.WorkTree = "", ""
	out, err := probe.Run(ctx, "rev-parse", "--absolute-git-dir", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	f := strings.Split(strings.TrimSpace(out), "\n")
	if len(f) != 2 || f[0] == "" || f[1] == "" {
		return nil, fmt.Errorf("git rev-parse in %s: unexpected answer %q", g.Dir, out)
	}
	c.GitDir, c.WorkTree = f[0], f[1]
	return &c, nil
}

// gitDirAt is the git directory of the work tree whose top is dir: its
// .git directory, or where its .git file points ("gitdir: PATH", relative
// to dir).
func gitDirAt(dir string) (string, bool) {
	dotgit := filepath.Join(dir, ".git")
	fi, err := os.Lstat(dotgit)
	switch {
	case err != nil:
		return "", false
	case fi.IsDir():
		return dotgit, true
	case !fi.Mode().IsRegular() || fi.Size() > 4096:
		return "", false
	}
	b, err := os.ReadFile(dotgit)
	if err != nil {
		return "", false
	}
	p, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "gitdir: ")
	if !ok || p == "" || strings.ContainsAny(p, "\n\x00") {
		return "", false
	}
	if !filepath.IsAbs(p) {
		p = filepath.Join(dir, p)
	}
	if _, err := os.Stat(filepath.Join(p, "HEAD")); err != nil {
		return "", false
	}
	return filepath.Clean(p), true
}

// Error is a failed git command. Its message names the subcommand and the
// most telling line of stderr, with credentials removed.
type Error struct {
	Subcommand string
	ExitCode   int    // -1 when git did not run or was killed
	Stderr     string // whole stderr, credentials removed
	Err        error
}

func (e *Error) Error() string {
	msg := "git " + e.Subcommand
	if line := lastLine(e.Stderr); line != "" {
		return msg + ": " + line
	}
	if e.Err != nil {
		return msg + ": " + e.Err.Error()
	}
	return msg + ": exit status " + strconv.Itoa(e.ExitCode)
}

func (e *Error) Unwrap() error { return e.Err }

// lastLine is the last non-empty stderr line that is not a hint, which is
// where git puts the reason ("fatal: ...", "error: ...").
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	for i := len(lines) - 1; i >= 0; i-- {
		l := strings.TrimSpace(lines[i])
		if l != "" && !strings.HasPrefix(l, "hint:") {
			return l
		}
	}
	return ""
}

// Run runs git with args in g.Dir and returns its stdout.
func (g *Git) Run(ctx context.Context, args ...string) (string, error) {
	return g.run(ctx, nil, args...)
}

func (g *Git) run(ctx context.Context, stdin []byte, args ...string) (string, error) {
	env, static := splitAuth(g.environ())
	auth, err := g.Cred.credAuth(ctx, args, "")
	if err != nil {
		return "", err
	}
	if g.Cred == nil && networked[subcommand(args)] {
		auth = static
	}
	out, err := g.runAuth(ctx, stdin, env, auth, args)
	var ge *Error
	if auth == nil || g.Cred == nil || !errors.As(err, &ge) || !authRefused.MatchString(ge.Stderr) {
		return out, err
	}
	// Refused though current by our clock: revoked, or the clocks
	// disagree. One new token, one more try, as the API does after a 401;
	// a refused command changed nothing at the remote.
	fresh, ferr := g.Cred.credAuth(ctx, args, auth.token)
	if ferr != nil || fresh == nil || fresh.token == auth.token {
		return out, err
	}
	return g.runAuth(ctx, stdin, env, fresh, args)
}

// pinnedEnv are the environment entries every git gets last (SEC-8).
var pinnedEnv = []string{"GIT_CONFIG_GLOBAL=" + os.DevNull, "GIT_CONFIG_NOSYSTEM=1"}

// pinnedArgs are the options every git gets first (SEC-8); an empty
// credential.helper drops every helper config named before.
var pinnedArgs = []string{"-c", "core.hooksPath=" + os.DevNull, "-c", "core.fsmonitor=false", "-c", "credential.helper="}

// argv is git's whole command line for args, with auth's helper options.
func (g *Git) argv(args []string, helper []string) []string {
	argv := append([]string{"git"}, pinnedArgs...)
	argv = append(argv, helper...)
	if g.GitDir != "" {
		argv = append(argv, "--git-dir="+g.GitDir)
	}
	if g.WorkTree != "" {
		argv = append(argv, "--work-tree="+g.WorkTree)
	}
	return append(argv, noDrivers(args)...)
}

// noDrivers adds --no-ext-diff and --no-textconv to a diff, log or show:
// a diff converge reads never runs a program the repository's config
// names for it.
func noDrivers(args []string) []string {
	i := subcommandAt(args)
	if i < 0 {
		return args
	}
	switch args[i] {
	case "diff", "log", "show":
	default:
		return args
	}
	out := append([]string{}, args[:i+1]...)
	out = append(out, "--no-ext-diff", "--no-textconv")
	return append(out, args[i+1:]...)
}

// runAuth runs git once with env, giving it auth's token (nil: none) on
// descriptor 3 through a credential helper.
func (g *Git) runAuth(ctx context.Context, stdin []byte, env []string, auth *gitAuth, args []string) (string, error) {
	var helper []string
	var extra []*os.File
	if auth != nil {
		h, f, err := credentialArgs(auth)
		if err != nil {
			return "", &Error{Subcommand: subcommand(args), ExitCode: -1, Err: err}
		}
		defer f.Close()
		helper, extra = h, []*os.File{f}
	}
	spec := proc.Spec{
		Argv: g.argv(args, helper), Dir: g.Dir, Env: env, Stdin: stdin,
		Grace: gitGrace, MaxOutput: -1, // git's output is read whole
		Direct:     true, // see proc.Spec.Direct
		ExtraFiles: extra,
	}
	if _, ok := ctx.Deadline(); !ok {
		spec.Budget = DefaultGitTimeout
	}
	p, err := proc.Run(ctx, spec)
	switch {
	case p.Interrupted != nil:
		err = p.Interrupted
	case err != nil:
		err = errors.Unwrap(err) // the OS error, without proc's "run git: "
	case p.TimedOut:
		err = fmt.Errorf("stopped after %s: %w", spec.Budget, context.DeadlineExceeded)
	case p.ExitCode == 0:
		return p.Stdout, nil
	}
	clean := redactorFor(env, auth)
	return clean(p.Stdout), &Error{
		Subcommand: subcommand(args),
		ExitCode:   p.ExitCode,
		Stderr:     clean(p.Stderr),
		Err:        redactedErr(err, clean),
	}
}

// redactedErr keeps errors.Is working for context errors while making sure
// no other error text carries a credential. A git that ran and failed has
// no error of its own: its exit code and stderr say it all.
func redactedErr(err error, clean func(string) string) error {
	if err == nil || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return err
	}
	return errors.New(clean(err.Error()))
}

// environ is git's environment: this process's, less what carries git
// config (SEC-8: config sources are pinned), the defaults, Env, the pins.
func (g *Git) environ() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !configVar(kv) {
			env = append(env, kv)
		}
	}
	env = append(env, "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "LC_ALL=C")
	env = append(env, g.Env...)
	return append(env, pinnedEnv...)
}

// configVar reports whether kv, of this process's environment, gives git
// config: GIT_CONFIG_PARAMETERS, GIT_CONFIG_COUNT/KEY_n/VALUE_n, or a
// config file of its own.
func configVar(kv string) bool {
	k, _, _ := strings.Cut(kv, "=")
	return strings.HasPrefix(k, "GIT_CONFIG")
}

// subcommand is the first argument that is not a global option.
func subcommand(args []string) string {
	if i := subcommandAt(args); i >= 0 {
		return args[i]
	}
	return ""
}

// subcommandAt is subcommand's index in args; -1 when there is none.
func subcommandAt(args []string) int {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return i
		}
	}
	return -1
}

var urlUserinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// redactorFor removes credentials from git output: userinfo in URLs,
// auth's token in every form, and any secret an Authorization header in
// env carries (a caller's own GIT_CONFIG_* header).
func redactorFor(env []string, auth *gitAuth) func(string) string {
	secrets := envSecrets(env)
	if auth != nil {
		secrets = append(secrets, auth.token, basicAuth(auth.user, auth.token))
	}
	sort.Slice(secrets, func(i, j int) bool { return len(secrets[i]) > len(secrets[j]) })
	return func(s string) string {
		s = urlUserinfo.ReplaceAllString(s, "${1}***@")
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, "***")
		}
		return s
	}
}

// envSecrets finds the credentials an http.extraHeader set through
// GIT_CONFIG_VALUE_n carries in env.
func envSecrets(env []string) []string {
	var out []string
	for _, kv := range env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || !strings.HasPrefix(k, "GIT_CONFIG_VALUE_") {
			continue
		}
		_, cred, ok := strings.Cut(v, "Authorization:")
		if !ok {
			continue
		}
		fields := strings.Fields(cred)
		if len(fields) == 0 {
			continue
		}
		c := fields[len(fields)-1]
		out = append(out, c)
		if dec, err := base64.StdEncoding.DecodeString(c); err == nil {
			if _, pw, ok := strings.Cut(string(dec), ":"); ok && pw != "" {
				out = append(out, pw)
			}
		}
	}
	return out
}

// CABundle writes to dst one PEM file holding the system's CA roots (when
// found) and caFiles, for GIT_SSL_CAINFO, which replaces rather than adds
// to git's trusted roots.
func CABundle(dst string, caFiles ...string) error {
	var buf bytes.Buffer
	for _, sys := range []string{
		"/etc/ssl/certs/ca-certificates.crt",
		"/etc/pki/tls/certs/ca-bundle.crt",
		"/etc/ssl/ca-bundle.pem",
		"/etc/ssl/cert.pem",
	} {
		if b, err := os.ReadFile(sys); err == nil {
			buf.Write(b)
			buf.WriteByte('\n')
			break
		}
	}
	for _, f := range caFiles {
		b, err := os.ReadFile(f)
		if err != nil {
			return fmt.Errorf("ca bundle: %w", err)
		}
		buf.Write(b)
		buf.WriteByte('\n')
	}
	if err := os.WriteFile(dst, buf.Bytes(), 0o644); err != nil {
		return fmt.Errorf("ca bundle: %w", err)
	}
	return nil
}
