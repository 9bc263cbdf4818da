// Package repo drives git through the git command line (never a Go git
// library, so behaviour matches what users and CI see) and discovers a
// repository's own build, test and lint commands (REPO-C1).
//
// Credentials reach git only through the environment (IF-2): see AuthEnv.
// Nothing in this package writes a token into a remote URL or a config
// file, and errors never carry one.
package repo

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"os"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/proc"
	"github.com/convergeloop/converge/internal/secure"
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
// Every command runs with the process environment, then the defaults
// below, then Env (later entries win):
//   - GIT_TERMINAL_PROMPT=0 and GCM_INTERACTIVE=never: a missing or
//     rejected credential fails at once instead of waiting for a human.
//   - LC_ALL=C: messages we match (push rejections) stay in English.
//
// System and global git config are kept on purpose: they carry proxies,
// CA settings and URL rewrites that the user's own git needs on this
// machine. Identity does not come from them: Commit sets it explicitly.
type Git struct {
	Dir string
	Env []string
	// Cred, when set, is the token of the network commands, asked for as
	// each starts (credential.go); Env then carries none.
	Cred *Credential
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
	auth, tok, err := g.Cred.credEnv(ctx, args, "")
	if err != nil {
		return "", err
	}
	out, err := g.runEnv(ctx, stdin, auth, args)
	var ge *Error
	if tok == "" || !errors.As(err, &ge) || !authRefused.MatchString(ge.Stderr) {
		return out, err
	}
	// Refused though current by our clock: revoked, or the clocks
	// disagree. One new token, one more try, as the API does after a 401;
	// a refused command changed nothing at the remote.
	auth, fresh, ferr := g.Cred.credEnv(ctx, args, tok)
	if ferr != nil || fresh == tok {
		return out, err
	}
	return g.runEnv(ctx, stdin, auth, args)
}

// runEnv runs git once with auth added to its environment.
func (g *Git) runEnv(ctx context.Context, stdin []byte, auth []string, args []string) (string, error) {
	env := append(g.environ(), auth...)
	spec := proc.Spec{
		Argv: append([]string{"git"}, args...), Dir: g.Dir, Env: env, Stdin: stdin,
		Grace: gitGrace, MaxOutput: -1, // git's output is read whole
		Direct: true, // see proc.Spec.Direct
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
	clean := redactorFor(env)
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

func (g *Git) environ() []string {
	env := append(os.Environ(), "GIT_TERMINAL_PROMPT=0", "GCM_INTERACTIVE=never", "LC_ALL=C")
	return append(env, g.Env...)
}

// subcommand is the first argument that is not a global option.
func subcommand(args []string) string {
	for i := 0; i < len(args); i++ {
		a := args[i]
		switch {
		case a == "-c" || a == "-C" || a == "--git-dir" || a == "--work-tree":
			i++
		case strings.HasPrefix(a, "-"):
		default:
			return a
		}
	}
	return ""
}

var urlUserinfo = regexp.MustCompile(`([a-zA-Z][a-zA-Z0-9+.-]*://)[^/@\s]+@`)

// redactorFor removes credentials from git output: userinfo in URLs and
// any secret carried by the Authorization header in env, the command's
// whole environment (a Credential's token included).
func redactorFor(env []string) func(string) string {
	secrets := envSecrets(env)
	return func(s string) string {
		s = urlUserinfo.ReplaceAllString(s, "${1}***@")
		for _, sec := range secrets {
			s = strings.ReplaceAll(s, sec, "***")
		}
		return s
	}
}

// envSecrets finds the credentials AuthEnv put in an environment, longest
// first.
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
	sort.Slice(out, func(i, j int) bool { return len(out[i]) > len(out[j]) })
	return out
}

// AuthEnv returns environment entries that give git a forge token and
// trusted CAs without writing either to disk (IF-2, IF-3): the token goes
// in an http.extraHeader set through GIT_CONFIG_COUNT/KEY/VALUE, in the
// Basic form GitHub accepts for git over HTTPS ("x-access-token:TOKEN").
// An empty token adds no header. caFiles[0], when given, becomes
// GIT_SSL_CAINFO; git takes a single CA file, so several must be joined
// first (see CABundle). The header goes to whatever host the command
// talks to: prefer AuthEnvFor when the remote is known.
//
// The GIT_CONFIG_* entries replace any the caller's environment set.
func AuthEnv(token string, caFiles ...string) []string {
	return authEnv("", token, caFiles)
}

// AuthEnvFor is AuthEnv with the header scoped to remoteURL's scheme and
// host, so that a redirect or a submodule on another host never receives
// the token. A remote that is neither https nor http to a loopback address
// gets no header (SEC-6); GitAuthEnv reports that as an error instead.
func AuthEnvFor(remoteURL, token string, caFiles ...string) []string {
	scope := urlScope(remoteURL)
	if scope == "" {
		// No scheme (scp-style ssh): an http header has no use there, and
		// unscoped it would reach every host.
		token = ""
	}
	return authEnv(scope, token, caFiles)
}

func authEnv(scope, token string, caFiles []string) []string {
	var kv [][2]string
	key := func(name string) string {
		if scope == "" {
			return "http." + name
		}
		return "http." + scope + "." + name
	}
	var env []string
	if token != "" {
		// An empty helper list keeps stored credentials (another account's,
		// perhaps) out of the exchange.
		kv = append(kv, [2]string{"credential.helper", ""})
		// A remote git would reach in clear gets no header at all: the
		// fetch then fails for want of credentials instead of leaking them
		// (SEC-6). GitAuthEnv says so up front.
		if scope == "" || secure.CheckTokenURLString(scope) == nil {
			kv = append(kv, [2]string{key("extraHeader"), "Authorization: Basic " + BasicAuth(token)})
		}
	}
	// The CA goes in GIT_SSL_CAINFO even when scoped: git 2.39 with
	// libcurl-gnutls was seen ignoring http.sslCAInfo from GIT_CONFIG_*
	// and -c, while honouring the variable.
	if len(caFiles) > 0 && caFiles[0] != "" {
		env = append(env, "GIT_SSL_CAINFO="+caFiles[0])
	}
	if len(kv) > 0 {
		env = append(env, "GIT_CONFIG_COUNT="+strconv.Itoa(len(kv)))
		for i, p := range kv {
			env = append(env, fmt.Sprintf("GIT_CONFIG_KEY_%d=%s", i, p[0]), fmt.Sprintf("GIT_CONFIG_VALUE_%d=%s", i, p[1]))
		}
	}
	return env
}

// urlScope reduces a remote URL to scheme://host[:port]/ for http.<url>.*
// config matching.
func urlScope(raw string) string {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return ""
	}
	host, _, _ := strings.Cut(rest, "/")
	if i := strings.LastIndex(host, "@"); i >= 0 {
		host = host[i+1:]
	}
	return scheme + "://" + host + "/"
}

// BasicAuth is the credential of the Authorization header AuthEnv sends.
func BasicAuth(token string) string {
	return base64.StdEncoding.EncodeToString([]byte("x-access-token:" + token))
}

// Secrets lists the forms in which token can appear in output, for a
// redactor (SEC-3): the token and the header credential derived from it.
func Secrets(token string) []string {
	if token == "" {
		return nil
	}
	return []string{token, BasicAuth(token)}
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
