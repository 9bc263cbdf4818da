package cli

import (
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	glclient "github.com/convergeloop/converge/internal/forge/gitlab"
	"github.com/convergeloop/converge/internal/repo"
)

// forgeSite answers, for one forge kind, what a run needs before it has
// a client: the API's endpoints, the host a token may go to and the clone
// URL git gets it for (SEC-6), and where the token comes from (IF-2).
// Each answer is the forge's own package's; this only picks the package,
// so no command spells out a forge's rules.
type forgeSite struct{ kind forge.Kind }

// gitUser is the user name git's credential carries with the token
// (SEC-8): GitLab takes oauth2 with every kind of token, GitHub
// x-access-token.
func (s forgeSite) gitUser() string {
	if s.kind == forge.GitLab {
		return repo.GitLabUser
	}
	return repo.GitHubUser
}

// siteOf is the site of the forge ref is on.
func siteOf(ref forge.PRRef) forgeSite { return forgeSite{kind: ref.Forge} }

// endpoints are the REST and GraphQL URLs for ref, from --api-url when
// given.
func (s forgeSite) endpoints(ref forge.PRRef, apiURL string, getenv func(string) string) (rest, gql string, err error) {
	if s.kind == forge.GitLab {
		return glclient.Endpoints(ref, apiURL)
	}
	return ghclient.Endpoints(ref, apiURL, getenv)
}

// webHost is the web host the API at rest serves.
func (s forgeSite) webHost(rest string) (string, error) {
	if s.kind == forge.GitLab {
		return glclient.WebHost(rest)
	}
	return ghclient.WebHost(rest)
}

// checkHosts refuses a PR on another host than the API's (SEC-6).
func (s forgeSite) checkHosts(ref forge.PRRef, rest string, allow bool) error {
	if s.kind == forge.GitLab {
		return glclient.CheckHosts(ref, rest, allow)
	}
	return ghclient.CheckHosts(ref, rest, allow)
}

// cloneURL checks the clone URL the API reported for ref's repository,
// or derives one, so git gets the token only on the API's host (SEC-6).
func (s forgeSite) cloneURL(rest, reported string, ref forge.PRRef) (string, error) {
	if s.kind == forge.GitLab {
		return glclient.CloneURL(rest, reported, ref)
	}
	return ghclient.CloneURL(rest, reported, ref.Owner, ref.Repo)
}

// resolveToken finds converge's token for host by the forge's own
// precedence and names where it came from.
func (s forgeSite) resolveToken(host, flag string, getenv func(string) string) (token, source string, err error) {
	if s.kind == forge.GitLab {
		return glclient.ResolveToken(host, flag, getenv)
	}
	return ghclient.ResolveToken(host, flag, getenv, ghclient.GHAuthToken)
}

// forgeFlag is a --forge flag: github or gitlab, refused at parse time
// otherwise (IF-1: exit 2 with the allowed values).
type forgeFlag struct{ kind *forge.Kind }

func (f forgeFlag) String() string {
	if f.kind == nil {
		return forge.GitHub.String()
	}
	return f.kind.String()
}

func (f forgeFlag) Set(s string) error {
	k, err := forge.ParseKind(s)
	if err != nil {
		return err
	}
	*f.kind = k
	return nil
}

func (forgeFlag) Type() string { return "forge" }
