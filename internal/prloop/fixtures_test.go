package prloop

import (
	"fmt"
	"hash/fnv"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
)

// Fixtures: small constructors so each table row says only what differs.

var t0 = time.Date(2026, 3, 2, 9, 0, 0, 0, time.UTC)

func at(min float64) time.Time { return t0.Add(time.Duration(min * float64(time.Minute))) }

const (
	self    = "converge-bot"
	author  = "alice" // the PR's author, write access
	copilot = "copilot-pull-request-reviewer"
)

// cfg is the loop's configuration as a worker holds it. Its Self is not
// converge's login: Decide reads that from the observation (obs), so a
// Decide that read Config.Self would fail every table.
func cfg() Config {
	c := DefaultConfig()
	c.Self = "stale-config-login"
	c.Bot = copilotbot.New()
	// What Decide's entry point sets from the observation, for the tests
	// that call its helpers directly.
	c.self = self
	return c
}

func green() forge.CheckRollup {
	return forge.CheckRollup{State: "SUCCESS", Contexts: []forge.CheckContext{{Name: "test", Status: "COMPLETED", Conclusion: "SUCCESS"}}}
}

func ciWith(status, conclusion string) forge.CheckRollup {
	return forge.CheckRollup{Contexts: []forge.CheckContext{{Name: "test", Status: forge.CheckStatus(status), Conclusion: forge.CheckConclusion(conclusion)}}}
}

// withConvergeStatus sets converge's status; the rollup shows the latest
// status per context, as GitHub's does.
func withConvergeStatus(ch forge.CheckRollup, state string) forge.CheckRollup {
	var cxs []forge.CheckContext
	for _, cx := range ch.Contexts {
		if cx.Name != StatusContext {
			cxs = append(cxs, cx)
		}
	}
	ch.Contexts = append(cxs, forge.CheckContext{Name: StatusContext, IsStatus: true, Conclusion: forge.CheckConclusion(state)})
	return ch
}

func newPR(head string) *forge.PullRequest {
	return &forge.PullRequest{
		ID: "PR_1", Number: 7, URL: "https://github.com/o/r/pull/7", Author: author,
		State: forge.StateOpen, HeadRef: "feature", BaseRef: "main", HeadSHA: head,
		MergeState: forge.MergeClean, Checks: green(),
		Commits: []forge.Commit{{SHA: head, Message: "feat: the change", Parents: []string{"base0"}}},
	}
}

func botReview(id, sha string, when time.Time, body string) forge.Review {
	return forge.Review{ID: id, Author: copilot, State: forge.ReviewCommented, CommitSHA: sha, SubmittedAt: when, Body: body}
}

func okReview(id, sha string, when time.Time) forge.Review {
	return botReview(id, sha, when, "## Pull request overview\n\nCopilot reviewed 2 out of 2 changed files in this pull request and generated no new comments.")
}

// rooted makes r the review the threads were submitted with, and sets its
// own comment count, as the forge shows a settled review (PR-O2).
func rooted(r forge.Review, threads ...*forge.Thread) forge.Review {
	for _, t := range threads {
		t.Comments[0].ReviewID = r.ID
	}
	r.CommentCount = len(threads)
	return r
}

func errReview(id, sha string, when time.Time) forge.Review {
	return botReview(id, sha, when, "Copilot encountered an error and was unable to review this pull request. You can try again by re-requesting a review.")
}

// thread is a review thread on main.go at a line of its own (threadLine):
// two threads of a table are separate findings, neither one finding
// (PR-S6) nor a conflict (PR-S7), unless a test places them so.
func thread(id, by, body string) forge.Thread {
	return forge.Thread{ID: id, Path: "main.go", Line: threadLine(id), Comments: []forge.Comment{{ID: id + "-c0", Author: by, Body: body, CreatedAt: t0}}}
}

// threadLine spreads thread ids over main.go, 10 lines apart: far from
// each other (more than nearLines), the same line for the same id.
func threadLine(id string) int {
	h := fnv.New32a()
	h.Write([]byte(id))
	return 10 * (1 + int(h.Sum32()%100000))
}

func copilotThread(id, body string) forge.Thread { return thread(id, "Copilot", body) }

func loopCommit(sha, parent string, round int) forge.Commit {
	return forge.Commit{SHA: sha, Parents: []string{parent}, Message: fmt.Sprintf("converge: address review findings (round %d)\n\n- main.go:12 fix\n\n%s: %d\n", round, CommitTrailer, round)}
}

func obs(now time.Time, pr *forge.PullRequest) Observation {
	return Observation{
		Now: now, PR: pr, EventsRead: true, Self: self,
		Permissions: map[string]forge.Permission{"alice": "write", "bob": "admin", "carol": "maintain", "mallory": "read", "trent": "triage"},
	}
}

