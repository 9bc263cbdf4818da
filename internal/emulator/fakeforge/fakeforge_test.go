package fakeforge_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/forge/forgetest"
)

// TestContract runs the forge contract against the in-memory forge.
func TestContract(t *testing.T) {
	forgetest.Run(t, func(t *testing.T) forgetest.Harness {
		f := fakeforge.New(fakeforge.Options{Viewer: "converge-bot"})
		ref := f.AddPR(fakeforge.PR{Author: "octo-author", Title: "Say bye", Commits: 2})
		f.SetPermission("octo-reviewer", "write")
		f.SetPermission("outsider", "read")
		return forgetest.Harness{
			Forge:     f,
			Fixture:   &fixture{f: f, ref: ref},
			CheckRuns: f,
			Rejected:  f.Rejected(),
		}
	})
}

// fixture scripts the fake's world as octo-reviewer.
type fixture struct {
	f   *fakeforge.Forge
	ref forge.PRRef
}

const reviewer = "octo-reviewer"

// fixtureHunk is GitHub's diff_hunk of a comment on main.go:5, the line
// the fixture's PR adds.
const fixtureHunk = "@@ -1,5 +1,6 @@\n package main\n \n func main() {\n \tprintln(\"hello\")\n+\tprintln(\"bye\")"

func (x *fixture) Facts(context.Context) (forgetest.Facts, error) {
	pr := x.f.PR(x.ref)
	return forgetest.Facts{
		PR: x.ref, Author: pr.Author, Viewer: x.f.Login(), Reviewer: reviewer,
		HeadRef: pr.HeadRef, BaseRef: pr.BaseRef, HeadSHA: pr.HeadSHA, Commits: len(pr.Commits),
		CloneURL: "https://forge.test/acme/widget.git", MergeState: forge.MergeClean,
		Path: "main.go", Line: 5, LineText: "\tprintln(\"bye\")",
		Requestable: []forgetest.Reviewer{{Login: reviewer}, {Login: fakeforge.CopilotLogin, Bot: true}},
		Permissions: map[string]forge.Permission{reviewer: "write", "outsider": "read"},
	}, nil
}

func (x *fixture) Review(_ context.Context, r forgetest.Review) (string, error) {
	var ths []fakeforge.NewThread
	for _, c := range r.Comments {
		ths = append(ths, fakeforge.NewThread{Path: c.Path, Line: c.Line, Body: c.Body, DiffHunk: fixtureHunk})
	}
	rv, _ := x.f.AddReview(x.ref, fakeforge.Review{Author: reviewer, Body: r.Body, Threads: ths})
	return rv.ID, nil
}

func (x *fixture) Comment(_ context.Context, body string) error {
	x.f.AddIssueComment(x.ref, reviewer, body)
	return nil
}

func (x *fixture) Push(context.Context) (string, error) {
	return x.f.PushHead(x.ref, forgetest.Marker+": push"), nil
}

func (x *fixture) ResetHead(_ context.Context, sha string) error {
	x.f.ResetHead(x.ref, reviewer, sha)
	return nil
}

// TestCheckRunsUnsupported: a world without check runs refuses them as
// GitHub refuses a user token, which the contract accepts.
func TestCheckRunsUnsupported(t *testing.T) {
	f := fakeforge.New(fakeforge.Options{NoCheckRuns: true})
	ref := f.AddPR(fakeforge.PR{})
	_, err := f.CreateCheckRun(context.Background(), ref, forge.CheckRun{Name: "converge", HeadSHA: f.PR(ref).HeadSHA, Status: "in_progress"})
	if !forgetest.Unsupported(err) || !errors.Is(err, errors.ErrUnsupported) || forge.KindOf(err) != forge.KindAuth {
		t.Fatalf("check run without support: %v", err)
	}
}

