// Package duo is GitLab Duo Code Review as a review bot: who it is
// (PR-O2), how a review is requested and its start proven (PR-O5, PR-S1),
// and the fail-closed reading of what it leaves on a merge request
// (PR-O2, PR-O3, PR-O4). The PR loop sees it only through its ReviewBot
// interface; the GitLab backend (internal/forge/gitlab) turns GitLab's
// notes into the forge.Reviews, threads and events it reads.
//
// # What Duo does, as documented
//
// Requesting: a review is requested by making the bot user @GitLabDuo a
// reviewer of the merge request ("assign GitLab Duo as reviewer", or the
// quick action /assign_reviewer @GitLabDuo); re-requesting a review from
// it starts a new one. Both the classic GitLab Duo Code Review and the
// agentic Code Review Flow run on that request and post as @GitLabDuo.
//   - https://docs.gitlab.com/user/gitlab_duo/code_review_classic
//   - https://docs.gitlab.com/user/project/merge_requests/duo_in_merge_requests
//   - https://docs.gitlab.com/user/duo_agent_platform/flows/foundational_flows/code_review
//   - https://gitlab.com/gitlab-org/gitlab/-/issues/517386 (how to use:
//     assign @GitLabDuo as a reviewer, or /assign_reviewer @GitLabDuo)
//
// Asking again when Duo is already a reviewer is GitLab's re-request
// review (the quick action /rerequest_review @GitLabDuo,
// https://gitlab.com/gitlab-org/gitlab/-/merge_requests/53468; GitLab's
// RequestReviewService, https://gitlab.com/gitlab-org/gitlab/-/merge_requests/230577):
// setting reviewer_ids to a list that already holds it asks nothing.
// GitLab keeps Duo among the reviewers after it finished (state
// reviewed), so only a reviewer still unreviewed or review_started is a
// pending request (forge.PullRequest.RequestedReviewers).
//
// The bot user is the internal user Users::Internal.duo_code_review_bot,
// username "GitLabDuo", name "GitLab Duo" (GitLab's source,
// lib/users/internal.rb). Agent Platform service accounts post "on behalf
// of @GitLabDuo" (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/213555).
//
// Start and finish, from GitLab's source (ee/lib/gitlab/llm/ai_gateway/
// completions/review_merge_request.rb, ee/app/services/llm/
// review_merge_request_service.rb, app/services/system_notes/
// merge_requests_service.rb, ee/app/models/ai/code_review_messages.rb):
//  1. On the request, Duo posts a progress note as @GitLabDuo, a system
//     note "is reviewing your merge request and will let you know when
//     it's finished" (older releases: a plain note "Hey :wave: I'm
//     starting to review your merge request and I will let you know when
//     I'm finished."), and sets its reviewer state to review_started
//     (GET .../merge_requests/:iid/reviewers). The progress note is
//     deleted when the review ends, whatever its outcome.
//  2. Findings are diff notes by @GitLabDuo, published together as one
//     review, each positioned on the merge request's diff_refs at the
//     time (position.head_sha is the commit it reviewed), followed by a
//     summary note.
//  3. A review that found nothing posts the note "I finished my review
//     and found nothing to comment on. Nice work! :tada:" (the classic
//     review may append its description of the change).
//  4. A review with nothing to read posts ":wave: There's nothing for me
//     to review."; failures post "I have encountered some problems while
//     I was reviewing. Please try again later." or a ":warning: …" note
//     (no GitLab Credits left, flow not enabled, could not start, timed
//     out, "I found issues to comment on but was unable to post the
//     inline comments due to line number mismatches").
//  5. When it ends, Duo's reviewer state becomes reviewed.
//  6. Since 2026 Duo also approves the merge request when a review finds
//     nothing, and requests changes whenever it leaves comments; a
//     standing change request stays until a clean review clears it, and
//     a new review first removes Duo's earlier approval
//     (https://gitlab.com/gitlab-org/gitlab/-/merge_requests/254981,
//     https://gitlab.com/gitlab-org/gitlab/-/issues/507336). GitLab shows
//     these as the system notes "approved this merge request", "requested
//     changes" and "unapproved this merge request" by @GitLabDuo.
//
// # What converge sees, and how it reads it
//
// GitLab has no review object; the backend synthesises forge.Reviews: an
// APPROVED one from an approval note, CHANGES_REQUESTED from "requested
// changes", DISMISSED from "unapproved this merge request" (CommitSHA:
// the head of the merge request version current at the note), and one
// COMMENTED review per (author, position.head_sha) group of diff-note
// discussions (ID "diffnotes:<author>:<head_sha>", CommentCount the
// number of discussions, each first note's ReviewID that ID). Duo's
// summary and status notes are top-level notes: pr.IssueComments.
//
// Read is fail-closed, as Copilot's: only a proof that Duo reviewed the
// commit and found nothing is clean — its approval of the commit, with
// its own latest top-level note since its previous review saying, in its
// own words (not quoted, not fenced) and first, that it finished and
// found nothing, and no comment of its own on that commit. Findings are
// its diff notes on the commit, when the group's count and the visible
// threads agree (else unsettled). A change request reads as the comments
// on its commit. Everything else — a withdrawn approval, an error, a
// quota, nothing to review, an approval with no such note or with
// comments on the same commit — is no signal.
//
// # The start event
//
// StartedEvent is "duo_review_started". The GitLab backend reports it in
// IssueEvents (forge.Event{ID: the note's id, Event: StartedEvent, Actor:
// the note's author, CreatedAt: its time}) for every note by @GitLabDuo
// that only a running or finished review writes: the progress system note
// ("is reviewing your merge request…", or the older "Hey :wave: I'm
// starting/reviewing…" note), and, because the progress note is deleted
// when the review ends, every top-level note by @GitLabDuo (its summary,
// no-findings, nothing-to-review and error notes). Note ids only grow, so
// a new id past the loop's mark proves a run started after the request
// (PR-S1); a reviewer state alone carries no id and is not used.
package duo

