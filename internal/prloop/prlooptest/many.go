package prlooptest

import (
	"fmt"
	"time"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	copilotbot "github.com/convergeloop/converge/internal/review/copilot"
)

// ReviewedRound is a PR loop at the step its reviewer's review of the head
// has settled with n inline findings, all new: the step that reads,
// classifies, dedupes and groups every thread, the heaviest Decide of a
// round. Its observation carries the comments' classes, as the loop's
// Observe gives them (prloop.ClassifyObserved). The benchmarks of Decide (`go test -bench`, `converge bench`)
// time it.
func ReviewedRound(n int) (prloop.State, prloop.Observation, prloop.Config) {
	t0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	const head, self, bot = "h1", "converge-bot", "copilot-pull-request-reviewer"
	c := prloop.DefaultConfig()
	c.Self = self
	c.Bot = copilotbot.New()

	s := prloop.State{
		Phase: prloop.PhaseAwaitReview, StartedAt: t0, InitialHead: head, LastLoopSHA: head,
		InitialDiffLines: 100, LastActivityAt: t0, HeadSeen: head, HeadSeenAt: t0, Round: 1,
		Rounds: []prloop.RoundRecord{{N: 1, HeadSHA: head, StartedAt: t0}},
	}
	s.Request.Head, s.Request.At, s.Request.ForgeAt = head, t0, t0
	s.Request.EventMark, s.Request.EventMarkSet = 100, true

	pr := &forge.PullRequest{
		ID: "PR_1", Number: 7, URL: "https://github.com/o/r/pull/7", Author: "alice",
		State: forge.StateOpen, HeadRef: "feature", BaseRef: "main", HeadSHA: head,
		MergeState: forge.MergeClean,
		Checks:     forge.CheckRollup{State: "SUCCESS", Contexts: []forge.CheckContext{{Name: "test", Status: "COMPLETED", Conclusion: "SUCCESS"}}},
		Commits:    []forge.Commit{{SHA: head, Message: "feat: the change", Parents: []string{"base0"}}},
	}
	review := forge.Review{
		ID: "R1", Author: bot, State: forge.ReviewCommented, CommitSHA: head, SubmittedAt: t0.Add(time.Minute),
		Body:         fmt.Sprintf("## Pull request overview\n\nCopilot reviewed %d out of %d changed files in this pull request and generated %d comments.", n, n, n),
		CommentCount: n,
	}
	pr.Reviews = []forge.Review{review}
	// Half the findings name a defect, half ask for wording; each sits in
	// a file of its own so none merges with another (PR-S6).
	for i := range n {
		body := "This can panic on a nil map; check the lookup before use."
		if i%2 == 1 {
			body = "Typo in this comment: \"recieve\" should be \"receive\"."
		}
		id := fmt.Sprintf("T%d", i)
		path := fmt.Sprintf("pkg%d/file%d.go", i/50, i)
		pr.Threads = append(pr.Threads, forge.Thread{
			ID: id, Path: path, Line: 10 + i%40,
			Comments: []forge.Comment{{ID: id + "-c0", Author: "Copilot", Body: body, Path: path, CreatedAt: t0.Add(time.Minute), ReviewID: review.ID}},
		})
	}
	o := prloop.Observation{
		Now: t0.Add(2 * time.Minute), PR: pr, EventsRead: true, BotStartedMax: 101, Self: self,
		Permissions: map[string]forge.Permission{"alice": forge.PermWrite},
	}
	// As the loop's Observe hands it over: the new comments classified
	// once, on this their first observation.
	o.Classes = prloop.ClassifyObserved(s, o, c, nil)
	return s, o, c
}

// WaitingRound is a PR loop waiting for its reviewer's next review after
// round 1 answered and resolved n threads: the step a fleet takes on most
// wake-ups, reading every thread and finding nothing to do.
func WaitingRound(n int) (prloop.State, prloop.Observation, prloop.Config) {
	s, o, c := ReviewedRound(n)
	const head = "h2"
	t1 := o.Now.Add(10 * time.Minute)
	pr := o.PR
	pr.HeadSHA = head
	pr.Commits = append(pr.Commits, forge.Commit{SHA: head, Parents: []string{"h1"},
		Message: fmt.Sprintf("converge: address review findings (round 1)\n\n%s: 1\n", prloop.CommitTrailer)})
	for i := range pr.Threads {
		th := &pr.Threads[i]
		th.IsResolved = true
		th.Comments = append(th.Comments, forge.Comment{ID: th.ID + "-c1", Author: o.Self, CreatedAt: t1,
			Body: "Addressed.\n" + prloop.Marker(th.ID, head, prloop.DispAddressed)})
	}
	s.Round, s.LastLoopSHA, s.HeadSeen, s.HeadSeenAt = 2, head, head, t1
	s.Rounds = append(s.Rounds, prloop.RoundRecord{N: 2, HeadSHA: head, StartedAt: t1})
	s.Request.Head, s.Request.At, s.Request.ForgeAt, s.Request.EventMark = head, t1, t1, 101
	o.Now, o.BotStartedMax = t1.Add(time.Minute), 101
	o.Classes = prloop.ClassifyObserved(s, o, c, o.Classes)
	return s, o, c
}
