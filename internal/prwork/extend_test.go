//go:build unix

package prwork

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// partialRecord asks for 25 more minutes with a concrete next action.
const partialRecord = `{"status":"partial","next_action":"finish the note","needs_extension_minutes":25,"summary":"half done","files_changed":["notes.txt"]}`

// TestAG_T1_PartialFixIsExtended: a fixer that ends partial with a
// concrete next_action and needs_extension_minutes is run again on the
// tree it left, with min(needed, 10) minutes and told it is an extension;
// complete then, its work — both runs' — is committed and pushed.
func TestAG_T1_PartialFixIsExtended(t *testing.T) {
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	budgets := filepath.Join(t.TempDir(), "budgets")
	a := commandAgent(t, `task=$(cat)
printf '%s\n' "$task" | grep -o '"budget_seconds":[0-9.]*' >> `+budgets+`
case "$task" in
*'"extension":1'*) echo second-half >> notes.txt; echo '`+okRecord+`' ;;
*) echo first-half >> notes.txt; echo '`+partialRecord+`' ;;
esac`, 0)
	res, err := testWorkspace(t, bare, a, "").Fix(context.Background(), pr, 1, notesFinding)
	if err != nil {
		t.Fatal(err)
	}
	if a.runs.Load() != 2 || len(res.Addressed) != 1 || len(res.Blocked) != 0 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA {
		t.Fatalf("after %d runs: %+v; want the finding addressed and pushed after one extension", a.runs.Load(), res)
	}
	b, err := os.ReadFile(budgets)
	if err != nil {
		t.Fatal(err)
	}
	if got := strings.Fields(string(b)); len(got) != 2 || got[0] != `"budget_seconds":60` || got[1] != `"budget_seconds":600` {
		t.Errorf("budgets %q, want the task's minute, then min(25, 10) minutes", got)
	}
	out, err := exec.Command("git", "--git-dir", bare, "show", res.CommitSHA+":notes.txt").Output()
	if err != nil || string(out) != "one\ntwo\nfirst-half\nsecond-half\n" {
		t.Errorf("pushed notes.txt = %q, %v; want both runs' work", out, err)
	}
}

// TestAG_T1_ExtendedAtMostTwice: a fixer that stays partial is extended
// twice, then handed off with its next action; one without a next action
// is not extended at all.
func TestAG_T1_ExtendedAtMostTwice(t *testing.T) {
	for _, tc := range []struct {
		name, record string
		runs         int32
		reason       string
	}{
		{"always partial", partialRecord, 3, "finish the note"},
		{"partial without next action", `{"status":"partial","next_action":"","needs_extension_minutes":5,"summary":"ran out of ideas","files_changed":[]}`, 1, "ran out of ideas"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			res, runs := fixWithRecord(t, tc.record)
			if runs != tc.runs || len(res.Blocked) != 1 || res.Blocked[0].Reason != tc.reason || res.CommitSHA != "" {
				t.Errorf("after %d runs (want %d): %+v, want a hand-off with %q", runs, tc.runs, res, tc.reason)
			}
		})
	}
}
