package cli

import (
	"context"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/cmdutil"
	"github.com/convergeloop/converge/internal/emulator/fakeforge"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/forge"
)

// forkForge shows its PRs as coming from a fork.
type forkForge struct {
	*fakeforge.Forge
	headRepo string
}

func (f forkForge) Observe(ctx context.Context, ref forge.PRRef) (*forge.PullRequest, error) {
	pr, err := f.Forge.Observe(ctx, ref)
	if err == nil {
		pr.CrossRepo, pr.HeadRepo = true, f.headRepo
	}
	return pr, err
}

// TestPR_G5_ForkPRTheTokenCannotPushToIsRefusedAtStart: a PR from a fork
// the token cannot push to is refused in pre-flight with one line (exit
// 2), before a run is recorded; a fork it can push to is accepted, and a
// dry run of the first is not refused (it pushes nothing).
func TestPR_G5_ForkPRTheTokenCannotPushToIsRefusedAtStart(t *testing.T) {
	ctx := context.Background()
	ff := fakeforge.New(fakeforge.Options{Viewer: "converge"})
	ref := ff.AddPR(fakeforge.PR{})
	ff.AddPR(fakeforge.PR{Owner: "contrib", Repo: "widget"}) // the pushable fork exists
	ff.SetPermission("converge", forge.PermRead)

	p := loopParams{Ref: ref, Forge: forkForge{ff, "mallory/widget"}}
	err := preflight(ctx, &p)
	if err == nil || cmdutil.ExitCodeOf(err) != exitcode.Usage || !strings.Contains(err.Error(), "comes from the fork mallory/widget, which converge cannot push to") {
		t.Fatalf("want a usage refusal naming the fork, got %v", err)
	}
	p = loopParams{Ref: ref, Forge: forkForge{ff, "mallory/widget"}, DryRun: true}
	if err := preflight(ctx, &p); err != nil {
		t.Fatalf("a dry run was refused: %v", err)
	}
	ff.SetPermission("converge", forge.PermWrite)
	p = loopParams{Ref: ref, Forge: forkForge{ff, "contrib/widget"}}
	if err := preflight(ctx, &p); err != nil {
		t.Fatalf("a fork the token can push to was refused: %v", err)
	}
}
