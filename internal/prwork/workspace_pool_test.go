//go:build unix

package prwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/agenttest"
	"github.com/convergeloop/converge/internal/prloop"
)

// TestAG_P1_FixersOnDifferentFilesRunAtOnceInOneCommit: the findings of a
// round on two files go to two fixers that run at the same time, each in
// its own worktree — each waits, bounded, for the other's start marker
// and writes whether it saw it — and both changes land in one pushed
// commit; no fixer worktree is left.
func TestAG_P1_FixersOnDifferentFilesRunAtOnceInOneCommit(t *testing.T) {
	t.Parallel()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"}, map[string]string{"a.txt": "a\nA\n", "b.txt": "b\nB\n"})
	marks := t.TempDir()
	a := commandAgent(t, `path=$(cat | grep -o '"path":"[^"]*"' | head -1 | cut -d'"' -f4)
case "$path" in a.txt) other=b.txt ;; *) other=a.txt ;; esac
touch `+marks+`/"$path"
saw=alone
i=0
while [ $i -lt 200 ]; do
  if [ -e `+marks+`/"$other" ]; then saw=together; break; fi
  sleep 0.05; i=$((i+1))
done
echo "fixed $saw in $(pwd)" >> "$path"
echo '`+okRecord+`'`, 0)
	ws := testWorkspace(t, bare, a, "")
	findings := []prloop.Finding{
		{ID: "TA", ThreadID: "TA", Path: "a.txt", EndLine: 2, Summary: "fix a"},
		{ID: "TB", ThreadID: "TB", Path: "b.txt", EndLine: 2, Summary: "fix b"},
	}
	res, err := ws.Fix(context.Background(), pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 2 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA || a.runs.Load() != 2 {
		t.Fatalf("after %d runs: %+v; want both addressed in one pushed commit", a.runs.Load(), res)
	}
	parent, err := exec.Command("git", "--git-dir", bare, "rev-parse", res.CommitSHA+"~1").Output()
	if err != nil || strings.TrimSpace(string(parent)) != pr.HeadSHA {
		t.Errorf("the fix commit's parent is %s, want the PR's head: one commit", parent)
	}
	var dirs []string
	for _, name := range []string{"a.txt", "b.txt"} {
		out, err := exec.Command("git", "--git-dir", bare, "show", res.CommitSHA+":"+name).Output()
		if err != nil {
			t.Fatal(err)
		}
		last := strings.TrimSpace(string(out))
		last = last[strings.LastIndexByte(last, '\n')+1:]
		if !strings.HasPrefix(last, "fixed together in ") {
			t.Errorf("%s ends %q: the fixers did not run at the same time", name, last)
		}
		dirs = append(dirs, strings.TrimPrefix(last, "fixed together in "))
	}
	if dirs[0] == dirs[1] || dirs[0] == ws.worktree.Dir || dirs[1] == ws.worktree.Dir {
		t.Errorf("fixers ran in %q (run worktree %s), want a worktree each", dirs, ws.worktree.Dir)
	}
	out, err := exec.Command("git", "-C", ws.worktree.Dir, "worktree", "list", "--porcelain").Output()
	if err != nil || strings.Count(string(out), "worktree ") != 2 {
		t.Errorf("worktrees left: %s %v; want the clone and the run's", out, err)
	}
	if left, _ := os.ReadDir(filepath.Join(ws.Root, "worktrees", ws.RunID+".fixers")); len(left) != 0 {
		t.Errorf("left in the fixers' directory: %v", left)
	}
}

// TestAG_E1_FixerEscalatesToTheStrongerModel: a fixer that answers
// NEEDS_CONTEXT is dispatched again once with the file's content and the
// PR's change to it, then, answering NEEDS_CONTEXT again, on the next
// model of the ladder (CONVERGE_AGENT_MODEL), where it is done: its fix
// is pushed.
func TestAG_E1_FixerEscalatesToTheStrongerModel(t *testing.T) {
	t.Parallel()
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	log := filepath.Join(t.TempDir(), "runs")
	needs := `{"status":"blocked","next_action":"","needs_extension_minutes":0,"summary":"need more","files_changed":[],"implementer_status":"NEEDS_CONTEXT","reason":"which format do notes use?"}`
	a := commandAgent(t, `input=$(cat)
ctx=none
case "$input" in *'"context":"File notes.txt as it is now, lines 1-2 of 2:'*'1: one'*'2: two'*'+two'*) ctx=file-and-diff ;; esac
echo "${CONVERGE_AGENT_MODEL-unset} $ctx" >> `+log+`
if [ "$CONVERGE_AGENT_MODEL" = strong ]; then
  echo three >> notes.txt
  echo '`+okRecord+`'
else
  echo garbage-from-a-weak-run >> notes.txt
  echo '`+needs+`'
fi`, 0)
	ws := testWorkspace(t, bare, a, "")
	ws.Models = []string{"base", "strong"}
	res, err := ws.Fix(context.Background(), pr, 1, notesFinding)
	if err != nil {
		t.Fatal(err)
	}
	runs, err := os.ReadFile(log)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(runs)); strings.Join(got, " ") != "base none base file-and-diff strong file-and-diff" {
		t.Errorf("runs (model, context): %q; want base, base with the file and the PR's diff, then strong with it", got)
	}
	if len(res.Addressed) != 1 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA {
		t.Fatalf("%+v; want the finding addressed and pushed", res)
	}
	out, err := exec.Command("git", "--git-dir", bare, "show", res.CommitSHA+":notes.txt").Output()
	if err != nil || string(out) != "one\ntwo\nthree\n" {
		t.Errorf("pushed notes.txt = %q, %v; want the strong run's fix alone, from a reset tree", out, err)
	}

	// With one model the second NEEDS_CONTEXT is the end: a hand-off with
	// its reason, nothing pushed.
	pr, bare = localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	ws = testWorkspace(t, bare, a, "")
	res, err = ws.Fix(context.Background(), pr, 1, notesFinding)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blocked) != 1 || res.Blocked[0].Reason != "which format do notes use?" || res.CommitSHA != "" {
		t.Errorf("%+v; want a hand-off with the agent's reason and no commit", res)
	}
}

