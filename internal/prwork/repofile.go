package prwork

import (
	"context"
	"fmt"
	"strings"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/repo"
)

// ReadBaseFile reads path as the PR's base branch has it, in the clone
// cache under root (the clone a run's workspace then reuses). The base,
// not the head: what is merged is trusted, so a pull request cannot change
// the rules it is driven by (its own config, say). found is false when
// the base has no such file. cred, when set, is gitEnv's token
// (GitWorkspace.GitCred).
func ReadBaseFile(ctx context.Context, root, cloneURL string, gitEnv []string, cred *repo.Credential, pr *forge.PullRequest, path string) (data []byte, found bool, err error) {
	dir := cloneDir(root, pr.Ref)
	defer lockClone(dir)()
	cloned, err := ensureClone(ctx, dir, cloneURL, gitEnv, cred)
	if err != nil {
		return nil, false, err
	}
	g := &repo.Git{Dir: dir, Env: gitEnv, Cred: cred}
	base := "refs/remotes/origin/" + pr.BaseRef
	if cloned {
		// A bare clone made just now holds the forge's branches as its
		// own: the base as a fetch would bring it a moment later.
		base = "refs/heads/" + pr.BaseRef
	} else if _, err := gitLocked(ctx, dir, g, "fetch", "--quiet", "origin", "+refs/heads/"+pr.BaseRef+":"+base); err != nil {
		return nil, false, fmt.Errorf("fetch %s: %w", pr.BaseRef, err)
	}
	// ls-tree tells a missing file from a failing git.
	ls, err := g.Run(ctx, "ls-tree", "--name-only", base, "--", path)
	if err != nil {
		return nil, false, err
	}
	if strings.TrimSpace(ls) == "" {
		return nil, false, nil
	}
	out, err := g.Run(ctx, "show", base+":"+path)
	if err != nil {
		return nil, false, err
	}
	return []byte(out), true, nil
}
