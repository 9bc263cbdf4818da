package gitlab

import (
	"fmt"
	"net/url"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/secure"
)

// GitLab serves its API, its web pages and git from one host (GitLab.com
// and self-managed alike), so SEC-6's hosts are compared plainly: case and
// a default port aside.

func canonHost(h string) string {
	h = strings.ToLower(h)
	for _, p := range []string{":443", ":80"} {
		h = strings.TrimSuffix(h, p)
	}
	return h
}

// CheckHosts refuses a merge request whose host is not the API's (SEC-6):
// the token resolved for the API must not be spent on, or git pointed at,
// a host the API does not vouch for. allowMismatch is the user's word that
// the API does serve that merge request.
func CheckHosts(ref forge.PRRef, apiURL string, allowMismatch bool) error {
	api, err := parseAPIURL(apiURL)
	if err != nil {
		return err
	}
	if allowMismatch || canonHost(ref.Host) == canonHost(api.Host) {
		return nil
	}
	return fmt.Errorf("merge request host %s is not the API's host %s (--api-url): give a merge request on %s or an --api-url for %s, or pass --allow-host-mismatch if %s really serves it",
		ref.Host, api.Host, api.Host, ref.Host, api.Host)
}

// CloneURL checks the clone URL the API reported (http_url_to_repo), or
// derives <api origin>/<project>.git when it reported none, and returns
// the URL git may be given the token for (SEC-6): on the API's host, with
// no credentials in it, https or plain http to loopback only. Git takes the
// token as the password of any username.
func CloneURL(apiURL, reported string, ref forge.PRRef) (string, error) {
	api, err := parseAPIURL(apiURL)
	if err != nil {
		return "", err
	}
	if strings.TrimSpace(reported) == "" {
		// Beside the API, under the instance's relative URL root if any.
		root := strings.TrimSuffix(api.Path, "/api/v4")
		reported = fmt.Sprintf("%s://%s%s/%s.git", api.Scheme, api.Host, root, ref.FullName())
	}
	u, err := url.Parse(reported)
	if err != nil || u.Host == "" {
		return "", fmt.Errorf("the API reported an unusable clone URL")
	}
	if u.User != nil {
		return "", fmt.Errorf("the API reported a clone URL with credentials in it (%s); refusing it", u.Redacted())
	}
	if canonHost(u.Host) != canonHost(api.Host) {
		return "", fmt.Errorf("the API reported clone URL %s on %s, not on the API's host %s; refusing to send the token there", u.Redacted(), u.Host, api.Host)
	}
	if err := secure.CheckTokenURL(u); err != nil {
		return "", err
	}
	return u.String(), nil
}
