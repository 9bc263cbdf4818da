package prwork

import (
	"context"
	"path/filepath"
	"slices"
	"strings"
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

// TestPR_G6_ASubgroupClonesWhilePruning: `converge serve` reads a
// finished GitLab run's .converge.yaml (ReadBaseFile makes the clone)
// while it prunes the cache. A subgroup project's clone is one directory
// three levels down, so the pruner, which removes a half-made clone there
// under that directory's lock, waits for the cloner rather than removing
// the directory git is cloning into (which failed the read: "fork/exec
// /usr/bin/git: no such file or directory").
func TestPR_G6_ASubgroupClonesWhilePruning(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pr, bare := localPR(t, map[string]string{".converge.yaml": "max_rounds: 3\n"}, map[string]string{"a.txt": "A\n"})
	pr.Ref.Owner, pr.Ref.Repo, pr.Ref.Forge = "group/sub", "project", forge.GitLab
	root := t.TempDir()
	if rel, _ := filepath.Rel(filepath.Join(root, "clones"), cloneDir(root, pr.Ref)); len(strings.Split(rel, string(filepath.Separator))) != 3 {
		t.Fatalf("clone at clones/%s: want <host>/<owner>/<repo>, three levels down", rel)
	}
	done := make(chan struct{})
	var pruneErr error
	go func() {
		defer close(done)
		for i := 0; i < 40 && pruneErr == nil; i++ {
			_, pruneErr = PruneClones(ctx, root, func(string) bool { return false })
		}
	}()
	for i := 0; i < 20; i++ {
		data, found, err := ReadBaseFile(ctx, root, bare, gitTestEnv(), nil, pr, ".converge.yaml")
		if err != nil || !found || string(data) != "max_rounds: 3\n" {
			t.Fatalf("read %d: %q found=%v: %v", i, data, found, err)
		}
	}
	<-done
	if pruneErr != nil {
		t.Fatal(pruneErr)
	}
}