import (
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
)

// Name is the bot's name: in findings and reports, and how a PR loop's
// configuration names it when it crosses a process (prloop.RegisterBot).
const Name = "gitlab-duo"

// RequestLogin is the user a review is requested from: the backend makes
// it a reviewer (reviewer_ids, after GET /users?username=GitLabDuo).
const RequestLogin = "GitLabDuo"

// StartedEvent is the issue event the GitLab backend reports for a note
// only a started Duo review writes (see the package doc).
const StartedEvent = "duo_review_started"

// DefaultAllowlist are Duo's logins on every surface: GitLab shows the
// same username in REST, GraphQL and webhooks.
func DefaultAllowlist() []string { return []string{"GitLabDuo"} }

var defaultAllowlist = func() []string {
	out := DefaultAllowlist()
	for i, a := range out {
		out[i] = strings.ToLower(a)
	}
	return out
}()

// Bot is GitLab Duo Code Review. Allowlist are the logins it is
// recognised by (matched case-insensitively); empty means
// DefaultAllowlist. An instance whose bot user got another username (a
// self-managed GitLab where "GitLabDuo" was taken) lists it here.
type Bot struct {
	Allowlist []string
}

// New returns Duo with its default logins.
func New() Bot { return Bot{} }

// Name names the bot in findings and reports.
func (Bot) Name() string { return Name }

// RequestLogin is the login a review is requested from.
func (Bot) RequestLogin() string { return RequestLogin }

// StartedEvent is the issue event that proves a review started.
func (Bot) StartedEvent() string { return StartedEvent }

// Is matches Duo's logins, case-insensitively, exactly: "GitLabDuo-fan"
// and "GitLab-Duo" are other users.
func (b Bot) Is(login string) bool {
	list, lowered := b.Allowlist, false
	if len(list) == 0 {
		list, lowered = defaultAllowlist, true
	}
	for _, a := range list {
		if !lowered {
			a = strings.ToLower(a)
		}
		if lowerEquals(a, login) {
			return true
		}
	}
	return false
}

// lowerEquals is strings.ToLower(s) == lower without allocating when s is
// ASCII: the loop asks Is about every comment it reads.
func lowerEquals(lower, s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return strings.ToLower(s) == lower
		}
	}
	if len(s) != len(lower) {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != lower[i] {
			return false
		}
	}
	return true
}

// cleanLine is how Duo says a review found nothing (lower case).
const cleanLine = "i finished my review and found nothing to comment on"

// noSignalPhrases mark a note that is not a finished review of the diff,
// whatever else it says (lower case).
var noSignalPhrases = []string{
	":warning:",
	"encountered some problems",
	"encountered some issues",
	"something went wrong",
	"nothing for me to review",
	"unable to post the inline comments",
	"please try again later",
	"please request a new review",
	"no gitlab credits remain",
	"don't have access to gitlab duo code review",
	"was not automatically added",
	"can't access the merge request",
	"can't create the progress note",
	"is reviewing your merge request",
	"starting to review your merge request",
	"reviewing your merge request now",
	"error code:",
}

