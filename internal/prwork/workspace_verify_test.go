//go:build unix

package prwork

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
)

// gitOut runs git against dir (a bare repository or a work tree).
func gitOut(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", args...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return strings.TrimSpace(string(out))
}

// The notes PR: main has one line, the PR adds four.
func notesPR(t *testing.T) (prHead, bare string, fix func(body string) (prloop.FixResult, *counting, *GitWorkspace)) {
	t.Helper()
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n", "notes_test.go": "package notes\n\nfunc TestOne(t *testing.T) {}\n"},
		map[string]string{"notes.txt": "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n", "notes_test.go": "package notes\n\nfunc TestOne(t *testing.T) {}\n\nfunc TestTwo(t *testing.T) {}\n"})
	return pr.HeadSHA, bare, func(body string) (prloop.FixResult, *counting, *GitWorkspace) {
		t.Helper()
		a := commandAgent(t, body, 0)
		ws := testWorkspace(t, bare, a, "")
		res, err := ws.Fix(context.Background(), pr, 1, []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", StartLine: 2, EndLine: 2, Summary: "two is wrong"}})
		if err != nil {
			t.Fatal(err)
		}
		if res.CommitSHA != "" && remoteHead(t, bare) != res.CommitSHA {
			t.Fatalf("pushed %s, the remote has %s", res.CommitSHA, remoteHead(t, bare))
		}
		if res.CommitSHA != "" {
			if parent := gitOut(t, "--git-dir", bare, "rev-parse", res.CommitSHA+"~1"); parent != pr.HeadSHA {
				t.Errorf("the pushed commit's parent is %s, want the PR's head %s: converge's one commit", parent, pr.HeadSHA)
			}
		}
		return res, a, ws
	}
}

const gitID = `git -c user.name=fixer -c user.email=fixer@example.com`

// TestPR_V2_FixerHistoryIsDiscarded: a fixer that fixes the line, then
// commits, branches, tags, stashes a stray file and checks its commit out
// on a branch of its own: converge notes each, puts HEAD, the refs and
// the stash back, and pushes one commit of its own holding only the
// tree's difference — the fix, without the stashed file; the clone keeps
// no branch, tag or stash the fixer made.
func TestPR_V2_FixerHistoryIsDiscarded(t *testing.T) {
	t.Parallel()
	_, bare, fix := notesPR(t)
	res, _, ws := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
` + gitID + ` commit -qam "fixer's own commit"
git branch fixer-branch
git tag fixer-tag
echo stray > stray.txt
git add stray.txt
` + gitID + ` stash -q
git checkout -q -b fixer-side
echo '` + okRecord + `'`)
	if len(res.Addressed) != 1 || res.CommitSHA == "" {
		t.Fatalf("%+v; want the fix addressed and pushed", res)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"PR-V2", "checked out fixer-side", "created refs/heads/fixer-branch", "created refs/tags/fixer-tag", "stashed"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if !strings.Contains(res.Proven["T1"], "notes.txt line 2 changed") {
		t.Errorf("proven %q, want the changed line", res.Proven)
	}
	if files := gitOut(t, "--git-dir", bare, "ls-tree", "--name-only", res.CommitSHA); strings.Contains(files, "stray.txt") {
		t.Errorf("the pushed tree holds the stashed file: %s", files)
	}
	if msg := gitOut(t, "--git-dir", bare, "log", "-1", "--format=%an %B", res.CommitSHA); !strings.HasPrefix(msg, "converge ") || !strings.Contains(msg, prloop.CommitTrailer) {
		t.Errorf("the pushed commit is not converge's: %q", msg)
	}
	if left := gitOut(t, "-C", ws.worktree.Dir, "for-each-ref", "refs/heads/fixer-branch", "refs/heads/fixer-side", "refs/tags/fixer-tag", "refs/stash"); left != "" {
		t.Errorf("the fixer's refs are left in the clone: %s", left)
	}
}

// TestPR_V2_V3_ResetHardIsNotPushed: a fixer that runs git reset --hard
// HEAD~1 (throwing the PR's commit away) and claims success: HEAD's move
// is noted and undone, the tree's difference (the PR's work deleted) is
// undone by PR-V3, the finding is re-dispatched once with that reason
// and then blocked quoting it; nothing is pushed.
func TestPR_V2_V3_ResetHardIsNotPushed(t *testing.T) {
	t.Parallel()
	head, _, fix := notesPR(t)
	res, a, _ := fix(`cat > /dev/null
git reset -q --hard HEAD~1
echo '` + okRecord + `'`)
	if res.CommitSHA != "" || len(res.Addressed) != 0 || len(res.Blocked) != 1 {
		t.Fatalf("%+v; want nothing pushed and the finding blocked", res)
	}
	why := res.Blocked[0].Reason
	for _, want := range []string{"could not verify", "lines this pull request adds to notes.txt were removed", "dispatched again"} {
		if !strings.Contains(why, want) {
			t.Errorf("blocked reason %q lacks %q", why, want)
		}
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "moved HEAD from "+head[:12]) {
		t.Errorf("notes %q do not name the moved HEAD", res.Notes)
	}
	if n := a.runs.Load(); n != 2 {
		t.Errorf("the fixer ran %d times, want 2: once, then re-dispatched once", n)
	}
}

// TestPR_V1_UntouchedFindingIsRedispatchedWithTheReason: a fixer whose
// change is far from the finding's line: not addressed; its re-dispatch
// carries the reason, and when that one touches the line the finding is
// addressed, its proof naming the lines.
func TestPR_V1_UntouchedFindingIsRedispatchedWithTheReason(t *testing.T) {
	t.Parallel()
	_, _, fix := notesPR(t)
	seen := filepath.Join(t.TempDir(), "rejected")
	res, a, _ := fix(`input=$(cat)
case "$input" in
*'"rejected":'*'does not alter notes.txt near the finding'*)
  echo yes > ` + seen + `
  sed -i 's/^two$/TWO/' notes.txt ;;
