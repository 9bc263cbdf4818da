package prloop

import (
	"fmt"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/text"
)

// Keys of findings that have no thread (PR-T13): a top-level PR comment or
// the body of a review that requests changes.
const (
	commentKeyPrefix = "comment:"
	reviewKeyPrefix  = "review:"
)

func isCommentKey(id string) bool {
	return strings.HasPrefix(id, commentKeyPrefix) || strings.HasPrefix(id, reviewKeyPrefix) || isCIKey(id)
}

func commentKey(ic forge.IssueComment) string {
	if ic.NodeID != "" {
		return commentKeyPrefix + ic.NodeID
	}
	return fmt.Sprintf("%s%d", commentKeyPrefix, ic.ID)
}

// isHumanLogin: bots speak through threads and reviews; a top-level
// comment is a finding only from a person.
func isHumanLogin(login string, c Config) bool {
	return !trustedBot(login, c) && !strings.HasSuffix(strings.ToLower(login), "[bot]")
}

// answeredKeys are the keys converge has answered with a top-level comment,
// with the dispositions, as its own markers on the forge show.
func answeredKeys(pr *forge.PullRequest, c Config) map[string][]ReplyMarker {
	out := map[string][]ReplyMarker{}
	for _, ic := range pr.IssueComments {
		if !selfComment(ic.Author, c) {
			continue
		}
		for _, m := range ParseMarkers(ic.Body) {
			out[m.Thread] = append(out[m.Thread], m)
		}
	}
	return out
}

func commentAnswered(pr *forge.PullRequest, key, head string, disp Disposition, c Config) bool {
	for _, m := range answeredKeys(pr, c)[markerField(key)] {
		if m.Head == markerField(head) && m.Disposition == disp {
			return true
		}
	}
	return false
}

// lastLoopCommitTime is when the loop last committed on the branch (zero
// when it never did): top-level comments before it were already seen by
// an earlier round or run.
func lastLoopCommitTime(pr *forge.PullRequest) time.Time {
	var t time.Time
	for _, c := range pr.Commits {
		if _, ok := roundTrailer(c.Message); ok && c.CommittedAt.After(t) {
			t = c.CommittedAt
		}
	}
	return t
}

// commentFindings is PR-T13: trusted humans' top-level comments since the
// last loop commit, and the bodies of their reviews that request changes,
// that converge has not answered yet. They have no thread: a fix is
// answered with a top-level comment quoting them.
func commentFindings(pr *forge.PullRequest, o Observation, c Config) []Finding {
	answered := answeredKeys(pr, c)
	since := lastLoopCommitTime(pr)
	var out []Finding
	for _, ic := range pr.IssueComments {
		key := commentKey(ic)
		if isSelf(ic.Author, c) || !isHumanLogin(ic.Author, c) || !trusted(ic.Author, o, c) ||
			strings.TrimSpace(ic.Body) == "" || ic.CreatedAt.Before(since) || len(answered[markerField(key)]) > 0 {
			continue
		}
		if classify.Acknowledges(ic.Body) {
			// "Thanks!" on the PR asks for nothing: no finding, so
			// nothing to fix, escalate or answer (issue 36).
			continue
		}
		out = append(out, Finding{ID: key, CommentID: key, Summary: ic.Body, Verdict: VerdictStructural, Source: "human", Author: ic.Author})
	}
	for _, r := range latestHumanReviews(pr, o, c) {
		key := reviewKeyPrefix + r.ID
		if r.State != forge.ReviewChangesRequested || strings.TrimSpace(r.Body) == "" || len(answered[markerField(key)]) > 0 {
			continue
		}
		out = append(out, Finding{ID: key, CommentID: key, Summary: r.Body, Verdict: VerdictStructural, Source: "human", Author: r.Author})
	}
	return out
}

// latestHumanReviews is each trusted human's latest review that sets a
// state (approve, request changes, dismissed), as GitHub counts them;
// plain comments do not change a reviewer's state.
func latestHumanReviews(pr *forge.PullRequest, o Observation, c Config) []forge.Review {
	latest := map[string]int{}
	var order []string
	for i, r := range pr.Reviews {
		switch r.State {
		case forge.ReviewApproved, forge.ReviewChangesRequested, forge.ReviewDismissed:
		default:
			continue
		}
		if isSelf(r.Author, c) || !isHumanLogin(r.Author, c) || !trusted(r.Author, o, c) {
			continue
		}
		l := strings.ToLower(r.Author)
		j, ok := latest[l]
		if !ok {
			order = append(order, l)
		}
		if !ok || !r.SubmittedAt.Before(pr.Reviews[j].SubmittedAt) {
			latest[l] = i
		}
	}
	out := make([]forge.Review, 0, len(order))
	for _, l := range order {
		out = append(out, pr.Reviews[latest[l]])
	}
	return out
}

// changesRequested names the trusted humans whose latest review requests
// changes and is not dismissed: while one does, the run cannot succeed
// (PR-T13).
func changesRequested(pr *forge.PullRequest, o Observation, c Config) []string {
	var out []string
	for _, r := range latestHumanReviews(pr, o, c) {
		if r.State == forge.ReviewChangesRequested {
			out = append(out, fmt.Sprintf("@%s requested changes (review %s)", r.Author, r.ID))
		}
	}
	return out
}

// quotedText is the body a comment key refers to.
func quotedText(pr *forge.PullRequest, key string) (author, body string) {
	for _, ic := range pr.IssueComments {
		if commentKey(ic) == key {
			return ic.Author, ic.Body
		}
	}
	for _, r := range pr.Reviews {
		if reviewKeyPrefix+r.ID == key {
			return r.Author, r.Body
		}
	}
	return "", ""
}

// commentReplyBody answers a top-level finding with a comment that quotes
// it (it has no thread to reply in), signed, with the hidden marker last.
func commentReplyBody(rec ThreadRecord, pr *forge.PullRequest, who, body string) string {
	var b strings.Builder
	if who != "" {
		fmt.Fprintf(&b, "@%s wrote:\n\n", who)
	}
	for _, l := range strings.Split(text.Clip(strings.TrimSpace(defang(body)), 2000), "\n") {
		b.WriteString("> " + l + "\n")
	}
	b.WriteString("\n")
	switch rec.Disposition {
	case DispAddressed:
		fmt.Fprintf(&b, "Addressed in %s%s.", commitLink(pr.URL, rec.HeadSHA), provenWords(rec.Reason))
	case DispDeferred:
		fmt.Fprintf(&b, "Deferred to a human: %s.", defang(rec.Reason))
	default:
		fmt.Fprintf(&b, "Escalated to a human: %s.", defang(rec.Reason))
	}
	b.WriteString("\n\n— converge")
	if pr.Author != "" {
		fmt.Fprintf(&b, ", on behalf of @%s", pr.Author)
	}
	b.WriteString("\n\n")
	b.WriteString(Marker(rec.ThreadID, rec.HeadSHA, rec.Disposition))
	return b.String()
}

// handOffMessage names each open hand-off (PR-T11) and each review that
// still requests changes (PR-T13).
func handOffMessage(v verdict) string {
	var parts []string
	if len(v.handOffs) > 0 {
		parts = append(parts, fmt.Sprintf("%d thread(s) handed to a human are still open: %s; resolve them (or answer in them) and run converge again",
			len(v.handOffs), strings.Join(v.handOffs, ", ")))
	}
	parts = append(parts, v.blockers...)
	return strings.Join(parts, "; ")
}