// TestPR_M5_FixCarriesWhatEveryFixerReported: the round's cost in the
// decision log is every fixer's usage, each attempt counted, a fixer that
// asked for more context included; and the round's notes say how that
// fixer's attempts went.
func TestPR_M5_FixCarriesWhatEveryFixerReported(t *testing.T) {
	t.Parallel()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n", "b.txt": "b\n"}, map[string]string{"a.txt": "a\nA\n", "b.txt": "b\nB\n"})
	// a.txt's fixer asks for more context once, then fixes; b.txt's fixes.
	a := commandAgent(t, `in=$(cat)
case "$in" in
*'"path":"a.txt"'*) case "$in" in *'What this pull request changed'*|*'as it is now'*) ;; *)
  echo '{"status":"blocked","implementer_status":"NEEDS_CONTEXT","next_action":"","needs_extension_minutes":0,"summary":"which a?","files_changed":[],"reason":"which a?"}'; exit 0 ;; esac
  echo fixed >> a.txt ;;
*) echo fixed >> b.txt ;;
esac
echo '`+okRecord+`'`, 0)
	u := agent.Usage{InputTokens: 100, OutputTokens: 10, CostUSD: 0.25, CostReported: true}
	ws := testWorkspace(t, bare, agenttest.Reporting{Agent: a, Usage: u}, "")
	findings := []prloop.Finding{
		{ID: "TA", ThreadID: "TA", Path: "a.txt", EndLine: 2, Summary: "fix a"},
		{ID: "TB", ThreadID: "TB", Path: "b.txt", EndLine: 2, Summary: "fix b"},
	}
	res, err := ws.Fix(context.Background(), pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 2 {
		t.Fatalf("addressed %v, blocked %+v", res.Addressed, res.Blocked)
	}
	if runs := a.runs.Load(); runs != 3 {
		t.Fatalf("%d fixer runs, want 3 (a.txt twice, b.txt once)", runs)
	}
	want := agent.Usage{InputTokens: 300, OutputTokens: 30, CostUSD: 0.75, CostReported: true, Runs: 3, PricedRuns: 3}
	if res.Usage != want {
		t.Fatalf("usage %+v, want %+v: every attempt of every fixer", res.Usage, want)
	}
	// The round's record says how a.txt's fixer got there (AG-T2).
	if len(res.Notes) != 1 || !strings.Contains(res.Notes[0], "fixer of file a.txt: DONE after attempt 1: NEEDS_CONTEXT (which a?); attempt 2 with more context: DONE") {
		t.Fatalf("notes %q", res.Notes)
	}
}

// TestREL2_FixerWorktreesOfAKilledRunAreSwept: a run killed while its
// fixers worked left their worktrees registered in the clone; the resumed
// run's next fix removes them before it makes its own, and leaves the
// run's own worktree alone.
func TestREL2_FixerWorktreesOfAKilledRunAreSwept(t *testing.T) {
	t.Parallel()
	pr, bare := localPR(t, map[string]string{"a.txt": "a\n"}, map[string]string{"a.txt": "a\nA\n"})
	a := commandAgent(t, `cat >/dev/null; echo fixed >> a.txt; echo '`+okRecord+`'`, 0)
	ws := testWorkspace(t, bare, a, "")
	if _, err := ws.Prepare(context.Background(), pr); err != nil {
		t.Fatal(err)
	}
	// What a killed pool leaves: a registered worktree in the fixers' dir.
	stale := filepath.Join(ws.Root, "worktrees", ws.RunID+".fixers", "task-1", "wt")
	if out, err := exec.Command("git", "-C", ws.clone.Dir, "worktree", "add", "--detach", stale, pr.HeadSHA).CombinedOutput(); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	res, err := ws.Fix(context.Background(), pr, 1, []prloop.Finding{{ID: "TA", ThreadID: "TA", Path: "a.txt", EndLine: 2, Summary: "fix a"}})
	if err != nil || len(res.Addressed) != 1 {
		t.Fatalf("fix: %+v, %v", res, err)
	}
	out, err := exec.Command("git", "-C", ws.worktree.Dir, "worktree", "list", "--porcelain").Output()
	if err != nil {
		t.Fatal(err)
	}
	if strings.Contains(string(out), stale) || strings.Count(string(out), "worktree ") != 2 {
		t.Fatalf("worktrees after the fix:\n%s\nwant the clone and the run's, not %s", out, stale)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Fatalf("the stale worktree's directory is still there: %v", err)
	}
}
