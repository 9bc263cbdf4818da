// Package forgetest is the contract every forge.Forge backend passes.
//
// As litestream keeps one suite its replica clients all run, a backend's
// own test calls Run with a constructor of fresh harnesses; Run runs every
// contract test as a subtest against one. The GitHub client runs it
// against the emulator (always) and real GitHub (when a token and a test
// PR are given); the in-memory fakeforge runs it too, so engine and loop
// tests built on the fake rest on the same behaviour.
//
// A Harness is the Forge under test plus a Fixture: the world around the
// PR, changed behind the Forge's back by a second identity (the reviewer).
package forgetest

import (
	"context"
	"errors"
	"time"

	"github.com/convergeloop/converge/internal/forge"
)

// Harness is one backend under test with a pull request to test it on.
type Harness struct {
	// Forge is the backend under test, acting as converge: an identity
	// with write access to the repository (the PR's author or not).
	Forge forge.Forge
	// Fixture sets up the world around the PR without going through Forge.
	Fixture Fixture
	// CheckRuns is a Forge of the same backend holding a credential that
	// may create check runs (on GitHub an App installation token; it may be
	// Forge itself), or nil when none is at hand or the backend is no
	// forge.CheckRunner. Forge itself may report check runs unsupported
	// (see Unsupported).
	CheckRuns forge.CheckRunner
	// Rejected is the same backend holding a credential the forge refuses;
	// nil skips the authentication checks.
	Rejected forge.Forge
	// Settle is how long a read may lag a write on this forge (real GitHub
	// is eventually consistent): reads that must show a write are retried
	// for this long. Zero means every read shows every earlier write.
	Settle time.Duration
	// CommentOnlyReviews says the forge has no review objects: a review is
	// only the inline comments a reviewer left on one commit (GitLab, where
	// the backend groups a reviewer's diff notes by commit). Such a review
	// has no body and cannot exist without a comment, so the suite submits
	// no comment-less review and does not compare bodies; every other rule
	// holds. False (GitHub, fakeforge) keeps the full rules.
	CommentOnlyReviews bool
}

// Fixture changes and describes the world around the harness's PR, as a
// second identity or with the backend's own means (an emulator's seeding
// API, a fake's helpers, a second token on a real forge).
type Fixture interface {
	// Facts describes the PR as the fixture knows it, read without the
	// Forge under test. The head moves with Push, so read it again then.
	Facts(ctx context.Context) (Facts, error)
	// Review submits a COMMENTED review as the reviewer on the current
	// head, each comment opening its own thread, and returns the review's
	// id as Observe reports it (Review.ID). With Harness.CommentOnlyReviews
	// the body is dropped and comments are required.
	Review(ctx context.Context, r Review) (string, error)
	// Comment posts a top-level PR conversation comment as the reviewer.
	Comment(ctx context.Context, body string) error
	// Push adds a commit on the PR's head branch that changes no line of
	// Facts.Path, and returns its SHA; an error wrapping
	// errors.ErrUnsupported when the fixture cannot push.
	Push(ctx context.Context) (string, error)
}

// HeadResetter is a Fixture that can force-push the PR's head branch back
// to an earlier commit of it, as a human's `git push --force` does
// (PR-T1(4)). ResetHead returns an error wrapping errors.ErrUnsupported
// when it cannot.
type HeadResetter interface {
	ResetHead(ctx context.Context, sha string) error
}

// Facts is what the fixture knows of the PR.
type Facts struct {
	PR forge.PRRef
	// Author is the PR author's login as Observe reports it.
	Author string
	// Viewer is the login Forge acts as (Forge.Viewer), as reviews,
	// comments and events by it show it.
	Viewer string
	// Reviewer is the login the fixture's reviews and comments show; it
	// may equal Viewer on a forge where only one identity is at hand.
	Reviewer string
	HeadRef  string
	BaseRef  string
	HeadSHA  string
	// Commits is how many commits the PR has; 0 when unknown.
	Commits int
	// CloneURL is the repository's git URL; "" when unknown.
	CloneURL string
	// MergeState is the merge state Observe must report; "" when any known
	// state will do.
	MergeState forge.MergeState
	// Path and Line name a line the PR changed on its head, where inline
	// review comments can go.
	Path string
	Line int
	// LineText is that line's text on the head, without its newline; ""
	// when unknown (the diff hunk's last line is then not compared).
	LineText string
	// Requestable are reviewers Forge may request; the union test needs
	// two and is skipped with fewer. None may be the PR's author.
	Requestable []Reviewer
	// Permissions are logins whose permission on the repository is known,
	// beyond the viewer's (which must be admin, maintain or write).
	Permissions map[string]forge.Permission
}

// Reviewer is one login that can be requested for review.
type Reviewer struct {
	Login string // as RequestReviews takes it
	Bot   bool   // passed in botLogins rather than userLogins
	// Shown is the login Observe lists in RequestedReviewers (a bot may
	// show under another name, PR-O2); Login when empty.
	Shown string
}

func (r Reviewer) shown() string {
	if r.Shown != "" {
		return r.Shown
	}
	return r.Login
}

// Review is a review for the fixture to submit.
type Review struct {
	Body     string
	Comments []Comment
}

// Comment is one inline review comment, on the head's side of the diff.
type Comment struct {
	Path string
	Line int
	Body string
}

// Marker is in every body the suite writes, so a fixture on a real forge
// can find what to clean up.
const Marker = "forgetest"

// Unsupported reports whether err is a backend's way of saying it cannot
// do this with the credential it holds: an authentication-kind refusal
// (GitHub answers 403 to a check run from a user token) or an error
// wrapping errors.ErrUnsupported.
func Unsupported(err error) bool {
	return err != nil && (forge.KindOf(err) == forge.KindAuth || errors.Is(err, errors.ErrUnsupported))
}