*)
  printf 'x\nx\nx\nx\nx\nfar away\n' >> notes.txt ;;
esac
echo '` + okRecord + `'`)
	if n := a.runs.Load(); n != 2 {
		t.Fatalf("the fixer ran %d times, want 2", n)
	}
	if _, err := os.Stat(seen); err != nil {
		t.Fatalf("the re-dispatch did not carry the reason: %v", err)
	}
	if len(res.Addressed) != 1 || res.CommitSHA == "" || !strings.Contains(res.Proven["T1"], "notes.txt line 2 changed") {
		t.Fatalf("%+v; want the second fix addressed, proven at line 2", res)
	}
}

// TestPR_V3_NewFileNeedsAReason: a new file named by no finding is undone
// unless the fixer's record gives a reason for it in file_reasons.
func TestPR_V3_NewFileNeedsAReason(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name, record string
		kept         bool
	}{
		{"no reason", okRecord, false},
		{"a reason", `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["notes.txt","helper.txt"],"file_reasons":{"helper.txt":"the fix moves the table here"}}`, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, _, fix := notesPR(t)
			res, _, _ := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
echo table > helper.txt
echo '` + tc.record + `'`)
			if tc.kept != (len(res.Addressed) == 1) {
				t.Fatalf("%+v; want addressed %v", res, tc.kept)
			}
			if !tc.kept && !strings.Contains(res.Blocked[0].Reason, "helper.txt is named by no finding") {
				t.Errorf("blocked reason %q does not name the file", res.Blocked[0].Reason)
			}
		})
	}
}

