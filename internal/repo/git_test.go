package repo_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/repo"
)

// isolatedEnv makes git behave as on a machine with no git identity and no
// user or system config, so tests prove explicit identities work.
func isolatedEnv(t *testing.T) []string {
	t.Helper()
	home := t.TempDir()
	return []string{
		"HOME=" + home,
		"XDG_CONFIG_HOME=" + filepath.Join(home, ".config"),
		"GIT_CONFIG_GLOBAL=" + os.DevNull,
		"GIT_CONFIG_NOSYSTEM=1",
		"EMAIL=", "GIT_AUTHOR_NAME=", "GIT_AUTHOR_EMAIL=", "GIT_COMMITTER_NAME=", "GIT_COMMITTER_EMAIL=",
	}
}

func git(t *testing.T, g *repo.Git, args ...string) string {
	t.Helper()
	out, err := g.Run(context.Background(), args...)
	if err != nil {
		t.Fatalf("git %v: %v", args, err)
	}
	return strings.TrimSpace(out)
}

func write(t *testing.T, dir, name, content string) {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

func commit(t *testing.T, g *repo.Git, msg string, trailers ...repo.Trailer) string {
	t.Helper()
	sha, err := g.Commit(context.Background(), repo.CommitOptions{Message: msg, Trailers: trailers,
		AuthorName: "Test Human", AuthorEmail: "human@example.com"})
	if err != nil {
		t.Fatalf("Commit %q: %v", msg, err)
	}
	return sha
}

func cloneT(t *testing.T, url, dir string, env []string) *repo.Git {
	t.Helper()
	g, err := repo.Clone(context.Background(), url, dir, env)
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// fixture is a bare remote with one commit on main and a clone of it.
type fixture struct {
	env    []string
	remote string // path of the bare repository
	work   *repo.Git
}

func newFixture(t *testing.T) *fixture {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not installed")
	}
	env := isolatedEnv(t)
	root := t.TempDir()
	remote := filepath.Join(root, "remote.git")
	seed := &repo.Git{Dir: root, Env: env}
	git(t, seed, "init", "--quiet", "--bare", "-b", "main", remote)
	work := cloneT(t, remote, filepath.Join(root, "work"), env)
	write(t, work.Dir, "a.txt", "one\ntwo\nthree\n")
	commit(t, work, "initial")
	if err := work.Push(context.Background(), "origin", "HEAD", "main"); err != nil {
		t.Fatal(err)
	}
	return &fixture{env: env, remote: remote, work: work}
}

func TestPR_S11_CommitHasTrailerAndExplicitAuthor(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	base := git(t, f.work, "rev-parse", "HEAD")
	write(t, f.work.Dir, "a.txt", "one\nTWO\nthree\n")
	// A message that already ends in a trailer block and holds a "---"
	// line: the loop's trailer must still be a real trailer.
	msg := "fix: handle nil\n\nBody text.\n\nSigned-off-by: Someone <s@example.com>\n"
	sha, err := f.work.Commit(ctx, repo.CommitOptions{
		Message:     msg,
		Trailers:    []repo.Trailer{{Key: "Converge-Round", Value: "3"}, {Key: "Converge-Run", Value: "r-1"}},
		AuthorName:  "converge[bot]",
		AuthorEmail: "bot@example.com",
	})
	if err != nil {
		t.Fatalf("Commit on a machine without a git identity: %v", err)
	}
	if head, _ := f.work.HeadSHA(ctx); head != sha || len(sha) != 40 {
		t.Fatalf("Commit returned %q, HEAD is %q", sha, head)
	}
	who := git(t, f.work, "log", "-1", "--format=%an <%ae> / %cn <%ce>")
	if who != "converge[bot] <bot@example.com> / converge[bot] <bot@example.com>" {
		t.Errorf("identity = %q", who)
	}
	body := git(t, f.work, "log", "-1", "--format=%B")
	if !repo.HasTrailer(body, "Converge-Round") || !repo.HasTrailer(body, "converge-run") || !repo.HasTrailer(body, "Signed-off-by") {
		t.Errorf("trailers missing from:\n%s", body)
	}
	cs, err := f.work.CommitsBetween(ctx, base, "HEAD")
	if err != nil || len(cs) != 1 {
		t.Fatalf("CommitsBetween = %+v, %v", cs, err)
	}
	c := cs[0]
	if c.SHA != sha || c.Subject != "fix: handle nil" || len(c.Parents) != 1 || c.Parents[0] != base ||
		c.AuthorName != "converge[bot]" || !c.HasTrailer("converge-round") ||
		strings.Join(c.Trailers["Converge-Round"], ",") != "3" || len(c.Trailers["Signed-off-by"]) != 1 {
		t.Errorf("CommitInfo = %+v", c)
	}

	// Defaults apply when no identity is given at all.
	write(t, f.work.Dir, "b.txt", "b\n")
	if _, err := f.work.Commit(ctx, repo.CommitOptions{Message: "defaults"}); err != nil {
		t.Fatal(err)
	}
	if who := git(t, f.work, "log", "-1", "--format=%an <%ae>"); who != repo.DefaultAuthorName+" <"+repo.DefaultAuthorEmail+">" {
		t.Errorf("default identity = %q", who)
	}

	write(t, f.work.Dir, "c.txt", "c\n")
	if _, err := f.work.Commit(ctx, repo.CommitOptions{Message: "x", Trailers: []repo.Trailer{{Key: "Bad Key", Value: "v"}}}); err == nil {
		t.Error("Commit accepted an invalid trailer key")
	}
}

func TestPR_S11_ExcludedPathsStayOutOfCommit(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	write(t, f.work.Dir, "a.txt", "changed\n")
	write(t, f.work.Dir, "local/build.patch", "local only\n")
	write(t, f.work.Dir, "go.work", "local\n")
	// Staged by someone (an agent) before the loop commits: still excluded.
	git(t, f.work, "add", "go.work")
	sha, err := f.work.Commit(ctx, repo.CommitOptions{Message: "round", Exclude: []string{"local", "go.work"}})
	if err != nil {
		t.Fatal(err)
	}
	files := git(t, f.work, "show", "--name-only", "--format=", sha)
	if files != "a.txt" {
		t.Errorf("commit holds %q, want only a.txt", files)
	}
	st, err := f.work.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	left := map[string]string{}
	for _, s := range st {
		left[s.Path] = s.Code
	}
	if left["local/build.patch"] != "??" || left["go.work"] != "??" || len(left) != 2 {
		t.Errorf("status after commit = %+v; excluded paths must stay in the working tree", st)
	}
	if dirty, _ := f.work.IsDirty(ctx); !dirty {
		t.Error("IsDirty = false with untracked local files")
	}
	// Only excluded changes left: nothing to commit.
	if _, err := f.work.Commit(ctx, repo.CommitOptions{Message: "again", Exclude: []string{"local", "go.work"}}); !errors.Is(err, repo.ErrNothingToCommit) {
		t.Errorf("Commit with only excluded changes: %v, want ErrNothingToCommit", err)
	}
	os.RemoveAll(filepath.Join(f.work.Dir, "local"))
	os.Remove(filepath.Join(f.work.Dir, "go.work"))
	if dirty, _ := f.work.IsDirty(ctx); dirty {
		t.Error("IsDirty = true on a clean tree")
	}
}

func TestPR_S11_PushNeverForces(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	other := cloneT(t, f.remote, filepath.Join(t.TempDir(), "other"), f.env)
	write(t, other.Dir, "h.txt", "human\n")
	human := commit(t, other, "human change")
	if err := other.Push(ctx, "origin", "HEAD", "main"); err != nil {
		t.Fatal(err)
	}

	write(t, f.work.Dir, "a.txt", "loop\n")
	commit(t, f.work, "loop change", repo.Trailer{Key: "Converge-Round", Value: "1"})
	err := f.work.Push(ctx, "origin", "HEAD", "main")
	if !errors.Is(err, repo.ErrNonFastForward) {
		t.Fatalf("divergent push: %v, want ErrNonFastForward", err)
	}
	remote := &repo.Git{Dir: f.remote, Env: f.env}
	if got := git(t, remote, "rev-parse", "main"); got != human {
		t.Fatalf("remote main = %s, want the human's %s untouched", got, human)
	}
	for _, bad := range [][2]string{{"+HEAD", "main"}, {"HEAD", "+main"}, {"HEAD:refs/heads/x", "main"}, {"HEAD", "a:b"}} {
		if err := f.work.Push(ctx, "origin", bad[0], bad[1]); err == nil || errors.Is(err, repo.ErrNonFastForward) {
			t.Errorf("Push(%q, %q) = %v, want refusal", bad[0], bad[1], err)
		}
	}
	if got := git(t, remote, "rev-parse", "main"); got != human {
		t.Fatalf("remote main moved to %s", got)
	}

	// After integrating the remote, the push is a fast-forward and goes
	// through, to a full ref name as well.
	if err := f.work.Fetch(ctx, "origin", "+refs/heads/main:refs/remotes/origin/main"); err != nil {
		t.Fatal(err)
	}
	rebaser := &repo.Git{Dir: f.work.Dir, Env: append(f.env, "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")}
	git(t, rebaser, "rebase", "--quiet", "origin/main")
	if err := f.work.Push(ctx, "origin", "HEAD", "refs/heads/main"); err != nil {
		t.Fatalf("fast-forward push: %v", err)
	}
	head, _ := f.work.HeadSHA(ctx)
	if got := git(t, remote, "rev-parse", "main"); got != head {
		t.Errorf("remote main = %s, want %s", got, head)
	}
	if ok, err := f.work.IsAncestor(ctx, human, head); err != nil || !ok {
		t.Errorf("IsAncestor(human, head) = %v, %v", ok, err)
	}
}

func TestHistoryQueries(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	base := git(t, f.work, "rev-parse", "HEAD")
	// main moves on after the branch forks: three-dot must ignore it.
	git(t, f.work, "checkout", "--quiet", "-b", "feature")
	write(t, f.work.Dir, "a.txt", "one\n2\nthree\nfour\n") // +2 -1
	write(t, f.work.Dir, "new.txt", "n1\nn2\n")            // +2
	c1 := commit(t, f.work, "feature one")
	write(t, f.work.Dir, "new.txt", "n1\n") // -1
	c2 := commit(t, f.work, "feature two\n\nThis mentions Converge-Round: 2 in the body.")
	if err := f.work.Checkout(ctx, "main"); err != nil {
		t.Fatal(err)
	}
	write(t, f.work.Dir, "main.txt", "m\nm\nm\n")
	mainHead := commit(t, f.work, "main moves")
	if err := f.work.Checkout(ctx, "feature"); err != nil {
		t.Fatal(err)
	}

	add, del, err := f.work.DiffLines(ctx, "main", "feature")
	if err != nil || add != 3 || del != 1 {
		t.Errorf("DiffLines(main...feature) = +%d -%d, %v; want +3 -1", add, del, err)
	}
	add, del, err = f.work.DiffLinesBetween(ctx, c1, c2)
	if err != nil || add != 0 || del != 1 {
		t.Errorf("DiffLinesBetween(c1..c2) = +%d -%d, %v; want +0 -1", add, del, err)
	}
	// Two-dot against main counts main's own change as deleted.
	if add, del, _ = f.work.DiffLinesBetween(ctx, "main", "feature"); del != 4 {
		t.Errorf("DiffLinesBetween(main..feature) = +%d -%d; want main's 3 lines deleted too", add, del)
	}
	files, err := f.work.ChangedFiles(ctx, "main", "feature")
	if err != nil || strings.Join(files, ",") != "a.txt,new.txt" {
		t.Errorf("ChangedFiles = %v, %v", files, err)
	}
	cs, err := f.work.CommitsBetween(ctx, base, "feature")
	if err != nil || len(cs) != 2 || cs[0].SHA != c1 || cs[1].SHA != c2 {
		t.Fatalf("CommitsBetween = %+v, %v", cs, err)
	}
	if cs[1].HasTrailer("Converge-Round") {
		t.Error("a body mention was parsed as a trailer")
	}
	if ok, _ := f.work.IsAncestor(ctx, mainHead, "feature"); ok {
		t.Error("IsAncestor(main, feature) = true")
	}
	if ok, _ := f.work.IsAncestor(ctx, base, "feature"); !ok {
		t.Error("IsAncestor(base, feature) = false")
	}
	if _, err := f.work.IsAncestor(ctx, "no-such-ref", "feature"); err == nil {
		t.Error("IsAncestor with a bad ref: no error")
	}
}

func TestWorktrees(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	head, _ := f.work.HeadSHA(ctx)
	wtPath := filepath.Join(t.TempDir(), "wt-detached")
	wt, err := f.work.AddWorktree(ctx, wtPath, head, "")
	if err != nil {
		t.Fatal(err)
	}
	if h, _ := wt.HeadSHA(ctx); h != head {
		t.Errorf("worktree HEAD = %s, want %s", h, head)
	}
	if b := git(t, wt, "branch", "--show-current"); b != "" {
		t.Errorf("detached worktree on branch %q", b)
	}
	write(t, wt.Dir, "scratch.txt", "x\n")
	wt2, err := f.work.AddWorktree(ctx, filepath.Join(t.TempDir(), "wt-branch"), "main", "converge/r-1")
	if err != nil {
		t.Fatal(err)
	}
	if b := git(t, wt2, "branch", "--show-current"); b != "converge/r-1" {
		t.Errorf("worktree branch = %q", b)
	}
	// Dirty worktrees are removed too: they are scratch space.
	if err := f.work.RemoveWorktree(ctx, wtPath); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(wtPath); !os.IsNotExist(err) {
		t.Errorf("worktree dir still there: %v", err)
	}
	if err := f.work.RemoveWorktree(ctx, wtPath); err != nil {
		t.Errorf("removing a removed worktree: %v", err)
	}
	if list := git(t, f.work, "worktree", "list", "--porcelain"); strings.Contains(list, "wt-detached") {
		t.Errorf("worktree still listed:\n%s", list)
	}
}

func TestErrorNamesSubcommandAndReason(t *testing.T) {
	ctx := context.Background()
	f := newFixture(t)
	_, err := f.work.Run(ctx, "checkout", "no-such-branch")
	var ge *repo.Error
	if !errors.As(err, &ge) || ge.Subcommand != "checkout" || ge.ExitCode == 0 {
		t.Fatalf("err = %#v", err)
	}
	if msg := err.Error(); !strings.HasPrefix(msg, "git checkout: ") || !strings.Contains(msg, "no-such-branch") {
		t.Errorf("message = %q", msg)
	}
	if _, err := f.work.HeadSHA(ctx); err != nil {
		t.Fatal(err)
	}
	empty := &repo.Git{Dir: t.TempDir(), Env: f.env}
	git(t, empty, "init", "--quiet")
	if _, err := empty.HeadSHA(ctx); err == nil {
		t.Error("HeadSHA in an empty repository: no error")
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.work.Run(cctx, "status"); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled Run: %v, want context.Canceled", err)
	}
}
