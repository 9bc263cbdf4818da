package provider

import (
	"errors"
	"net/http"
)

// Webhooks reads a forge's webhook deliveries: whether a delivery is the
// forge's, whether it is authentic, the id it is deduplicated by, and
// what it tells. The server does the rest, for every forge alike:
// deduplication, wakes, rearms, answers.
type Webhooks interface {
	// Claims reports whether a delivery with these headers is the
	// forge's. A delivery no forge claims is read by the server's own
	// forge, and refused there.
	Claims(h http.Header) bool
	// Event is the delivery's event name, for logs and metrics.
	Event(h http.Header) string
	// Verify checks that the delivery comes from the forge: body signed
	// with secret, or the secret sent as a token. It returns an error
	// wrapping ErrUnsigned when there is no secret or no proof, another
	// error when the proof is wrong. An empty secret verifies nothing.
	Verify(secret []byte, h http.Header, body []byte) error
	// Delivery is the id the delivery is deduplicated by (unique per
	// delivery and the same on every redelivery of it, prefixed so two
	// forges' ids never meet); an error naming the missing header when
	// there is none.
	Delivery(h http.Header, body []byte) (string, error)
	// Read is what the delivery tells: ErrPing for the forge's check that
	// the hook answers, ErrIgnored for an event or action converge does
	// not follow, another error for a payload that is not the event's.
	Read(event string, body []byte) (Notice, error)
}

// Notice is what a webhook delivery tells converge: which repository,
// and which PRs by number, head commit or branch. Nothing else in it is
// believed: a loop woken by it observes the forge afresh.
type Notice struct {
	// Host is the forge's host as the payload names it (GitLab's
	// project.web_url); empty matches a target on any host.
	Host string
	// Repo is owner/name; on GitLab the project's full path.
	Repo     string
	Numbers  []int
	SHAs     []string
	Branches []string
	// Membership: a PR change that may add the PR to a watched
	// repository's set (opened, labelled, ...).
	Membership bool
	// Rearm: the PR has a new head, was reopened, or has a new review,
	// line comment, top-level comment or reopened thread, so a verdict its
	// finished run published may no longer hold (PR-T10, PR-T14).
	Rearm bool
	// CI: a check run, check suite, pipeline or status changed on the
	// commits in SHAs: a verdict published on one of them may no longer
	// hold (PR-T14: CI red or re-run on the head).
	CI bool
}

// Errors of Webhooks.
var (
	// ErrUnsigned is a delivery with no proof, or a server with no secret.
	ErrUnsigned = errors.New("unsigned delivery")
	// ErrIgnored marks an event, or an action, converge does not follow.
	ErrIgnored = errors.New("ignored")
	// ErrPing marks the forge's check that the hook answers.
	ErrPing = errors.New("ping")
)

// NonEmpty is s as a list, empty when s is.
func NonEmpty(s string) []string {
	if s == "" {
		return nil
	}
	return []string{s}
}
