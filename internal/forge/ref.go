package forge

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// PRRef names one pull request on one host.
type PRRef struct {
	Host   string // host[:port] of the web URL, e.g. github.com
	Scheme string // https, or http for a local emulator
	Owner  string
	Repo   string
	Number int
}

// String gives the PR's web URL.
func (r PRRef) String() string {
	scheme := r.Scheme
	if scheme == "" {
		scheme = "https"
	}
	return fmt.Sprintf("%s://%s/%s/%s/pull/%d", scheme, r.Host, r.Owner, r.Repo, r.Number)
}

// FullName is owner/repo.
func (r PRRef) FullName() string { return r.Owner + "/" + r.Repo }

// ParsePRURL parses https://HOST/OWNER/REPO/pull/N (a trailing path such as
// /files or a fragment is allowed). Errors say what shape was expected.
func ParsePRURL(s string) (PRRef, error) {
	const want = "want https://HOST/OWNER/REPO/pull/NUMBER"
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return PRRef{}, fmt.Errorf("malformed PR URL %q: %s", s, want)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	if len(parts) < 4 || parts[2] != "pull" || parts[0] == "" || parts[1] == "" {
		return PRRef{}, fmt.Errorf("malformed PR URL %q: %s", s, want)
	}
	for _, name := range parts[:2] {
		if !isName(name) {
			return PRRef{}, fmt.Errorf("malformed PR URL %q: %q is not an owner or repository name (letters, digits, '.', '-', '_'); %s", s, name, want)
		}
	}
	n, err := strconv.Atoi(parts[3])
	if err != nil || n <= 0 {
		return PRRef{}, fmt.Errorf("malformed PR URL %q: %q is not a PR number; %s", s, parts[3], want)
	}
	return PRRef{Host: u.Host, Scheme: u.Scheme, Owner: parts[0], Repo: parts[1], Number: n}, nil
}

// isName reports a name GitHub allows for an owner or a repository. The
// path arrives decoded, so without this "o%3Fq" would give an owner whose
// URL (String) reads back as another PR or none.
func isName(s string) bool {
	if s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
