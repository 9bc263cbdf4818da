package github_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	ghclient "github.com/convergeloop/converge/internal/forge/github"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// What a busy repository costs the change probe (REL-4). GitHub's answer
// to GET pulls/{n} carries the repository (base.repo, head.repo) with
// pushed_at, updated_at, size and the open issue and star counts, so its
// ETag moves when anything in the repository moves: a push to another
// branch, a new issue or PR, a star. The probe then reads the PR whole,
// though nothing of the PR changed.

// waitingPR opens a PR whose CI has passed on an emulator, as a loop
// waiting on a review sees it, and reads it twice with the probe (the
// second takes the ETag), so the next poll of an unchanged PR is a 304.
func waitingPR(tb testing.TB) (*fakehub.Hub, *ghclient.Client, forge.PRRef) {
	tb.Helper()
	hub := hubtest.Start(tb, time.Hour)
	if err := hub.CreateRepo("acme", "widget", map[string]string{
		"go.mod":  "module example.com/widget\n\ngo 1.22\n",
		"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n}\n",
	}, fakehub.RepoOptions{}); err != nil {
		tb.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "widget", fakehub.NewPR{
		Head: "feature/bye", Title: "Say bye",
		Files: map[string]string{"main.go": "package main\n\nfunc main() {\n\tprintln(\"hello\")\n\tprintln(\"bye\")\n}\n"},
	})
	if err != nil {
		tb.Fatal(err)
	}
	ref, err := forge.ParsePRURL(hub.PRURL("acme", "widget", n))
	if err != nil {
		tb.Fatal(err)
	}
	st, _ := hub.PR("acme", "widget", n)
	ci := hubtest.Client(tb, hub, hub.Tokens().CI)
	if err := ci.SetCommitStatus(context.Background(), ref, st.HeadSHA, forge.CommitStatus{State: forge.StatusSuccess, Context: "ci/test"}); err != nil {
		tb.Fatal(err)
	}
	letTimePass(hub)
	c := hubtest.Client(tb, hub, hub.Tokens().Author)
	for range 2 {
		if _, err := c.Observe(forge.WithProbe(context.Background()), ref); err != nil {
			tb.Fatal(err)
		}
	}
	return hub, c, ref
}

// elsewhere is the i-th change elsewhere in the repository, in turn a
// push to another branch, a new issue, a star and a new PR.
func elsewhere(hub *fakehub.Hub, i int) error {
	switch i % 4 {
	case 0:
		_, err := hub.PushFiles("acme", "widget", "docs", map[string]string{fmt.Sprintf("docs/%d.md", i): "notes\n"}, "docs")
		return err
	case 1:
		_, err := hub.CreateIssue("acme", "widget", fmt.Sprintf("bug %d", i))
		return err
	case 2:
		return hub.Star("acme", "widget")
	}
	_, err := hub.CreatePR("acme", "widget", fakehub.NewPR{Head: fmt.Sprintf("other-%d", i), Title: "Other",
		Files: map[string]string{fmt.Sprintf("other-%d.txt", i): "x\n"}})
	return err
}

// pollCost is one poll of ref with the probe, and its cost at the forge.
func pollCost(tb testing.TB, hub *fakehub.Hub, c *ghclient.Client, ref forge.PRRef) (*forge.PullRequest, fakehub.Counts) {
	tb.Helper()
	before := hub.CountsFor(fakehub.LoginAuthor)
	pr, err := c.Observe(forge.WithProbe(context.Background()), ref)
	if err != nil {
		tb.Fatal(err)
	}
	return pr, hub.CountsFor(fakehub.LoginAuthor).Sub(before)
}

