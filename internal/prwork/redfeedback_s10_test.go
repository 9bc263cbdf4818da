package prwork

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/prloop"
)

// notesTests fails TestNotes while notes.txt holds BREAK.
const notesTests = `if grep -q BREAK notes.txt; then echo "=== RUN   TestNotes"; echo "--- FAIL: TestNotes (0.01s)"; echo "    notes_test.go:9: notes.txt is broken by BREAK"; echo FAIL; exit 1; fi
echo ok`

// redFixer keeps each task it gets in $D and breaks the build, unless
// its task carries the failing output: then it fixes the note properly.
// smart=false: it breaks the build whatever it is told.
func redFixer(t *testing.T, d string, smart bool) *counting {
	t.Helper()
	fix := `*"notes.txt is broken by BREAK"*) echo fixed >> notes.txt;;`
	if !smart {
		fix = ""
	}
	return commandAgent(t, `task=$(cat)
n=$(ls "`+d+`" | wc -l)
printf '%s' "$task" > "`+d+`/task.$n.json"
case "$task" in
`+fix+`
*) echo BREAK >> notes.txt;;
esac
echo '`+okRecord+`'`, 0)
}

func tasks(t *testing.T, d string) []command.Input {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(d, "task.*.json"))
	var out []command.Input
	for i := range files {
		raw, err := os.ReadFile(filepath.Join(d, "task."+strconv.Itoa(i)+".json"))
		if err != nil {
			t.Fatal(err)
		}
		var in command.Input
		if err := json.Unmarshal(raw, &in); err != nil {
			t.Fatal(err)
		}
		out = append(out, in)
	}
	return out
}

// TestPR_S10_RedBuildFedBackToTheFixer: the fix turns the tests red. The
// failing output goes back to the fixer, quoted as data, for one more try
// within the round; its second change is green and is pushed. A fixer
// that is red again is handed off quoting the failure, after two tries,
// not three, and nothing is pushed.
func TestPR_S10_RedBuildFedBackToTheFixer(t *testing.T) {
	finding := []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", EndLine: 2, Summary: "the second note is missing its end"}}
	for _, tt := range []struct {
		name  string
		smart bool
	}{
		{"fixed on the second try", true},
		{"red again: handed off", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
			d := t.TempDir()
			a := redFixer(t, d, tt.smart)
			res, err := testWorkspace(t, bare, a, notesTests).Fix(context.Background(), pr, 1, finding)
			if err != nil {
				t.Fatal(err)
			}
			ts := tasks(t, d)
			if len(ts) != 2 || a.runs.Load() != 2 {
				t.Fatalf("the fixer ran %d times (%d tasks kept), want twice", a.runs.Load(), len(ts))
			}
			if ts[0].Rejected != "" {
				t.Fatalf("the first try was told it was rejected: %q", ts[0].Rejected)
			}
			second := ts[1]
			if !strings.Contains(second.Rejected, "--- FAIL: TestNotes") || !strings.Contains(second.Rejected, "notes.txt is broken by BREAK") {
				t.Fatalf("the second try was not given the failing output: %q", second.Rejected)
			}
			// SEC-2: in the prompt the output is data, every line quoted.
			if !strings.Contains(second.Prompt, "| --- FAIL: TestNotes") || strings.Contains(second.Prompt, "\n--- FAIL: TestNotes") {
				t.Fatalf("the failing output is not quoted as data in the prompt:\n%s", second.Prompt)
			}
			if !tt.smart {
				if res.CommitSHA != "" || remoteHead(t, bare) != pr.HeadSHA || len(res.Addressed) != 0 {
					t.Fatalf("a red fix was pushed: %+v", res)
				}
				if len(res.Blocked) != 1 || !strings.Contains(res.Blocked[0].Reason, "after converge gave the fixer the failing output") || !strings.Contains(res.Blocked[0].Reason, "TestNotes") {
					t.Fatalf("blocked %+v, want T1 handed off quoting the failure", res.Blocked)
				}
				return
			}
			if len(res.Addressed) != 1 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA || !res.TestsPassed {
				t.Fatalf("addressed %v commit %q tests passed %v: want the second try pushed", res.Addressed, res.CommitSHA, res.TestsPassed)
			}
			out, err := exec.Command("git", "--git-dir", bare, "show", res.CommitSHA+":notes.txt").Output()
			if err != nil || strings.Contains(string(out), "BREAK") || !strings.Contains(string(out), "fixed") {
				t.Fatalf("the pushed notes.txt: %q %v", out, err)
			}
		})
	}
}
