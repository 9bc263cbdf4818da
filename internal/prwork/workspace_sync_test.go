package prwork_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_S14_SyncBaseMergesTestsAndPushes: on a real repository at the
// emulator, a base that moved without conflicts is merged into the PR's
// head as one merge commit with the round trailer, tested, and pushed as a
// fast-forward; the forge then shows the PR up to date. A base change that
// turns the tests red is never pushed, and a conflicting one makes no
// commit: both say why.
func TestPR_S14_SyncBaseMergesTestsAndPushes(t *testing.T) {
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub := hubtest.Start(t, 0)
	if err := hub.CreateRepo("acme", "calc", map[string]string{"go.mod": "module example.com/calc\n\ngo 1.22\n", "calc.go": calcGo, "calc_test.go": calcTest}, fakehub.RepoOptions{TestCommand: []string{"go", "test", "./..."}}); err != nil {
		t.Fatal(err)
	}
	n, err := hub.CreatePR("acme", "calc", fakehub.NewPR{Head: "feature/third", Title: "Third", Files: map[string]string{"third.go": "package calc\n\n// Third thirds n.\nfunc Third(n int) int { return n / 3 }\n"}})
	if err != nil {
		t.Fatal(err)
	}
	ref, _ := forge.ParsePRURL(hub.PRURL("acme", "calc", n))
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	observe := func() *forge.PullRequest {
		t.Helper()
		pr, err := client.Observe(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		return pr
	}
	ws := calcWorkspace(hub, tok, t.TempDir(), "r-sync")
	if _, err := ws.Prepare(ctx, observe()); err != nil {
		t.Fatal(err)
	}

	// A base change that breaks the build once merged: not pushed.
	if _, err := hub.PushFiles("acme", "calc", "main", map[string]string{"broken.go": "package calc\n\nfunc Broken() int { return \"no\" }\n"}, "feat: broken"); err != nil {
		t.Fatal(err)
	}
	// Without a protection rule requiring branches to be up to date,
	// GitHub does not say BEHIND; its compare counts the missing commit.
	// (It says so once its background job computed the new base's
	// mergeability, and UNSTABLE while the head's CI still runs.)
	hub.AdvanceClock(fakehub.DefaultMergeabilityDelay)
	pr := observe()
	if pr.MergeState != forge.MergeClean && pr.MergeState != forge.MergeUnstable {
		t.Fatalf("merge state %s without the protection rule, want CLEAN (or UNSTABLE while CI runs)", pr.MergeState)
	}
	if n, err := client.CommitsBehind(ctx, ref, pr.BaseSHA, pr.HeadSHA); err != nil || n != 1 {
		t.Fatalf("commits behind = %d, %v; want 1", n, err)
	}
	if err := hub.SetRequireUpToDate("acme", "calc", true); err != nil {
		t.Fatal(err)
	}
	if pr = observe(); pr.MergeState != forge.MergeBehind {
		t.Fatalf("merge state %s under the protection rule, want BEHIND", pr.MergeState)
	}
	res, err := ws.SyncBase(ctx, pr, 1)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA != "" || !strings.Contains(res.SyncWhy, "tests fail") {
		t.Fatalf("a red merge: commit %q, why %q; want no commit, tests named", res.CommitSHA, res.SyncWhy)
	}
	if got := observe().HeadSHA; got != pr.HeadSHA {
		t.Fatalf("the head moved to %s after a red merge", got)
	}

	// Repaired on the base: the merge is green, committed and pushed.
	if _, err := hub.PushFiles("acme", "calc", "main", map[string]string{"broken.go": "package calc\n\n// Broken is fixed.\nfunc Broken() int { return 1 }\n"}, "fix: broken"); err != nil {
		t.Fatal(err)
	}
	pr = observe()
	res, err = ws.SyncBase(ctx, pr, 2)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA == "" || !res.TestsPassed || res.LinesChanged != 0 {
		t.Fatalf("sync result %+v: want a tested merge commit that costs the loop no lines", res)
	}
	after := observe()
	if after.HeadSHA != res.CommitSHA {
		t.Fatalf("PR head %s, want the merge %s", after.HeadSHA, res.CommitSHA)
	}
	if after.MergeState == forge.MergeBehind || after.MergeState == forge.MergeDirty {
		t.Fatalf("merge state %s after the sync", after.MergeState)
	}
	last := after.Commits[len(after.Commits)-1]
	if len(last.Parents) != 2 || last.Parents[0] != pr.HeadSHA || last.Parents[1] != after.BaseSHA {
		t.Fatalf("merge commit parents %v, want [%s %s] (head first, never a rewrite)", last.Parents, pr.HeadSHA, after.BaseSHA)
	}
	if !repo.HasTrailer(last.Message, prloop.CommitTrailer) || !strings.Contains(last.Message, "Converge-Round: 2") {
		t.Fatalf("the merge commit lacks the round trailer:\n%s", last.Message)
	}

	// A base that conflicts with the branch: no commit, the head stays.
	if _, err := hub.PushFiles("acme", "calc", "main", map[string]string{"third.go": "package calc\n\n// Third is on main too.\nfunc Third(n int) int { return n * 3 }\n"}, "feat: third on main"); err != nil {
		t.Fatal(err)
	}
	pr = observe()
	res, err = ws.SyncBase(ctx, pr, 3)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA != "" || !strings.Contains(res.SyncWhy, "does not merge cleanly") {
		t.Fatalf("a conflicting merge: commit %q, why %q", res.CommitSHA, res.SyncWhy)
	}
	if got := observe().HeadSHA; got != pr.HeadSHA {
		t.Fatalf("the head moved to %s after a conflicting merge", got)
	}
}