// TestREL_4_BusyRepositoryPollCostsAWholeRead: in a quiet repository a
// poll of the waiting PR is one 304 and no point; a push to another branch, a new
// issue, a star or another PR — none of them the PR's — moves the PR's
// ETag as on GitHub, and the poll after each costs the probe's GET
// answered 200 (1 point) and a whole GraphQL read (its points). Handed
// back, the PR is the same.
func TestREL_4_BusyRepositoryPollCostsAWholeRead(t *testing.T) {
	hub, c, ref := waitingPR(t)
	first, _ := pollCost(t, hub, c, ref)
	// What a whole read costs (points by GitHub's formula).
	before := hub.CountsFor(fakehub.LoginAuthor)
	if _, err := c.Observe(context.Background(), ref); err != nil {
		t.Fatal(err)
	}
	whole := hub.CountsFor(fakehub.LoginAuthor).Sub(before).GraphQLPoints
	pollCost(t, hub, c, ref) // the probe takes its ETag again
	for i := range 4 {
		hub.AdvanceClock(30 * time.Second) // a poll interval
		if pr, cost := pollCost(t, hub, c, ref); !pr.Unchanged || cost.Requests() != 1 || cost.NotModified != 1 || cost.PrimaryPoints() != 0 {
			t.Fatalf("quiet poll %d: unchanged %v, cost %+v: want one 304, 0 points", i, pr.Unchanged, cost)
		}
		if err := elsewhere(hub, i); err != nil {
			t.Fatal(err)
		}
		hub.AdvanceClock(30 * time.Second)
		pr, cost := pollCost(t, hub, c, ref)
		if pr.Unchanged || cost.RESTGet != 1 || cost.NotModified != 0 || cost.GraphQLQuery != 1 || cost.PrimaryPoints() != 1+whole {
			t.Errorf("the poll after change %d elsewhere: unchanged %v, cost %+v: want the probe's GET answered 200 and a whole read, %d points",
				i, pr.Unchanged, cost, 1+whole)
		}
		if pr.HeadSHA != first.HeadSHA || pr.BaseSHA != first.BaseSHA || pr.MergeState != first.MergeState || pr.Checks.State != first.Checks.State {
			t.Errorf("after change %d elsewhere the PR reads differently: %s %s %s %s, was %s %s %s %s", i,
				pr.HeadSHA, pr.BaseSHA, pr.MergeState, pr.Checks.State, first.HeadSHA, first.BaseSHA, first.MergeState, first.Checks.State)
		}
	}
}

// BenchmarkREL_4_IdlePollInABusyRepository counts what a poll of a PR
// that waits (unchanged, its CI settled) costs at the forge, when the
// repository around it changes every `every` polls (0: never), each change
// a push to another branch, a new issue, a star or a new PR in turn:
//
//	go test ./internal/forge/github -run '^$' -bench REL_4_IdlePoll -benchtime 200x
func BenchmarkREL_4_IdlePollInABusyRepository(b *testing.B) {
	for _, every := range []int{0, 4, 1} {
		name := "quiet"
		if every > 0 {
			name = fmt.Sprintf("a-change-every-%d-polls", every)
		}
		b.Run(name, func(b *testing.B) {
			hub, c, ref := waitingPR(b)
			var total fakehub.Counts
			changes := 0
			b.ResetTimer()
			for i := range b.N {
				if every > 0 && i%every == 0 {
					b.StopTimer()
					if err := elsewhere(hub, changes); err != nil {
						b.Fatal(err)
					}
					changes++
					b.StartTimer()
				}
				hub.AdvanceClock(30 * time.Second) // a poll interval
				_, cost := pollCost(b, hub, c, ref)
				total = addCounts(total, cost)
			}
			n := float64(b.N)
			b.ReportMetric(float64(total.Requests())/n, "requests/poll")
			b.ReportMetric(float64(total.NotModified)/n, "304s/poll")
			b.ReportMetric(float64(total.GraphQLQuery)/n, "graphql/poll")
			b.ReportMetric(float64(total.RESTPoints)/n, "rest-points/poll")
			b.ReportMetric(float64(total.GraphQLPoints)/n, "graphql-points/poll")
		})
	}
}

func addCounts(a, b fakehub.Counts) fakehub.Counts {
	zero := fakehub.Counts{}
	return a.Sub(zero.Sub(b))
}
