package repo

import (
	"encoding/base64"
	"fmt"
	"os"
	"strings"

	"github.com/convergeloop/converge/internal/secure"
)

// GitHubUser is the user name GitHub takes with a token as the password
// of git over HTTPS (a personal token, an App's installation token).
const GitHubUser = "x-access-token"

// GitLabUser is the user name GitLab takes with a token as the password
// of git over HTTPS: the only one an OAuth token works with, and one a
// personal, project or group token works with too.
const GitLabUser = "oauth2"

// credentialHelper is git's credential helper (SEC-8): it answers "get"
// with what converge put on descriptor 3, and ignores "store" and
// "erase". The script holds no secret; /dev/fd/3 reopens the sealed
// memory file (credfd_linux.go) from its start, so every ask reads it
// whole.
const credentialHelper = `!f() { test "$1" = get && cat /dev/fd/3; }; f`

// gitAuth is a token for the remotes of one origin (scheme://host[:port]/).
type gitAuth struct {
	scope, user, token string
}

// credMark starts the Env entry that carries a gitAuth (AuthEnvFor). It
// holds NUL bytes, which no environment can: os/exec and syscall refuse
// to start a process with such an entry, so the token can never reach a
// process's environment through it, even when an Env is handed to
// something other than Git; Git takes it out before it runs git.
const credMark = "\x00converge-git-credential\x00"

// entry is a as an Env entry.
func (a gitAuth) entry() string {
	return credMark + a.scope + "\x00" + a.user + "\x00" + a.token
}

// parseAuth reads an entry made by gitAuth.entry.
func parseAuth(kv string) (gitAuth, bool) {
	rest, ok := strings.CutPrefix(kv, credMark)
	if !ok {
		return gitAuth{}, false
	}
	f := strings.SplitN(rest, "\x00", 3)
	if len(f) != 3 {
		return gitAuth{}, false
	}
	return gitAuth{scope: f[0], user: f[1], token: f[2]}, true
}

// splitAuth is env without the gitAuth entries, and the last of them.
func splitAuth(env []string) ([]string, *gitAuth) {
	var out []string
	var auth *gitAuth
	for _, kv := range env {
		if a, ok := parseAuth(kv); ok {
			auth = &a
			continue
		}
		if strings.HasPrefix(kv, credMark) {
			continue // malformed: still never passed on
		}
		out = append(out, kv)
	}
	return out, auth
}

// AuthEnvFor returns entries for Git.Env that give git a forge token for
// remoteURL's origin and trusted CAs, without putting the token in any
// process's environment, argv or file (SEC-8, IF-2):
//   - caFiles[0], when given, becomes GIT_SSL_CAINFO; git takes a single
//     CA file, so several must be joined first (see CABundle).
//   - the token is one entry only Git reads (credMark): no process can be
//     started with it. Git hands it, for a command that reaches the
//     remote (clone, fetch, push, ls-remote…) and for no other, to a
//     credential helper scoped to the remote's scheme and host, through a
//     sealed in-memory file inherited as descriptor 3. git asks the
//     helper only when the server answers 401, so a redirect or a
//     submodule on another host never receives the token.
//
// The user name is GitHubUser's; AuthEnvForUser names another. A remote
// that is neither https nor http to a loopback address gets no token
// (SEC-6); GitAuthEnv reports that as an error instead.
func AuthEnvFor(remoteURL, token string, caFiles ...string) []string {
	return AuthEnvForUser(remoteURL, GitHubUser, token, caFiles...)
}

// AuthEnvForUser is AuthEnvFor with user as the credential's user name
// (GitLabUser for GitLab).
func AuthEnvForUser(remoteURL, user, token string, caFiles ...string) []string {
	var env []string
	// The CA goes in GIT_SSL_CAINFO: git 2.39 with libcurl-gnutls was seen
	// ignoring http.sslCAInfo from GIT_CONFIG_* and -c, while honouring
	// the variable.
	if len(caFiles) > 0 && caFiles[0] != "" {
		env = append(env, "GIT_SSL_CAINFO="+caFiles[0])
	}
	if a := authFor(remoteURL, user, token); a != nil {
		env = append(env, a.entry())
	}
	return env
}

// authFor is token's gitAuth on remoteURL's origin; nil without a token,
// for a remote without a scheme (scp-style ssh: a helper of git over
// http has no use there) and for one git would reach in clear (SEC-6).
func authFor(remoteURL, user, token string) *gitAuth {
	scope := urlScope(remoteURL)
	if token == "" || scope == "" || secure.CheckTokenURLString(scope) != nil {
		return nil
	}
	if user == "" {
		user = GitHubUser
	}
	return &gitAuth{scope: scope, user: user, token: token}
}

// urlScope reduces a remote URL to scheme://host[:port]/ for
// credential.<url>.* config matching.
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

// GitAuthEnv is AuthEnvFor for a remote the caller means to give the
// token to. It refuses (SEC-6) a remote git would reach in clear (not
// https, and not plain http to a loopback address such as a local
// emulator) so the user hears why, rather than meeting a failed fetch.
func GitAuthEnv(remoteURL, token string, caFiles ...string) ([]string, error) {
	return GitAuthEnvUser(remoteURL, GitHubUser, token, caFiles...)
}

// GitAuthEnvUser is GitAuthEnv with user as the credential's user name.
func GitAuthEnvUser(remoteURL, user, token string, caFiles ...string) ([]string, error) {
	if token != "" {
		if err := secure.CheckTokenURLString(remoteURL); err != nil {
			return nil, err
		}
	}
	return AuthEnvForUser(remoteURL, user, token, caFiles...), nil
}

// HasToken reports whether env carries a token AuthEnvFor put there.
func HasToken(env []string) bool {
	_, a := splitAuth(env)
	return a != nil
}

// TokenScope is the origin (scheme://host[:port]/) and the user name of
// the token AuthEnvFor put in env; "" and "" when it holds none.
func TokenScope(env []string) (scope, user string) {
	if _, a := splitAuth(env); a != nil {
		return a.scope, a.user
	}
	return "", ""
}

// credentialArgs are the -c options that make git ask a's helper, and
// the descriptor the helper reads: the caller passes it as the process's
// first extra file (descriptor 3) and closes it after.
func credentialArgs(a *gitAuth) ([]string, *os.File, error) {
	f, err := credentialFile([]byte("username=" + a.user + "\npassword=" + a.token + "\n"))
	if err != nil {
		return nil, nil, fmt.Errorf("git credential: %w", err)
	}
	return []string{"-c", "credential." + a.scope + ".helper=" + credentialHelper}, f, nil
}

// BasicAuth is the credential of the Authorization header git sends for
// a token with GitHubUser's name.
func BasicAuth(token string) string { return basicAuth(GitHubUser, token) }

func basicAuth(user, token string) string {
	return base64.StdEncoding.EncodeToString([]byte(user + ":" + token))
}

// Secrets lists the forms in which token can appear in output, for a
// redactor (SEC-3): the token and the header credentials derived from it.
func Secrets(token string) []string {
	if token == "" {
		return nil
	}
	return []string{token, BasicAuth(token), basicAuth(GitLabUser, token)}
}
