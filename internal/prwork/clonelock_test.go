package prwork_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// TestREL2_StaleRefLocksOfAKilledGitAreRecovered: a converge SIGKILLed
// mid-push or mid-fetch takes its git with it, which can leave ref lock
// files in the shared clone; git then refuses every later update of those
// refs ("remove the file manually to continue"). The next run, holding
// the clone's lock, removes them and fetches and pushes.
func TestREL2_StaleRefLocksOfAKilledGitAreRecovered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hub, n, ref := calcPR(t)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr0, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	ws := calcWorkspace(hub, tok, root, "r-lock")
	if _, err := ws.Prepare(ctx, pr0); err != nil {
		t.Fatal(err)
	}
	// What a git killed while updating the base's and the head's
	// remote-tracking refs leaves behind.
	matches, _ := filepath.Glob(filepath.Join(root, "clones", "*", "acme", "calc", "refs", "remotes", "origin"))
	if len(matches) != 1 {
		t.Fatalf("find the clone's remote-tracking refs: %v", matches)
	}
	tracking := matches[0]
	for _, lock := range []string{"main.lock", filepath.Join("feature", "half.lock")} {
		p := filepath.Join(tracking, lock)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, nil, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// Two rounds: the first one's push moves the head, so the second
	// one's fetch must update the locked remote-tracking ref.
	var head string
	for round, f := range []prloop.Finding{
		{ID: "T-half", ThreadID: "T-half", Path: "calc.go", StartLine: 8, EndLine: 8, Summary: suggestion("// Half halves n, rounding toward zero.")},
		{ID: "T-double", ThreadID: "T-double", Path: "calc.go", StartLine: 3, EndLine: 3, Summary: suggestion("// Double doubles n; it may overflow.")},
	} {
		pr, err := client.Observe(ctx, ref)
		if err != nil {
			t.Fatal(err)
		}
		res, err := ws.Fix(ctx, pr, round+1, []prloop.Finding{f})
		if err != nil {
			t.Fatalf("round %d after a killed git's ref locks: %v", round+1, err)
		}
		if res.CommitSHA == "" {
			t.Fatalf("round %d pushed nothing: %+v", round+1, res)
		}
		head = res.CommitSHA
	}
	st, _ := hub.PR("acme", "calc", n)
	if st.HeadSHA != head {
		t.Fatalf("PR head %s, want the second round's pushed commit %s", st.HeadSHA, head)
	}
}

// TestREL2_HalfAddedWorktreeOfAKilledGitIsDropped: a converge SIGKILLed
// mid-`git worktree add` takes its git with it, which can leave in the
// shared clone a worktree record whose HEAD is still the null object id
// git writes first (and locked, so `git worktree prune` keeps it). Every
// later fetch into the clone then fails ("did not send all necessary
// objects"), for every run on the clone: a `converge serve` SIGKILLed so
// resumed none of its 17 unfinished runs. The next run, holding the
// clone's lock, drops the record, and fetches and pushes.
func TestREL2_HalfAddedWorktreeOfAKilledGitIsDropped(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hub, n, ref := calcPR(t)
	tok := hub.Tokens().Author
	client := hubtest.Client(t, hub, tok)
	pr, err := client.Observe(ctx, ref)
	if err != nil {
		t.Fatal(err)
	}
	root := t.TempDir()
	ws := calcWorkspace(hub, tok, root, "r-half")
	if _, err := ws.Prepare(ctx, pr); err != nil {
		t.Fatal(err)
	}
	matches, _ := filepath.Glob(filepath.Join(root, "clones", "*", "acme", "calc"))
	if len(matches) != 1 {
		t.Fatalf("find the clone: %v", matches)
	}
	clone := matches[0]
	// What git leaves when killed after writing the new record's HEAD
	// and before pointing it at the commit.
	half := filepath.Join(t.TempDir(), "half")
	gitIn(t, clone, "worktree", "add", "--quiet", "--detach", half, pr.HeadSHA)
	record := filepath.Join(clone, "worktrees", "half")
	for name, content := range map[string]string{"HEAD": strings.Repeat("0", 40) + "\n", "locked": "initializing"} {
		if err := os.WriteFile(filepath.Join(record, name), []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if out, err := exec.Command("git", "-C", clone, "fetch", "--quiet", "origin").CombinedOutput(); err == nil {
		t.Fatalf("a fetch beside the half-added worktree worked; the test plants nothing that breaks one: %s", out)
	}

	res, err := ws.Fix(ctx, pr, 1, []prloop.Finding{{ID: "T-half", ThreadID: "T-half", Path: "calc.go", StartLine: 8, EndLine: 8,
		Summary: suggestion("// Half halves n, rounding toward zero.")}})
	if err != nil {
		t.Fatalf("the round after a killed git's half-added worktree: %v", err)
	}
	if res.CommitSHA == "" {
		t.Fatalf("the round pushed nothing: %+v", res)
	}
	if st, _ := hub.PR("acme", "calc", n); st.HeadSHA != res.CommitSHA {
		t.Fatalf("PR head %s, want the round's pushed commit %s", st.HeadSHA, res.CommitSHA)
	}
	if _, err := os.Stat(record); !os.IsNotExist(err) {
		t.Fatalf("the half-added worktree's record is still there: %v", err)
	}
}

func gitIn(t *testing.T, dir string, args ...string) {
	t.Helper()
	if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
		t.Fatalf("git %v: %v: %s", args, err, out)
	}
}