// TestScriptingHelpers: the helpers build the world a loop test needs: a
// Copilot review with threads, a human thread, CI, a push, a force-push,
// events, and a hook that answers a review request.
func TestScriptingHelpers(t *testing.T) {
	ctx := context.Background()
	f := fakeforge.New(fakeforge.Options{})
	ref := f.AddPR(fakeforge.PR{Author: "octo-author"})
	f.OnRequestReviews(func(ref forge.PRRef, _, bots []string) {
		if len(bots) > 0 && bots[0] == fakeforge.CopilotLogin {
			f.AddEvent(ref, "copilot_work_started", fakeforge.CopilotShort)
			f.AddCopilotReview(ref, fakeforge.Finding{Path: "a.go", Line: 3, Body: "Rename this."})
		}
	})
	pr, err := f.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.RequestReviews(ctx, pr, nil, []string{fakeforge.CopilotLogin}); err != nil {
		t.Fatal(err)
	}
	human := f.AddThread(ref, "octo-reviewer", fakeforge.NewThread{Path: "b.go", Line: 1, Body: "Why?"})
	f.SetCI(ref, "test", "FAILURE")
	old := pr.HeadSHA

	pr, _ = f.Observe(ctx, ref)
	if len(pr.Reviews) != 2 || pr.Reviews[0].Author != fakeforge.CopilotLogin || pr.Reviews[0].CommentCount != 1 ||
		!strings.Contains(pr.Reviews[0].Body, "generated 1 comment.") {
		t.Errorf("reviews: %+v", pr.Reviews)
	}
	if len(pr.Threads) != 2 || pr.Threads[1].ID != human.ID || pr.Threads[0].Comments[0].ReviewID != pr.Reviews[0].ID {
		t.Errorf("threads: %+v", pr.Threads)
	}
	if len(pr.RequestedReviewers) != 1 || pr.RequestedReviewers[0] != fakeforge.CopilotLogin {
		t.Errorf("Copilot stays requested after its review: %v", pr.RequestedReviewers)
	}
	if pr.Checks.State != "FAILURE" {
		t.Errorf("rollup %+v", pr.Checks)
	}
	evs, _ := f.IssueEvents(ctx, ref)
	if len(evs) != 2 || evs[0].Event != "review_requested" || evs[1].Event != "copilot_work_started" || evs[1].Actor != "Copilot" {
		t.Errorf("events: %+v", evs)
	}

	sha := f.PushHead(ref, "Fix")
	pr, _ = f.Observe(ctx, ref)
	if pr.HeadSHA != sha || pr.Checks.State != "" || len(pr.Commits) != 2 || pr.Commits[1].Parents[0] != old {
		t.Errorf("after a push: head %s checks %+v commits %+v", pr.HeadSHA, pr.Checks, pr.Commits)
	}
	f.SetThreadOutdated(human.ID, true, 0)
	re := f.ForcePush(ref, "Squashed")
	pr, _ = f.Observe(ctx, ref)
	if pr.HeadSHA != re || len(pr.Commits) != 1 || pr.Commits[0].Parents[0] != pr.BaseSHA || !pr.Threads[1].IsOutdated {
		t.Errorf("after a force-push: %+v", pr)
	}
	if f.Calls("observe pr") != 4 || f.Calls("request reviews") != 1 {
		t.Errorf("calls: observe %d, request %d", f.Calls("observe pr"), f.Calls("request reviews"))
	}
}

// TestFaultsAndViews: a fault fails calls before they act; As acts as
// another login on the same world; a thread writer keeps the PR's author
// out of requests.
func TestFaultsAndViews(t *testing.T) {
	ctx := context.Background()
	f := fakeforge.New(fakeforge.Options{})
	ref := f.AddPR(fakeforge.PR{})
	outage := &forge.Error{Kind: forge.KindUnreachable, Op: "observe pr", Msg: "down"}
	f.SetFault(func(op string) error {
		if op == "add labels" {
			return outage
		}
		return nil
	})
	if err := f.AddLabels(ctx, ref, "x"); forge.KindOf(err) != forge.KindUnreachable {
		t.Fatalf("fault: %v", err)
	}
	if pr := f.PR(ref); len(pr.Labels) != 0 {
		t.Errorf("a failed call changed the world: %v", pr.Labels)
	}
	f.SetFault(nil)
	bob := f.As("bob")
	if v, _ := bob.Viewer(ctx); v != "bob" {
		t.Errorf("As: viewer %q", v)
	}
	ic, err := bob.CreateIssueComment(ctx, ref, "hi")
	if err != nil || ic.Author != "bob" {
		t.Fatalf("comment as bob: %+v %v", ic, err)
	}
	if list, _ := f.ListIssueComments(ctx, ref); len(list) != 1 || list[0].Author != "bob" {
		t.Errorf("views do not share the world: %+v", list)
	}
	pr := f.PR(ref)
	if err := bob.RequestReviews(ctx, pr, []string{pr.Author}, nil); forge.KindOf(err) != forge.KindInvalid {
		t.Errorf("requesting the author: %v", err)
	}
}

