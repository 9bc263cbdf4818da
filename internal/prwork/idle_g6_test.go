package prwork_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/classify"
	"github.com/convergeloop/converge/internal/emulator/fakehub"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prloop/prlooptest"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// waitProbe is the engine's clock; at each wait it looks at the state
// directory, as it is while the loop waits, and at the PR's head.
type waitProbe struct {
	*prlooptest.Clock
	look func() string

	mu      sync.Mutex
	held    []string // what a wait found held on disk ("" for nothing)
	heads   []string // the PR's head at each wait
	headNow func() string
}

func (p *waitProbe) After(d time.Duration) <-chan time.Time {
	held, head := p.look(), p.headNow()
	p.mu.Lock()
	p.held, p.heads = append(p.held, held), append(p.heads, head)
	p.mu.Unlock()
	return p.Clock.After(d)
}

// heldOnDisk says what the state directory root holds for runs beyond
// the clone cache's one bare clone of the repository: a worktree, a
// fixers' directory, a clone with a checkout, a worktree in the clone;
// "" when nothing.
func heldOnDisk(root string, gitEnv []string) string {
	var held []string
	if left, _ := os.ReadDir(filepath.Join(root, "worktrees")); len(left) > 0 {
		for _, e := range left {
			held = append(held, "worktrees/"+e.Name())
		}
	}
	clones, _ := filepath.Glob(filepath.Join(root, "clones", "*", "*", "*"))
	n := 0
	for _, c := range clones {
		if strings.HasSuffix(c, ".converge-lock") {
			continue
		}
		n++
		g := &repo.Git{Dir: c, Env: gitEnv}
		if out, err := g.Run(context.Background(), "rev-parse", "--is-bare-repository"); err != nil || strings.TrimSpace(out) != "true" {
			held = append(held, "a clone with a checkout: "+c)
		}
		if out, err := g.Run(context.Background(), "worktree", "list", "--porcelain"); err != nil || strings.Count(out, "worktree ") != 1 {
			held = append(held, "worktrees in the clone: "+strings.TrimSpace(out))
		}
	}
	if n > 1 {
		held = append(held, "more than the one cached clone")
	}
	return strings.Join(held, "; ")
}

