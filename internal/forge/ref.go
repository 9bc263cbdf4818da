package forge

import (
	"fmt"
	"net/url"
	"strconv"
	"strings"
)

// Kind is which forge a PR lives on. The zero value is GitHub, so a
// reference stored before converge knew another forge reads back as what
// it was.
type Kind string

// The forges converge drives.
const (
	GitHub Kind = ""
	GitLab Kind = "gitlab"
)

// String names the forge for people and flags: github or gitlab.
func (k Kind) String() string {
	if k == GitHub {
		return "github"
	}
	return string(k)
}

// ParseKind reads a --forge value: github or gitlab.
func ParseKind(s string) (Kind, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "github":
		return GitHub, nil
	case "gitlab":
		return GitLab, nil
	}
	return GitHub, fmt.Errorf("unknown forge %q: want github or gitlab", s)
}

// PRRef names one pull request (on GitLab a merge request) on one host.
type PRRef struct {
	Host   string // host[:port] of the web URL, e.g. github.com
	Scheme string // https, or http for a local emulator
	// Owner is the repository's owner; on GitLab the project's namespace,
	// which may hold subgroups ("group/sub").
	Owner  string
	Repo   string
	Number int // the PR number; on GitLab the merge request's iid
	// Forge is the forge the URL belongs to, told by the URL's shape.
	Forge Kind `json:",omitempty"`
}

// CommitURL is where the PR's web page shows one of its commits: GitHub
// at PR/commits/SHA, GitLab at MR/diffs?commit_id=SHA (its MR/commits is
// only the list).
func (r PRRef) CommitURL(sha string) string {
	if r.Forge == GitLab {
		return r.String() + "/diffs?commit_id=" + sha
	}
	return r.String() + "/commits/" + sha
}

// String gives the PR's web URL.
func (r PRRef) String() string {
	scheme := r.Scheme
	if scheme == "" {
		scheme = "https"
	}
	if r.Forge == GitLab {
		return fmt.Sprintf("%s://%s/%s/%s/-/merge_requests/%d", scheme, r.Host, r.Owner, r.Repo, r.Number)
	}
	return fmt.Sprintf("%s://%s/%s/%s/pull/%d", scheme, r.Host, r.Owner, r.Repo, r.Number)
}

// FullName is owner/repo (on GitLab the project's full path).
func (r PRRef) FullName() string { return r.Owner + "/" + r.Repo }

// wantPRURL is what every ParsePRURL error says is wanted.
const wantPRURL = "want https://HOST/OWNER/REPO/pull/NUMBER or https://HOST/GROUP/PROJECT/-/merge_requests/IID"

// ParsePRURL parses a GitHub pull request URL, https://HOST/OWNER/REPO/pull/N,
// or a GitLab merge request URL,
// https://HOST/GROUP[/SUBGROUP...]/PROJECT/-/merge_requests/IID (a
// trailing path such as /files or a fragment is allowed). Errors say what
// shape was expected.
func ParsePRURL(s string) (PRRef, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http") {
		return PRRef{}, fmt.Errorf("malformed PR URL %q: %s", s, wantPRURL)
	}
	parts := strings.Split(strings.Trim(u.Path, "/"), "/")
	var (
		names []string
		num   string
		kind  Kind
	)
	if i := indexOf(parts, "-"); i >= 0 && i+1 < len(parts) && parts[i+1] == "merge_requests" {
		if i < 2 || i+2 >= len(parts) {
			return PRRef{}, fmt.Errorf("malformed PR URL %q: a merge request URL names a group, a project and a number; %s", s, wantPRURL)
		}
		names, num, kind = parts[:i], parts[i+2], GitLab
	} else {
		if len(parts) < 4 || parts[2] != "pull" {
			return PRRef{}, fmt.Errorf("malformed PR URL %q: %s", s, wantPRURL)
		}
		names, num = parts[:2], parts[3]
	}
	for _, name := range names {
		if !isName(name) {
			return PRRef{}, fmt.Errorf("malformed PR URL %q: %q is not an owner, group or repository name (letters, digits, '.', '-', '_'); %s", s, name, wantPRURL)
		}
	}
	n, err := strconv.Atoi(num)
	if err != nil || n <= 0 {
		return PRRef{}, fmt.Errorf("malformed PR URL %q: %q is not a PR number; %s", s, num, wantPRURL)
	}
	last := len(names) - 1
	return PRRef{Host: u.Host, Scheme: u.Scheme, Owner: strings.Join(names[:last], "/"), Repo: names[last], Number: n, Forge: kind}, nil
}

func indexOf(xs []string, x string) int {
	for i, v := range xs {
		if v == x {
			return i
		}
	}
	return -1
}

// isName reports a name GitHub or GitLab allows for an owner, a group or a
// repository. The path arrives decoded, so without this "o%3Fq" would give
// an owner whose URL (String) reads back as another PR or none.
func isName(s string) bool {
	if s == "" || s == "." || s == ".." {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '.' || c == '-' || c == '_') {
			return false
		}
	}
	return true
}