// TestPR_V2_FixerHooksAndConfigAreUndone: a fixer that plants hooks in
// the shared repository (post-commit, pre-push) and a config entry that
// would run a program inside converge's own git commands
// (core.fsmonitor) has them detected, noted and removed before
// converge commits and pushes: none of them runs.
func TestPR_V2_FixerHooksAndConfigAreUndone(t *testing.T) {
	t.Parallel()
	_, _, fix := notesPR(t)
	ran := filepath.Join(t.TempDir(), "ran")
	res, _, ws := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
hooks=$(git rev-parse --git-path hooks)
mkdir -p "$hooks"
for h in post-commit pre-push pre-commit; do
  printf '#!/bin/sh\necho %s >> ` + ran + `\n' $h > "$hooks/$h"
  chmod +x "$hooks/$h"
done
git config core.fsmonitor 'echo fsmonitor >> ` + ran + `; false'
echo '` + okRecord + `'`)
	if len(res.Addressed) != 1 || res.CommitSHA == "" {
		t.Fatalf("%+v; want the fix addressed and pushed", res)
	}
	if b, err := os.ReadFile(ran); err == nil {
		t.Errorf("a fixer's hook or config ran inside converge's git: %s", b)
	}
	notes := strings.Join(res.Notes, "\n")
	for _, want := range []string{"changed the repository's post-commit", "changed the repository's pre-push", "changed the repository's config"} {
		if !strings.Contains(notes, want) {
			t.Errorf("notes %q lack %q", notes, want)
		}
	}
	if out, err := exec.Command("git", "-C", ws.worktree.Dir, "config", "--get", "core.fsmonitor").Output(); err == nil {
		t.Errorf("core.fsmonitor is still set: %s", out)
	}
}

// TestPR_V1_OutdatedFindingIsMappedFromItsCommit: a finding whose thread
// is outdated (no line on the head) was written on line 8 of an earlier
// commit; the PR added five lines above it since, so it is line 13 of
// the head. A fix there is addressed, its proof naming line 13; a fix at
// line 8 of the head, where the comment's number points now, is not.
func TestPR_V1_OutdatedFindingIsMappedFromItsCommit(t *testing.T) {
	t.Parallel()
	lines := "one\ntwo\nthree\nfour\nfive\nsix\nseven\neight\nnine\nten\n"
	pr, bare := localPR(t, map[string]string{"notes.txt": lines}, map[string]string{"notes.txt": "a\nb\nc\nd\ne\n" + lines})
	orig := gitOut(t, "--git-dir", bare, "rev-parse", "refs/heads/main")
	finding := []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", Outdated: true, OrigStart: 8, OrigEnd: 8, OriginalCommit: orig, Summary: "eight is wrong"}}
	for _, tc := range []struct {
		name, sed string
		addressed bool
	}{
		{"at the mapped line", "s/^eight$/EIGHT/", true},
		{"at the stale number", "8s/.*/EIGHT?/", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a := commandAgent(t, "cat > /dev/null\nsed -i '"+tc.sed+"' notes.txt\necho '"+okRecord+"'", 0)
			ws := testWorkspace(t, bare, a, "")
			res, err := ws.Fix(context.Background(), pr, 1, finding)
			if err != nil {
				t.Fatal(err)
			}
			if (len(res.Addressed) == 1) != tc.addressed {
				t.Fatalf("%+v; want addressed %v", res, tc.addressed)
			}
			if tc.addressed && !strings.Contains(res.Proven["T1"], "notes.txt line 13 changed (the finding's line 13") {
				t.Errorf("proven %q, want line 13", res.Proven["T1"])
			}
		})
	}
}

// TestPR_V2_ChangeOutsideTheFixersWorktreeIsUndone: a fixer that fixes
// its line in its own worktree and also writes into the run's worktree
// (which git worktree list names) has that second change undone: only
// what a fixer changed in its own worktree is taken.
func TestPR_V2_ChangeOutsideTheFixersWorktreeIsUndone(t *testing.T) {
	t.Parallel()
	_, bare, fix := notesPR(t)
	res, _, _ := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
for wt in $(git worktree list --porcelain | sed -n 's/^worktree //p'); do
  [ "$wt" = "$PWD" ] || echo sneaked >> "$wt/notes_test.go"
done
echo '` + okRecord + `'`)
	if len(res.Addressed) != 1 || res.CommitSHA == "" {
		t.Fatalf("%+v; want the fix addressed and pushed", res)
	}
	if got := gitOut(t, "--git-dir", bare, "show", res.CommitSHA+":notes_test.go"); strings.Contains(got, "sneaked") {
		t.Errorf("a change made outside the fixer's worktree was pushed:\n%s", got)
	}
	if !strings.Contains(strings.Join(res.Notes, "\n"), "notes_test.go was changed outside every fixer's worktree") {
		t.Errorf("notes %q do not say so", res.Notes)
	}
}

