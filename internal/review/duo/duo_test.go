package duo

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/review"
)

var t0 = time.Date(2026, 10, 1, 12, 0, 0, 0, time.UTC)

const (
	h1 = "1111111111111111111111111111111111111111"
	h2 = "2222222222222222222222222222222222222222"
)

func sys(id int, state forge.ReviewState, sha string, at time.Duration) forge.Review {
	return forge.Review{ID: fmt.Sprintf("gid://gitlab/Note/%d", id), Author: "GitLabDuo", State: state, CommitSHA: sha, SubmittedAt: t0.Add(at)}
}

func note(id int64, author, body string, at time.Duration) forge.IssueComment {
	return forge.IssueComment{ID: id, Author: author, Body: body, CreatedAt: t0.Add(at)}
}

func group(sha string, n int, at time.Duration) (forge.Review, []forge.Thread) {
	g := forge.Review{ID: "diffnotes:GitLabDuo:" + sha, Author: "GitLabDuo", State: forge.ReviewCommented, CommitSHA: sha, SubmittedAt: t0.Add(at), CommentCount: n}
	var ts []forge.Thread
	for i := range n {
		ts = append(ts, forge.Thread{ID: fmt.Sprintf("d%d%s", i, sha[:4]), Comments: []forge.Comment{{Author: "GitLabDuo", Body: "x", ReviewID: g.ID, OriginalCommit: sha, CreatedAt: t0.Add(at)}}})
	}
	return g, ts
}

const clean = "I finished my review and found nothing to comment on. Nice work! :tada:"

// TestPR_O3_DuoReadingIsFailClosed: Duo's traces as the GitLab backend
// reports them, before and since Duo approves and requests changes.
func TestPR_O3_DuoReadingIsFailClosed(t *testing.T) {
	g1, th1 := group(h1, 2, 0)
	tests := []struct {
		name string
		r    forge.Review
		pr   forge.PullRequest
		want review.Signal
	}{
		{
			// Before 2026 Duo neither approves nor requests changes: its
			// diff notes are its only review.
			name: "diff notes alone are findings",
			r:    g1, pr: forge.PullRequest{HeadSHA: h1, Reviews: []forge.Review{g1}, Threads: th1},
			want: review.Findings,
		},
		{
			name: "a change request whose comments are not visible yet",
			r:    sys(1, forge.ReviewChangesRequested, h1, time.Second),
			pr:   forge.PullRequest{HeadSHA: h1, Reviews: []forge.Review{sys(1, forge.ReviewChangesRequested, h1, time.Second)}},
			want: review.Unsettled,
		},
		{
			// A push landed while Duo reviewed: the backend cannot say
			// which head the approval is of.
			name: "an approval of an unknown commit",
			r:    sys(2, forge.ReviewApproved, "", time.Second),
			pr:   forge.PullRequest{HeadSHA: h1, IssueComments: []forge.IssueComment{note(1, "GitLabDuo", clean, 0)}},
			want: review.NoSignal,
		},
		{
			name: "an approval while a new run's progress note is up",
			r:    sys(3, forge.ReviewApproved, h1, time.Second),
			pr: forge.PullRequest{HeadSHA: h1, IssueComments: []forge.IssueComment{
				note(1, "GitLabDuo", clean, 0),
				note(2, "GitLabDuo", "Hey :wave: I'm starting to review your merge request and I will let you know when I'm finished.", 2*time.Second),
			}},
			want: review.NoSignal,
		},
		{
			name: "an approval of a commit Duo opened threads on",
			r:    sys(4, forge.ReviewApproved, h1, time.Second),
			pr:   forge.PullRequest{HeadSHA: h1, Threads: th1, IssueComments: []forge.IssueComment{note(1, "GitLabDuo", clean, 0)}},
			want: review.NoSignal,
		},
		{
			// The summary of the earlier run is not this run's note.
			name: "an approval whose own note is not visible",
			r:    sys(5, forge.ReviewApproved, h2, time.Hour),
			pr: forge.PullRequest{HeadSHA: h2, Reviews: []forge.Review{g1, sys(6, forge.ReviewChangesRequested, h1, time.Second)}, Threads: th1,
				IssueComments: []forge.IssueComment{note(1, "GitLabDuo", clean, -time.Second)}},
			want: review.Unsettled,
		},
		{
			name: "a run that failed after the approval",
			r:    sys(7, forge.ReviewApproved, h1, time.Second),
			pr: forge.PullRequest{HeadSHA: h1, IssueComments: []forge.IssueComment{
				note(1, "GitLabDuo", clean, 0), note(2, "GitLabDuo", "I have encountered some problems while I was reviewing. Please try again later.", time.Hour)}},
			want: review.NoSignal,
		},
		{
			name: "a clean run after findings on an earlier head",
			r:    sys(8, forge.ReviewApproved, h2, time.Hour),
			pr: forge.PullRequest{HeadSHA: h2, Reviews: []forge.Review{g1, sys(6, forge.ReviewChangesRequested, h1, time.Second)}, Threads: th1,
				IssueComments: []forge.IssueComment{note(1, "GitLabDuo", "summary", 0), note(2, "GitLabDuo", clean, time.Hour-time.Second)}},
			want: review.Clean,
		},
		{
			name: "a pending review",
			r:    sys(9, forge.ReviewPending, h1, time.Second),
			pr:   forge.PullRequest{HeadSHA: h1},
			want: review.NoSignal,
		},
	}
	for _, tt := range tests {
		got, why := New().Read(tt.r, &tt.pr)
		if got != tt.want {
			t.Errorf("%s: read %s (%s), want %s", tt.name, got, why, tt.want)
		}
	}
}

