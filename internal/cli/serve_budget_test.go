package cli

import (
	"context"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/store"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestPR_G6_ServePrunesTheCloneCacheOnStart: `converge serve` starts on a
// state directory whose clone cache holds what earlier runs left: the
// clone of a repository no run works on any more, with the worktree of a
// run the store never finished recording (its registration names a live
// process: a pid reused), and the clone of a repository whose run another
// live process drives. On start it removes the first clone and its
// worktree, on disk, and keeps the second.
func TestPR_G6_ServePrunesTheCloneCacheOnStart(t *testing.T) {
	hub := hubtest.Start(t, time.Hour)
	state := t.TempDir()
	work := filepath.Join(state, "work")
	src := t.TempDir()
	git := func(dir string, args ...string) {
		t.Helper()
		cmd := exec.Command("git", append([]string{"-C", dir}, args...)...)
		cmd.Env = append(os.Environ(), "GIT_AUTHOR_NAME=t", "GIT_AUTHOR_EMAIL=t@example.com", "GIT_COMMITTER_NAME=t", "GIT_COMMITTER_EMAIL=t@example.com")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	git(src, "init", "--quiet")
	if err := os.WriteFile(filepath.Join(src, "a.txt"), []byte("a\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	git(src, "add", ".")
	git(src, "commit", "--quiet", "-m", "a")
	host, _ := os.Hostname()
	live := strconv.Itoa(os.Getpid()) + " " + host + "\n" // this test's: alive
	cached := func(repo, run string) string {
		t.Helper()
		clone := filepath.Join(work, "clones", "example.com", "acme", repo)
		if err := os.MkdirAll(filepath.Dir(clone), 0o755); err != nil {
			t.Fatal(err)
		}
		git(src, "clone", "--bare", "--quiet", src, clone)
		if err := os.MkdirAll(filepath.Join(clone, "converge-runs"), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(clone, "converge-runs", run), []byte(live), 0o644); err != nil {
			t.Fatal(err)
		}
		return clone
	}
	gone := cached("gone", "r-old")
	oldTree := filepath.Join(work, "worktrees", "r-old")
	git(gone, "worktree", "add", "--quiet", "--detach", oldTree, "HEAD")
	kept := cached("kept", "r-other")
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.CreateRun(context.Background(), store.Run{ID: "r-other", Kind: "loop", Target: src}); err != nil {
		t.Fatal(err)
	}
	db.Close()

	sp := startServe(t, map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author},
		"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", state)
	deadline := time.After(time.Minute)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for !strings.Contains(sp.out.String(), "pruned 1 clone(s)") {
		select {
		case <-tick.C:
		case <-sp.done:
			t.Fatalf("serve exited:\n%s", sp.out.String())
		case <-deadline:
			t.Fatalf("serve never pruned the clone cache:\n%s", sp.out.String())
		}
	}
	for _, p := range []string{gone, oldTree} {
		if _, err := os.Stat(p); !os.IsNotExist(err) {
			t.Errorf("%s is left (%v)", p, err)
		}
	}
	if _, err := os.Stat(filepath.Join(kept, "converge-runs", "r-other")); err != nil {
		t.Errorf("the clone a live run of another process uses was pruned: %v", err)
	}
}

// TestPR_S2_ServePollBudgetRefusesNone: a budget of no poll, and --keep
// (a worktree kept past the run), are refused before anything starts.
func TestPR_S2_ServePollBudgetRefusesNone(t *testing.T) {
	for _, args := range [][]string{{"--poll-budget", "0"}, {"--keep"}} {
		ios, _, errOut := testIO(nil)
		code := Run(context.Background(), append([]string{"serve", "--state", t.TempDir()}, args...), ios)
		if code != exitcode.Usage || !strings.Contains(errOut.String(), strings.TrimPrefix(args[0], "--")) {
			t.Errorf("serve %v: exit %d, want 2 (usage): %s", args, code, errOut)
		}
	}
}

// TestPR_S2_ServeLoopsTakeTheFleetsPollPermits: a serve loop waiting for a
// review that does not come polls through the fleet's budget: the permits
// /metrics reports fall from the budget's burst as its polls take them.
func TestPR_S2_ServeLoopsTakeTheFleetsPollPermits(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a PR loop")
	}
	hub := hubtest.Start(t, time.Hour) // Copilot's review never comes
	_, urls := hubtest.DemoPRs(t, hub, 1)
	sp := startServe(t, map[string]string{"CONVERGE_TOKEN": hub.Tokens().Author},
		append([]string{"--api-url", hub.APIURL(), "--ca-file", hub.CAFile(), "--state", t.TempDir(),
			"--poll-min", "1s", "--poll-max", "1s", "--poll-budget", "10"}, urls...)...)
	available := func() float64 {
		t.Helper()
		resp, err := http.Get("http://" + sp.addr + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		for line := range strings.Lines(string(b)) {
			if v, ok := strings.CutPrefix(line, "converge_poll_budget_available "); ok {
				f, err := strconv.ParseFloat(strings.TrimSpace(v), 64)
				if err != nil {
					t.Fatal(err)
				}
				return f
			}
		}
		t.Fatalf("no converge_poll_budget_available in /metrics:\n%s", b)
		return 0
	}
	// Its burst is one permit: the first poll takes it.
	deadline := time.After(3 * time.Minute)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for available() >= 1 {
		select {
		case <-tick.C:
		case <-sp.done:
			t.Fatalf("serve exited:\n%s", sp.out.String())
		case <-deadline:
			t.Fatalf("the waiting loop's polls took no permit of the fleet's budget:\n%s", sp.out.String())
		}
	}
}