// demoRun drives the emulator's demo PR to its end with the suggest
// fixer, parking (or not) at each wait, and returns the probe, the
// commits the loop pushed (subject and tree, oldest first) and the
// workspace.
func demoRun(t testing.TB, park bool) (*waitProbe, []string, *prwork.GitWorkspace) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, demo := hubtest.Demo(t, 300*time.Millisecond)
	ref, _ := forge.ParsePRURL(demo.PRURL)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	start, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	gws := demoWorkspace(t, hub, demo, tok)
	// Without parking, the worktree is kept as converge kept it before
	// idle loops gave it back.
	gws.KeepWorktree = !park
	probe := &waitProbe{
		Clock: prlooptest.NewClock(time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)),
		look:  func() string { return heldOnDisk(gws.Root, gws.GitEnv) },
		headNow: func() string {
			st, _ := hub.PR(demo.Owner, demo.Repo, demo.Number)
			return st.HeadSHA
		},
	}
	l := prloop.NewLoop(ref, prloop.Deps{Forge: client, Workspace: gws, Journal: &prlooptest.Journal{}, Config: withCopilot(prloop.DefaultConfig())})
	term, err := l.Run(ctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{Clock: probe, PollMin: time.Second, PollMax: 8 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	if term.Reason != prloop.ReasonTwoStable {
		t.Fatalf("want two-stable, got %+v", term)
	}
	end, _ := hub.PR(demo.Owner, demo.Repo, demo.Number)
	return probe, pushed(t, hub, demo, gws, start.HeadSHA, end.HeadSHA), gws
}

// pushed lists the commits from..to of the demo repository at the forge,
// each as its subject and tree.
func pushed(t testing.TB, hub *fakehub.Hub, demo fakehub.DemoInfo, ws *prwork.GitWorkspace, from, to string) []string {
	t.Helper()
	dir := t.TempDir()
	// ws.GitEnv carries the token for repo.Git only: no other process
	// can be started with it (SEC-8).
	g := &repo.Git{Dir: dir, Env: ws.GitEnv}
	ctx := context.Background()
	for _, args := range [][]string{
		{"init", "--quiet", "--bare", dir},
		{"fetch", "--quiet", hub.GitURL(demo.Owner, demo.Repo), "+refs/heads/*:refs/heads/*"},
	} {
		if _, err := g.Run(ctx, args...); err != nil {
			t.Fatalf("git %v: %v", args, err)
		}
	}
	out, err := g.Run(ctx, "log", "--reverse", "--format=%s %T", from+".."+to)
	if err != nil {
		t.Fatalf("git log: %v", err)
	}
	return strings.Split(strings.TrimSpace(out), "\n")
}

// TestPR_G6_IdleLoopHoldsNoWorktreeOrClone (`converge serve`: idle loops
// hold no clone or worktree): a PR run on the emulator that waits between
// its rounds holds, at every wait, no worktree, no fixers' directory and
// no clone of its own — only the clone cache's one bare clone of the
// repository — and converges with the same commits (subjects and trees)
// as a run that keeps its worktree; its Cleanup then leaves nothing.
func TestPR_G6_IdleLoopHoldsNoWorktreeOrClone(t *testing.T) {
	probe, commits, ws := demoRun(t, true)
	rounds := map[string]bool{}
	for i, held := range probe.held {
		if held != "" {
			t.Errorf("wait %d (PR head %s) found held on disk: %s", i+1, probe.heads[i], held)
		}
		rounds[probe.heads[i]] = true
	}
	t.Logf("%d waits on %d heads; commits %q", len(probe.held), len(rounds), commits)
	if len(commits) < 2 || len(rounds) < 3 {
		t.Fatalf("the run pushed %d commit(s) and waited on %d head(s): want waits between several rounds (commits %q)", len(commits), len(rounds), commits)
	}

	_, kept, kws := demoRun(t, false)
	t.Logf("worktrees made: %d giving it back at each wait, %d keeping it", ws.WorktreesMade(), kws.WorktreesMade())
	if strings.Join(kept, "\n") != strings.Join(commits, "\n") {
		t.Errorf("the run that gave back its worktree pushed\n%s\nwant, as the run that kept it,\n%s", strings.Join(commits, "\n"), strings.Join(kept, "\n"))
	}

	if err := ws.Cleanup(context.Background()); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{"worktrees", "clones"} {
		var left []string
		_ = filepath.WalkDir(filepath.Join(ws.Root, d), func(p string, e os.DirEntry, err error) error {
			if err == nil && !e.IsDir() && !strings.HasSuffix(p, ".converge-lock") {
				left = append(left, p)
			}
			return nil
		})
		if len(left) > 0 {
			t.Fatalf("after Cleanup %s holds %d file(s), e.g. %s", d, len(left), left[0])
		}
	}
}

// BenchmarkPR_G6_WorktreeAddsPerRound counts what giving the worktree
// back at each wait costs a PR run on the emulator (BENCHMARKS.md): the
// worktrees the run makes per round it pushes, parked and kept.
func BenchmarkPR_G6_WorktreeAddsPerRound(b *testing.B) {
	for _, park := range []bool{false, true} {
		name := "kept"
		if park {
			name = "parked"
		}
		b.Run(name, func(b *testing.B) {
			adds, rounds, waits := 0, 0, 0
			for range b.N {
				probe, commits, ws := demoRun(b, park)
				adds, rounds, waits = adds+ws.WorktreesMade(), rounds+len(commits), waits+len(probe.held)
			}
			b.ReportMetric(float64(adds)/float64(rounds), "worktree-adds/round")
			b.ReportMetric(float64(waits)/float64(b.N), "waits/run")
			b.ReportMetric(float64(rounds)/float64(b.N), "rounds/run")
		})
	}
}

// workingReviewWorkspace's local review works in the run's worktree and
// finishes only after the engine has observed the forge twice more, so
// after at least one wait: it records whether its worktree was there all
// along.
type workingReviewWorkspace struct {
	*prwork.GitWorkspace
	forge *countingForge

	mu      sync.Mutex
	reviews int
	lost    []string
}

func (w *workingReviewWorkspace) LocalReview(ctx context.Context, pr *forge.PullRequest, round int) (prloop.LocalReviewResult, error) {
	// The classifier's judge, as a review's angles would, reads the
	// files in the run's worktree, which it makes at the head.
	if _, err := w.ClassifyBorderline(ctx, pr, &classify.Judge{Agent: &capture{}}, classify.Request{Comments: []classify.Comment{{ID: "c1", Body: judgedBody}}}); err != nil {
		return prloop.LocalReviewResult{}, err
	}
	wt := filepath.Join(w.Root, "worktrees", w.RunID)
	start := w.forge.observations()
	deadline := time.After(20 * time.Second)
	for w.forge.observations() < start+2 {
		select {
		case <-ctx.Done():
			return prloop.LocalReviewResult{}, ctx.Err()
		case <-deadline:
			return prloop.LocalReviewResult{}, context.DeadlineExceeded
		case <-time.After(5 * time.Millisecond):
		}
		if _, err := os.Stat(filepath.Join(wt, ".git")); err != nil {
			w.mu.Lock()
			w.lost = append(w.lost, err.Error())
			w.mu.Unlock()
			break
		}
	}
	w.mu.Lock()
	w.reviews++
	w.mu.Unlock()
	return prloop.LocalReviewResult{Head: pr.HeadSHA, Summary: "clean\n<!-- converge:local-review head=" + pr.HeadSHA + " round=1 -->"}, nil
}

// TestPR_G6_ParkLeavesTheWorktreeOfARunningLocalReview: the loop is not
// idle while its local review works in the worktree beside the forge
// poll: the waits in between leave the worktree where it is.
func TestPR_G6_ParkLeavesTheWorktreeOfARunningLocalReview(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	hub, demo := hubtest.Demo(t, 300*time.Millisecond)
	ref, _ := forge.ParsePRURL(demo.PRURL)
	tok := hub.Tokens().Author
	cf := &countingForge{Forge: hubtest.Client(t, hub, tok)}
	ws := &workingReviewWorkspace{forge: cf, GitWorkspace: demoWorkspace(t, hub, demo, tok)}
	c := withCopilot(prloop.DefaultConfig())
	c.LocalReview = true
	l := prloop.NewLoop(ref, prloop.Deps{Forge: cf, Workspace: ws, Journal: &prlooptest.Journal{}, Config: c})
	term, err := l.Run(ctx, prloop.State{Phase: prloop.PhaseStart}, engine.Options{PollMin: 20 * time.Millisecond, PollMax: 100 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ws.mu.Lock()
	defer ws.mu.Unlock()
	if term.Reason != prloop.ReasonTwoStable || ws.reviews == 0 {
		t.Fatalf("want two-stable after local reviews, got %+v after %d reviews", term, ws.reviews)
	}
	if len(ws.lost) > 0 {
		t.Fatalf("a wait took the worktree from a running local review: %v", ws.lost)
	}
}