// TestPR_O2_DuoAllowlist: an instance whose bot user is named otherwise
// lists it; the default name is then not Duo.
func TestPR_O2_DuoAllowlist(t *testing.T) {
	b := Bot{Allowlist: []string{"GitLabDuo1"}}
	if !b.Is("gitlabduo1") || b.Is("GitLabDuo") || !New().Is("GITLABDUO") || New().Is("GitLab-Duo") {
		t.Fatal("Is does not follow the allowlist")
	}
}

// FuzzPR_O3_DuoNote: whatever Duo's note says, an approval reads clean
// only when the note opens with Duo's no-findings line in its own words
// and says nothing of an error; the same note quoted never reads clean.
func FuzzPR_O3_DuoNote(f *testing.F) {
	for _, s := range []string{
		clean, clean + "\n\nThe change adds retries.", "> " + clean, "```\n" + clean + "\n```", "",
		":wave: There's nothing for me to review.", "I have encountered some problems while I was reviewing. Please try again later.",
		":warning: Something went wrong.\n" + clean, "I FINISHED MY REVIEW AND FOUND NOTHING TO COMMENT ON", "~~~\n```\n~~~\n" + clean,
	} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, body string) {
		read := func(body string) review.Signal {
			pr := &forge.PullRequest{HeadSHA: h1, IssueComments: []forge.IssueComment{note(1, "GitLabDuo", body, 0)}}
			s, why := New().Read(sys(1, forge.ReviewApproved, h1, time.Second), pr)
			if s != review.Clean && why == "" {
				t.Fatalf("%q read %s without a why", body, s)
			}
			return s
		}
		if read(body) == review.Clean {
			text := review.OwnText(body)
			if !strings.HasPrefix(strings.TrimSpace(text), cleanLine) {
				t.Fatalf("%q read clean without opening with the no-findings line", body)
			}
			for _, p := range noSignalPhrases {
				if strings.Contains(text, p) {
					t.Fatalf("%q read clean beside %q", body, p)
				}
			}
		}
		quoted := "> " + strings.ReplaceAll(strings.ReplaceAll(body, "\r\n", "\n"), "\n", "\n> ")
		if s := read(quoted); s == review.Clean {
			t.Fatalf("quoted %q read clean", quoted)
		}
	})
}