// TestPR_V3_WhatTheTestsWriteIsNotCommitted: the build/test step runs the
// change's code after it was verified; what that writes into the tree (a
// new file, an edit of a tracked one) is not committed: the commit is the
// verified tree.
func TestPR_V3_WhatTheTestsWriteIsNotCommitted(t *testing.T) {
	t.Parallel()
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\nthree\n"})
	a := commandAgent(t, "cat > /dev/null\nsed -i 's/^two$/TWO/' notes.txt\necho '"+okRecord+"'", 0)
	ws := testWorkspace(t, bare, a, "echo planted > backdoor.txt; echo appended >> notes.txt")
	res, err := ws.Fix(context.Background(), pr, 1, []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", EndLine: 2, Summary: "two"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 1 || res.CommitSHA == "" {
		t.Fatalf("%+v; want the fix pushed", res)
	}
	if files := gitOut(t, "--git-dir", bare, "ls-tree", "--name-only", res.CommitSHA); strings.Contains(files, "backdoor.txt") {
		t.Errorf("a file the tests wrote was committed: %s", files)
	}
	if got := gitOut(t, "--git-dir", bare, "show", res.CommitSHA+":notes.txt"); got != "one\nTWO\nthree" {
		t.Errorf("notes.txt committed as %q, want the verified fix only", got)
	}
}

// boundRecord is a complete record that fixed notes.txt and gives a
// plausible reason for each of files.
func boundRecord(files ...string) string {
	reasons := make([]string, 0, len(files))
	for _, f := range files {
		reasons = append(reasons, `"`+f+`":"the fix needs this data"`)
	}
	return `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["notes.txt"],"file_reasons":{` + strings.Join(reasons, ",") + `}}`
}

// TestPR_V3_ChangeOverABoundIsNotPushed: a fixer that fixes the line and
// adds, with a plausible reason, a 2 MiB binary file (over the 1 MiB a
// file may gain), a 70 MB text file (past the diff converge reads line
// by line: measured by its size) or 201 files (over the 200 a round may
// touch): its
// change is undone, nothing reaches the remote, and the finding is
// handed off at once, its reason naming the bound and its setting.
func TestPR_V3_ChangeOverABoundIsNotPushed(t *testing.T) {
	t.Parallel()
	var many []string
	for i := range 201 {
		many = append(many, fmt.Sprintf("data/%03d.txt", i))
	}
	for _, tc := range []struct {
		name, script, want string
	}{
		{"a file over 1 MiB", `head -c 2097152 /dev/urandom > data.bin
echo '` + boundRecord("data.bin") + `'`, "over the 1 MiB bound for one file (max_file_bytes)"},
		{"a text file past what a diff is read for", `head -c 70000000 /dev/zero | tr '\0' 'x' | fold -w 100 > data.txt
echo '` + boundRecord("data.txt") + `'`, "over the 1 MiB bound for one file (max_file_bytes)"},
		{"201 files", `mkdir data
i=0; while [ $i -lt 201 ]; do echo row > data/$(printf %03d $i).txt; i=$((i+1)); done
echo '` + boundRecord(many...) + `'`, "the round's change touches 202 files, over the bound of 200 (max_push_files)"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			head, bare, fix := notesPR(t)
			res, a, _ := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
` + tc.script)
			if got := remoteHead(t, bare); got != head {
				t.Fatalf("the remote's head moved to %s, want the PR's head %s: nothing pushed", got, head)
			}
			if res.CommitSHA != "" || len(res.Addressed) != 0 || len(res.Blocked) != 1 {
				t.Fatalf("%+v; want nothing pushed and the finding handed off", res)
			}
			if why := res.Blocked[0].Reason; !strings.Contains(why, tc.want) || !strings.Contains(why, "undone") {
				t.Errorf("hand-off reason %q does not name the bound: want %q", why, tc.want)
			}
			if n := a.runs.Load(); n != 1 {
				t.Errorf("the fixer ran %d times, want 1: a change over a bound is handed off, not dispatched again", n)
			}
		})
	}
}

// TestPR_V3_ChangeWithinTheBoundsIsPushed: the same fixer adding a
// 100 KiB file with a reason stays within every bound and is pushed.
func TestPR_V3_ChangeWithinTheBoundsIsPushed(t *testing.T) {
	t.Parallel()
	_, bare, fix := notesPR(t)
	res, _, _ := fix(`cat > /dev/null
sed -i 's/^two$/TWO/' notes.txt
head -c 102400 /dev/urandom > data.bin
echo '` + boundRecord("data.bin") + `'`)
	if len(res.Addressed) != 1 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA {
		t.Fatalf("%+v; want the fix addressed and pushed", res)
	}
	if files := gitOut(t, "--git-dir", bare, "ls-tree", "--name-only", res.CommitSHA); !strings.Contains(files, "data.bin") {
		t.Errorf("the pushed tree lacks the small file: %s", files)
	}
}
