package github_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/repo"
)

// TestSEC5_GitAsksTheAppAtEachFetchAndPush: git with the App's
// credential gets the token current when each network command starts:
// after the token it cloned with expired (by both clocks) the fetch and
// the push go through on a new one; after the hub refused a token the
// App's clock still calls fresh (revoked, or the clocks disagree) the
// command is tried once more with a new one. Local commands ask for no
// token; none lands in the repository's files; a token refused for good
// is not in the error.
func TestSEC5_GitAsksTheAppAtEachFetchAndPush(t *testing.T) {
	hub, _, ref := emulatorPR(t)
	ctx := context.Background()
	clock := &appClock{}
	_, app, _ := appClient(t, hub, ref, clock)
	url := hub.GitURL(ref.Owner, ref.Repo)
	var asked, refusals atomic.Int32
	cred := &repo.Credential{Remote: url, Token: func(ctx context.Context, refused string) (string, error) {
		asked.Add(1)
		if refused != "" {
			refusals.Add(1)
		}
		return app.GitToken(ctx, ref.Owner, ref.Repo, refused)
	}}
	env := hub.GitEnv("")
	dir := filepath.Join(t.TempDir(), "clone")
	if _, err := (&repo.Git{Dir: filepath.Dir(dir), Env: env, Cred: cred}).Run(ctx, "clone", "--quiet", "--", url, dir); err != nil {
		t.Fatalf("clone with the App's credential: %v", err)
	}
	g := &repo.Git{Dir: dir, Env: env, Cred: cred}
	if hub.AppTokensMinted() != 1 {
		t.Fatalf("%d tokens minted for a clone, want 1", hub.AppTokensMinted())
	}
	before := asked.Load()
	if _, err := g.Run(ctx, "rev-parse", "HEAD"); err != nil {
		t.Fatal(err)
	}
	if asked.Load() != before {
		t.Fatal("a local command asked for a token")
	}

	// Two hours on by both clocks: the clone's token is long expired.
	clock.advance(2 * time.Hour)
	hub.AdvanceAppClock(2 * time.Hour)
	if _, err := g.Run(ctx, "fetch", "--quiet", "origin"); err != nil {
		t.Fatalf("fetch after the first token expired: %v", err)
	}
	if hub.AppTokensMinted() != 2 || refusals.Load() != 0 {
		t.Fatalf("%d tokens minted, %d refused: want a second one for the fetch, asked for before it, not after a refusal", hub.AppTokensMinted(), refusals.Load())
	}
	if err := os.WriteFile(filepath.Join(dir, "NOTES.md"), []byte("notes\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Run(ctx, "add", "NOTES.md"); err != nil {
		t.Fatal(err)
	}
	if _, err := g.Commit(ctx, repo.CommitOptions{Message: "notes"}); err != nil {
		t.Fatal(err)
	}

	// The hub ends the token early; the App's clock calls it fresh.
	hub.ExpireAppTokens()
	if err := g.Push(ctx, "origin", "HEAD", "notes"); err != nil {
		t.Fatalf("push after the hub refused the current token: %v", err)
	}
	if hub.AppTokensMinted() != 3 || refusals.Load() != 1 {
		t.Fatalf("%d tokens minted, %d refused: want a third one after one refusal", hub.AppTokensMinted(), refusals.Load())
	}
	ls := exec.Command("git", "ls-remote", url, "refs/heads/notes")
	ls.Env = append(os.Environ(), hub.GitEnv(hub.Tokens().Reviewer)...)
	if out, err := ls.CombinedOutput(); err != nil || !strings.Contains(string(out), "refs/heads/notes") {
		t.Fatalf("the push did not land: %v %s", err, out)
	}

	// Nothing of any token in the repository's files.
	toks := hub.AppTokens()
	_ = filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil || !fi.Mode().IsRegular() {
			return err
		}
		b, _ := os.ReadFile(p)
		for _, tok := range toks {
			for _, f := range repo.Secrets(tok) {
				if strings.Contains(string(b), f) {
					t.Fatalf("%s holds an installation token", p)
				}
			}
		}
		return nil
	})

	// A token refused again and again: one retry, then the error, which
	// does not hold it.
	stale := toks[0]
	hub.ExpireAppTokens()
	bad := &repo.Git{Dir: dir, Env: env, Cred: &repo.Credential{Remote: url, Token: func(context.Context, string) (string, error) { return stale, nil }}}
	_, err := bad.Run(ctx, "fetch", "--quiet", "origin")
	if err == nil {
		t.Fatal("fetch with an expired token went through")
	}
	for _, f := range repo.Secrets(stale) {
		if strings.Contains(err.Error(), f) {
			t.Fatalf("the error holds the token: %v", err)
		}
	}
}