// TestConcurrentUse: observations, writes and helpers race cleanly (run
// with -race), and every write lands.
func TestConcurrentUse(t *testing.T) {
	ctx := context.Background()
	f := fakeforge.New(fakeforge.Options{})
	ref := f.AddPR(fakeforge.PR{})
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range 20 {
				label := fmt.Sprintf("l%d-%d", i, j)
				if err := f.AddLabels(ctx, ref, label); err != nil {
					t.Error(err)
				}
				if _, err := f.Observe(ctx, ref); err != nil {
					t.Error(err)
				}
				th := f.AddThread(ref, "r", fakeforge.NewThread{Path: "a", Line: 1, Body: label})
				if _, err := f.ReplyToThread(ctx, ref, th.ID, "ok"); err != nil {
					t.Error(err)
				}
				if err := f.ResolveThread(ctx, ref, th.ID); err != nil {
					t.Error(err)
				}
				f.SetCI(ref, label, "SUCCESS")
			}
		}()
	}
	wg.Wait()
	pr := f.PR(ref)
	if len(pr.Labels) != 160 || len(pr.Threads) != 160 || len(pr.Checks.Contexts) != 160 || pr.Checks.State != "SUCCESS" {
		t.Errorf("labels %d threads %d contexts %d state %s", len(pr.Labels), len(pr.Threads), len(pr.Checks.Contexts), pr.Checks.State)
	}
	for _, th := range pr.Threads {
		if !th.IsResolved || len(th.Comments) != 2 {
			t.Fatalf("thread %+v", th)
		}
	}
}

// TestObserveReturnsACopy: changing an observation changes nothing in the
// world.
func TestObserveReturnsACopy(t *testing.T) {
	ctx := context.Background()
	f := fakeforge.New(fakeforge.Options{})
	ref := f.AddPR(fakeforge.PR{Labels: []string{"a"}})
	f.AddThread(ref, "r", fakeforge.NewThread{Path: "a", Line: 1, Body: "b"})
	pr, _ := f.Observe(ctx, ref)
	pr.Labels[0] = "changed"
	pr.Threads[0].Comments[0].Body = "changed"
	pr.Commits[0].Parents[0] = "changed"
	again, _ := f.Observe(ctx, ref)
	if again.Labels[0] != "a" || again.Threads[0].Comments[0].Body != "b" || again.Commits[0].Parents[0] == "changed" {
		t.Errorf("observation aliases the world: %+v", again)
	}
}

// TestPR_O1_TestsSetAThreadsHunk: a test gives a thread its diff hunk; the
// observation carries it bounded as a real backend bounds it, and a reply
// carries its thread's.
func TestPR_O1_TestsSetAThreadsHunk(t *testing.T) {
	f := fakeforge.New(fakeforge.Options{})
	ref := f.AddPR(fakeforge.PR{})
	long := "@@ -0,0 +1,100 @@"
	for i := 1; i <= 100; i++ {
		long += fmt.Sprintf("\n+line %d", i)
	}
	th := f.AddThread(ref, reviewer, fakeforge.NewThread{Path: "a.go", Line: 100, Body: "x", DiffHunk: long})
	f.AddReply(th.ID, "converge", "Done.")
	pr, err := f.Observe(context.Background(), ref)
	if err != nil {
		t.Fatal(err)
	}
	cs := pr.Threads[0].Comments
	if want := forge.ClipDiffHunk(long, 1); cs[0].DiffHunk != want || !strings.HasPrefix(want, "@@ -0,0 +61,40 @@\n+line 61\n") {
		t.Errorf("first comment's hunk %q, want %q", cs[0].DiffHunk, want)
	}
	if len(cs) != 2 || cs[1].DiffHunk != cs[0].DiffHunk {
		t.Errorf("the reply's hunk: %+v", cs)
	}
}