// Read is the one fail-closed reading of a Duo review (PR-O2, PR-O3): see
// the package doc.
func (b Bot) Read(r forge.Review, pr *forge.PullRequest) (review.Signal, string) {
	if !b.Is(r.Author) {
		return review.NoSignal, fmt.Sprintf("the review is by %q, not GitLab Duo", r.Author)
	}
	if r.CommitSHA == "" {
		return review.NoSignal, "the forge does not say which commit the review is of"
	}
	switch r.State {
	case forge.ReviewApproved:
		return b.readApproval(r, pr)
	case forge.ReviewChangesRequested:
		g := b.commentGroup(r.CommitSHA, pr)
		if g == nil {
			return review.Unsettled, fmt.Sprintf("GitLab Duo requested changes on %s, and none of its comments on it is visible", text.ShortSHA(r.CommitSHA))
		}
		return b.readComments(*g, pr)
	case forge.ReviewCommented:
		return b.readComments(r, pr)
	case forge.ReviewDismissed:
		return review.NoSignal, "GitLab Duo withdrew its approval (a new review started)"
	}
	return review.NoSignal, fmt.Sprintf("a %s review by GitLab Duo says nothing of the diff", r.State)
}

// readComments reads a group of Duo's diff notes: findings when the
// group's count and its visible threads agree.
func (b Bot) readComments(r forge.Review, pr *forge.PullRequest) (review.Signal, string) {
	if r.CommentCount <= 0 {
		return review.NoSignal, "GitLab Duo's comment review holds no comment"
	}
	rooted := 0
	for _, t := range pr.Threads {
		if len(t.Comments) > 0 && t.Comments[0].ReviewID == r.ID && b.Is(t.Comments[0].Author) {
			rooted++
		}
	}
	if rooted != r.CommentCount {
		return review.Unsettled, fmt.Sprintf("GitLab Duo's review of %s has %d comment(s), %d thread(s) visible", text.ShortSHA(r.CommitSHA), r.CommentCount, rooted)
	}
	return review.Findings, ""
}

// commentGroup is Duo's COMMENTED review of sha (its diff notes there).
func (b Bot) commentGroup(sha string, pr *forge.PullRequest) *forge.Review {
	for i := len(pr.Reviews) - 1; i >= 0; i-- {
		r := &pr.Reviews[i]
		if r.State == forge.ReviewCommented && r.CommitSHA == sha && b.Is(r.Author) {
			return r
		}
	}
	return nil
}

// readApproval is clean only when Duo approved the commit, commented
// nothing on it, and its own latest note since its previous review says
// it finished and found nothing.
func (b Bot) readApproval(r forge.Review, pr *forge.PullRequest) (review.Signal, string) {
	if g := b.commentGroup(r.CommitSHA, pr); g != nil && g.CommentCount > 0 {
		return review.NoSignal, fmt.Sprintf("GitLab Duo approved %s and commented on it %d time(s)", text.ShortSHA(r.CommitSHA), g.CommentCount)
	}
	for _, t := range pr.Threads {
		if len(t.Comments) > 0 && b.Is(t.Comments[0].Author) && t.Comments[0].OriginalCommit == r.CommitSHA {
			return review.NoSignal, fmt.Sprintf("GitLab Duo approved %s and opened thread %s on it", text.ShortSHA(r.CommitSHA), t.ID)
		}
	}
	note := b.reviewNote(r, pr)
	if note == nil {
		return review.Unsettled, "GitLab Duo approved, and its note saying what it found is not visible"
	}
	text := review.OwnText(note.Body)
	for _, p := range noSignalPhrases {
		if strings.Contains(text, p) {
			return review.NoSignal, "GitLab Duo's note reports an error, a quota or nothing to review"
		}
	}
	if !strings.HasPrefix(strings.TrimSpace(text), cleanLine) {
		return review.NoSignal, "GitLab Duo's note does not open with its no-findings line"
	}
	return review.Clean, ""
}

// reviewNote is Duo's latest top-level note posted since its previous
// review (any state) before r: the note of the run r came from. A note
// posted after r belongs to a later run, which speaks for the review
// too: a run that failed after approving leaves the approval standing.
func (b Bot) reviewNote(r forge.Review, pr *forge.PullRequest) *forge.IssueComment {
	var since forge.Review
	for _, o := range pr.Reviews {
		if o.ID != r.ID && b.Is(o.Author) && o.SubmittedAt.Before(r.SubmittedAt) && o.SubmittedAt.After(since.SubmittedAt) {
			since = o
		}
	}
	var note *forge.IssueComment
	for i := range pr.IssueComments {
		c := &pr.IssueComments[i]
		if !b.Is(c.Author) || !c.CreatedAt.After(since.SubmittedAt) {
			continue
		}
		if note == nil || c.CreatedAt.After(note.CreatedAt) || (c.CreatedAt.Equal(note.CreatedAt) && c.ID > note.ID) {
			note = c
		}
	}
	return note
}