// started is a state already past PhaseStart on head.
func started(head string) State {
	return State{
		Phase: PhaseStart, StartedAt: t0, InitialHead: head, LastLoopSHA: head,
		InitialDiffLines: 100, LastActivityAt: t0, HeadSeen: head, HeadSeenAt: t0,
	}
}

// verifying is a state in PhaseVerify of round n on head, whose request was
// made on head.
func verifying(head string, n int) State {
	s := started(head)
	s.Phase, s.Round, s.Request.Head, s.Request.At, s.Request.ForgeAt = PhaseVerify, n, head, at(0), at(0)
	for i := 1; i <= n; i++ {
		s.Rounds = append(s.Rounds, RoundRecord{N: i, HeadSHA: head, StartedAt: at(0)})
	}
	return s
}

// awaiting is a state waiting for round n's review, requested at at(0).
func awaiting(head string, n int, seen ...string) State {
	s := verifying(head, n)
	s.Phase, s.Request.EventMark, s.Request.EventMarkSet, s.Request.SeenReviews = PhaseAwaitReview, 100, true, seen
	return s
}

// sig renders actions as "kind key" lines: the exact sequence is what a
// test asserts, so a wrong order or an extra write fails it.
func sig(acts []Action) []string {
	out := []string{}
	for _, a := range acts {
		switch a.Kind {
		case ActWait:
			out = append(out, "wait")
		case ActAddLabel, ActRemoveLabel:
			out = append(out, string(a.Kind)+" "+a.Label)
		case ActSetStatus:
			out = append(out, fmt.Sprintf("set-status %s %s", a.State, a.SHA))
		default:
			out = append(out, string(a.Kind)+" "+a.Key)
		}
	}
	return out
}

func wantActs(t *testing.T, got []Action, want ...string) {
	t.Helper()
	g := sig(got)
	if want == nil {
		want = []string{}
	}
	if strings.Join(g, "\n") != strings.Join(want, "\n") {
		t.Fatalf("actions:\n  got  %q\n  want %q", g, want)
	}
}

func wantTerminal(t *testing.T, got *Terminal, reason Reason) {
	t.Helper()
	switch {
	case reason == "" && got != nil:
		t.Fatalf("terminal %s (%s), want none", got.Reason, got.Message)
	case reason != "" && got == nil:
		t.Fatalf("no terminal, want %s", reason)
	case reason != "" && got.Reason != reason:
		t.Fatalf("terminal %s (%s), want %s", got.Reason, got.Message, reason)
	case got != nil && got.ExitCode != ExitCode(reason):
		t.Fatalf("exit code %d, want %d", got.ExitCode, ExitCode(reason))
	}
}

// forgeApply plays the engine and the forge: replies become comments by
// converge, resolves resolve. It returns a new PR so earlier observations
// stay as they were.
func forgeApply(pr *forge.PullRequest, acts []Action, when time.Time) *forge.PullRequest {
	n := *pr
	n.Threads = make([]forge.Thread, len(pr.Threads))
	for i, t := range pr.Threads {
		t.Comments = append([]forge.Comment(nil), t.Comments...)
		n.Threads[i] = t
	}
	n.Labels = append([]string(nil), pr.Labels...)
	for _, a := range acts {
		for i := range n.Threads {
			t := &n.Threads[i]
			if t.ID != a.ThreadID {
				continue
			}
			switch a.Kind {
			case ActReply:
				t.Comments = append(t.Comments, forge.Comment{ID: a.Key, Author: self, Body: a.Body, CreatedAt: when})
			case ActResolve:
				t.IsResolved = true
			case ActCleanup:
				if a.Body != "" {
					t.Comments = append(t.Comments, forge.Comment{ID: a.Key, Author: self, Body: a.Body, CreatedAt: when})
				}
				t.IsResolved = true
			}
		}
		switch a.Kind {
		case ActAddLabel:
			n.Labels = append(n.Labels, a.Label)
		case ActSetStatus:
			n.Checks = withConvergeStatus(pr.Checks, string(a.State))
		case ActComment:
			n.IssueComments = append(slices.Clone(pr.IssueComments), forge.IssueComment{Author: self, Body: a.Body, CreatedAt: when})
		case ActRequestReview:
			// As GitHub shows a request until the review is submitted.
			n.RequestedReviewers = append(slices.Clone(pr.RequestedReviewers), copilot)
		}
	}
	return &n
}

func findAct(acts []Action, kind ActionKind, thread string) *Action {
	for i := range acts {
		if acts[i].Kind == kind && acts[i].ThreadID == thread {
			return &acts[i]
		}
	}
	return nil
}
