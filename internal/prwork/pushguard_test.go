package prwork

import (
	"context"
	"errors"
	"os/exec"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
)

// TestPR_T14_AGuardedPushPushesNothing: a push whose guard says the PR
// was taken over while the round worked leaves the forge's branch as it
// was and says so with an error answered by observing again.
func TestPR_T14_AGuardedPushPushesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "a\nA\n"})
	ws := testWorkspace(t, bare, nil, "")
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := ws.atHead(ctx, pr); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = ws.Cleanup(ctx) })
	if _, err := ws.worktree.Run(ctx, "commit", "--allow-empty", "-q", "-m", "a round's fix"); err != nil {
		t.Fatal(err)
	}
	taken := &prloop.ErrTakenOver{Lease: prloop.Lease{Run: "r-taker", PR: pr.Ref.Number}}
	ws.GuardPush(func(context.Context, *forge.PullRequest) error { return taken })
	err := ws.push(ctx, pr)
	var now interface{ ObserveNow() bool }
	if !errors.Is(err, taken) || !errors.As(err, &now) || !now.ObserveNow() {
		t.Fatalf("guarded push: %v, want the guard's ErrTakenOver", err)
	}
	out, gerr := exec.Command("git", "--git-dir", bare, "rev-parse", "refs/heads/"+pr.HeadRef).Output()
	if gerr != nil {
		t.Fatal(gerr)
	}
	if got := strings.TrimSpace(string(out)); got != pr.HeadSHA {
		t.Fatalf("the forge's branch moved to %s; the guard said not to push", got)
	}
}
