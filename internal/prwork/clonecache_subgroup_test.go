package prwork

import (
	"context"
	"slices"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
)

// TestPR_G6_PruneKeepsASubgroupProjectsLiveClone: a GitLab project's
// clone sits under its subgroups (<host>/group/sub/project); pruning the
// cache while a run is registered in it keeps it, and prunes it, not its
// parent directories, once no run uses it.
func TestPR_G6_PruneKeepsASubgroupProjectsLiveClone(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "a\nA\n"})
	pr.Ref.Owner, pr.Ref.Repo, pr.Ref.Forge = "group/sub", "project", forge.GitLab
	root := t.TempDir()
	ws := testWorkspace(t, bare, nil, "")
	ws.Root, ws.RunID = root, "r-a"
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := ws.atHead(ctx, pr); err != nil {
		t.Fatal(err)
	}
	if err := ws.ReleaseWorktree(ctx); err != nil {
		t.Fatal(err)
	}
	clone := cloneDir(root, pr.Ref)
	if removed, err := PruneClones(ctx, root, func(string) bool { return true }); err != nil || len(removed) != 0 || !hasClone(clone) {
		t.Fatalf("pruned %v (%v) with the run live; clone kept: %v", removed, err, hasClone(clone))
	}
	removed, err := PruneClones(ctx, root, func(string) bool { return false })
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(removed, []string{clone}) || hasClone(clone) {
		t.Fatalf("pruned %v; want exactly %s", removed, clone)
	}
	if err := ws.Cleanup(ctx); err != nil {
		t.Fatal(err)
	}
}
