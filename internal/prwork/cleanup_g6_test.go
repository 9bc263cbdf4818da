package prwork_test

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent/suggest"
	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_G6_FinishedRunsLeaveNoWorktreeOrClone: a finished run's
// worktree is removed, and the clone too once no other run uses it. Two
// runs of one repository share one bare clone in the cache: the first to
// finish leaves it to the second, whose worktree still works; the second
// removes it. A later run clones again.
func TestPR_G6_FinishedRunsLeaveNoWorktreeOrClone(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	hub, _, ref := calcPR(t)
	tok := hub.Tokens().Author
	pr, err := hubtest.Client(t, hub, tok).Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	run := func(id string) *prwork.GitWorkspace {
		ws := &prwork.GitWorkspace{
			Checkout: prwork.Checkout{
				Root:     root,
				RunID:    id,
				CloneURL: hub.GitURL("acme", "calc"),
				GitEnv:   repo.AuthEnvFor(hub.GitURL("acme", "calc"), tok, hub.CAFile()),
			},
			Agent:  suggest.New(),
			Budget: time.Minute,
		}
		if _, err := ws.Prepare(ctx, pr); err != nil {
			t.Fatal(err)
		}
		// A step that reads the files makes the run's worktree.
		if _, err := ws.ClassifyBorderline(ctx, pr, &classify.Judge{Agent: &capture{}}, classify.Request{Comments: []classify.Comment{{ID: "c1", Body: judgedBody}}}); err != nil {
			t.Fatal(err)
		}
		return ws
	}
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	first, second := run("r-first"), run("r-second")
	clones, _ := filepath.Glob(filepath.Join(root, "clones", "*", "acme", "calc"))
	if len(clones) != 1 {
		t.Fatalf("clones %v, want one shared clone", clones)
	}
	clone := clones[0]
	wt1, wt2 := filepath.Join(root, "worktrees", "r-first"), filepath.Join(root, "worktrees", "r-second")
	if !exists(wt1) || !exists(wt2) {
		t.Fatal("the runs have no worktrees")
	}

	if err := first.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(wt1) {
		t.Fatal("the finished run's worktree is still there")
	}
	if !exists(filepath.Join(clone, "HEAD")) {
		t.Fatal("the clone was removed while another run's worktree is in it")
	}
	if _, err := (&repo.Git{Dir: wt2}).Run(ctx, "status", "--porcelain"); err != nil {
		t.Fatalf("the other run's worktree broke: %v", err)
	}

	if err := second.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(wt2) || exists(clone) {
		t.Fatalf("after the last run: worktree there %v, clone there %v; want neither", exists(wt2), exists(clone))
	}
	if left, _ := os.ReadDir(filepath.Join(root, "worktrees")); len(left) != 0 {
		t.Fatalf("left in the worktrees directory: %v", left)
	}

	// A later run starts from nothing: it clones again.
	third := run("r-third")
	if !exists(filepath.Join(clone, "HEAD")) {
		t.Fatal("a later run did not clone again")
	}
	if err := third.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
	if exists(clone) {
		t.Fatal("the clone outlived the last run")
	}
}
