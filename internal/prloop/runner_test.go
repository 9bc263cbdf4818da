package prloop_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/prloop/prlooptest"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/review/copilot"
)

func withCopilot(c prloop.Config) prloop.Config {
	c.Bot = copilot.New()
	return c
}

// noEventsForge is a forge without the optional forge.IssueEventer.
type noEventsForge struct{ forge.Forge }

// TestRunnerWithoutIssueEventer: on a forge that lists no issue events the
// runner reads none (EventsRead stays false) and the loop still converges
// on the bot's review itself; with events it converges the same way.
func TestRunnerWithoutIssueEventer(t *testing.T) {
	for _, events := range []bool{true, false} {
		ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
		ref := ff.AddPR(fakeforge.PR{})
		ff.SetCI(ref, "test", "SUCCESS")
		requested := 0
		ff.OnRequestReviews(func(ref forge.PRRef, _, bots []string) {
			if len(bots) > 0 {
				requested++
				go func() {
					if events {
						ff.AddEvent(ref, "copilot_work_started", fakeforge.CopilotShort)
					}
					ff.AddCopilotReview(ref)
				}()
			}
		})
		var f forge.Forge = ff
		if !events {
			f = noEventsForge{ff}
			if _, ok := f.(forge.IssueEventer); ok {
				t.Fatal("noEventsForge is an IssueEventer")
			}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		l := prloop.NewLoop(ref, prloop.Deps{
			Forge: f, Workspace: prlooptest.ParkedWorkspace{}, Journal: &prlooptest.Journal{},
			Config: withCopilot(prloop.DefaultConfig()),
		})
		term, err := l.Run(ctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{
			Clock:   prlooptest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
			PollMin: 50 * time.Millisecond, PollMax: 200 * time.Millisecond,
		})
		cancel()
		if err != nil {
			t.Fatalf("events %v: %v", events, err)
		}
		if term.Reason != prloop.ReasonTwoStable || requested == 0 {
			t.Errorf("events %v: want two-stable after a review request, got %+v after %d requests", events, term, requested)
		}
	}
}

// TestPR_G6_ALongReplyKeepsItsMarkerOnTheForge: the loop fits a reply
// longer than the forge's limit before posting it, so the forge does not
// cut the marker off its end and the next observation sees the reply.
func TestPR_G6_ALongReplyKeepsItsMarkerOnTheForge(t *testing.T) {
	ctx := context.Background()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ref := ff.AddPR(fakeforge.PR{})
	th := ff.AddThread(ref, "alice", fakeforge.NewThread{Path: "main.go", Line: 3, Body: "Handle the error"})
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Journal: &prlooptest.Journal{}, Config: prloop.DefaultConfig()})
	body := "Escalated to a human: " + strings.Repeat("x", 70000) + ".\n\n— converge\n\n" + prloop.Marker(th.ID, "h1", prloop.DispEscalated)
	obs := prloop.Observation{PR: ff.PR(ref)}
	if _, err := l.Act(ctx, prloop.State{Round: 1}, obs, prloop.Action{Kind: prloop.ActReply, Key: "r1/reply", ThreadID: th.ID, Body: body}); err != nil {
		t.Fatal(err)
	}
	var got string
	for _, t2 := range ff.PR(ref).Threads {
		if t2.ID == th.ID {
			got = t2.Comments[len(t2.Comments)-1].Body
		}
	}
	if ms := prloop.ParseMarkers(got); len(ms) != 1 || ms[0].Thread != th.ID {
		t.Fatalf("the reply's marker did not reach the forge (%d characters, ends %q)", len(got), got[max(0, len(got)-120):])
	}
}

// TestPR_M1_DryRunPostsNothingNotEvenTheSummary: in a dry run every write
// the loop asks for — the local review summary included — is reported,
// never sent to the forge, and never journalled as done.
func TestPR_M1_DryRunPostsNothingNotEvenTheSummary(t *testing.T) {
	ctx := context.Background()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ref := ff.AddPR(fakeforge.PR{})
	th := ff.AddThread(ref, "alice", fakeforge.NewThread{Path: "main.go", Line: 3, Body: "Handle the error"})
	var said []string
	j := &prlooptest.Journal{}
	l := prloop.NewLoop(ref, prloop.Deps{Forge: ff, Journal: j, Config: prloop.DefaultConfig(), DryRun: true,
		Reporter: engine.ReporterFunc(func(e engine.Event) { said = append(said, e.Message) })})
	obs := prloop.Observation{PR: ff.PR(ref)}
	for _, a := range []prloop.Action{
		{Kind: prloop.ActComment, Key: "summary/h1", Body: "### Local review\n\nclean", Reason: "local-review-summary"},
		{Kind: prloop.ActReply, Key: "r1/reply", ThreadID: th.ID, Body: "Addressed."},
		{Kind: prloop.ActResolve, Key: "r1/resolve", ThreadID: th.ID},
		{Kind: prloop.ActAddLabel, Key: "r1/label", Label: prloop.LabelReady},
		{Kind: prloop.ActRequestReview, Key: "r1/request"},
	} {
		if _, err := l.Act(ctx, prloop.State{Round: 1}, obs, a); err != nil {
			t.Fatal(err)
		}
	}
	pr := ff.PR(ref)
	if len(pr.IssueComments) != 0 || len(pr.Labels) != 0 || pr.Threads[0].IsResolved || len(pr.Threads[0].Comments) != 1 {
		t.Fatalf("a dry run wrote to the forge: %+v", pr)
	}
	for _, op := range []string{"create issue comment", "reply to thread", "resolve thread", "add labels", "request reviews"} {
		if n := ff.Calls(op); n != 0 {
			t.Errorf("%d %q call(s) in a dry run", n, op)
		}
	}
	if len(said) != 5 || !strings.Contains(said[0], "would comment on the pull request") || !strings.Contains(said[0], "clean") {
		t.Fatalf("the dry run did not report each write, summary body included: %q", said)
	}
	if len(j.Done()) != 0 {
		t.Fatalf("a dry run journalled actions as done: %v", j.Done())
	}
}
