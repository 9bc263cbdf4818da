//go:build unix

package prwork

import (
	"context"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
)

const censusCalc = "package calc\n\nfunc Add(a, b int) int { return a + b }\n"

const censusCalcTest = `package calc

import "testing"

func TestAdd(t *testing.T) {
	if Add(1, 2) != 3 {
		t.Fatal("Add")
	}
}

func TestZero(t *testing.T) {
	if Add(0, 0) != 0 {
		t.Fatal("zero")
	}
}
`

// censusFixer is a command fixer, each fix claimed: T-tag puts the test
// file behind a build constraint no build sets (its tests vanish, and no
// test function is removed or skipped in its text: PR-V3 does not see it,
// the census does); T-delete deletes TestZero; T-ok edits calc.go only.
const censusFixer = `task=$(cat)
case "$task" in *'"id":"T-tag"'*)
  { printf '//go:build never\n\n'; cat calc_test.go; } > calc_test.go.new && mv calc_test.go.new calc_test.go;;
esac
case "$task" in *'"id":"T-delete"'*)
  printf 'package calc\n\nimport "testing"\n\nfunc TestAdd(t *testing.T) {\n\tif Add(1, 2) != 3 {\n\t\tt.Fatal("Add")\n\t}\n}\n' > calc_test.go;;
esac
case "$task" in *'"id":"T-ok"'*) echo '// Add adds.' >> calc.go;; esac
case "$task" in *'"id":"T-break"'*) sed -i 's/return a + b/return a - b/' calc.go;; esac
case "$task" in *'"id":"T-exit0"'*)
  sed -i 's/return a + b/return a - b/' calc.go
  sed -i 's/^import "testing"$/import (\n\t"os"\n\t"testing"\n)\n\nfunc TestMain(m *testing.M) { m.Run(); os.Exit(0) }/' calc_test.go;;
esac
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["calc.go"]}'`

func censusPR(t *testing.T) (pr *censusPRT) {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	p, bare := localPR(t, map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": censusCalc, "calc_test.go": censusCalcTest},
		map[string]string{"calc.go": censusCalc + "\nfunc Sub(a, b int) int { return a - b }\n"})
	return &censusPRT{pr: p, bare: bare}
}

type censusPRT struct {
	pr   *forge.PullRequest
	bare string
}

// TestPR_V4_FixThatLosesATestIsNotPushed: of two fixes that each claim
// success, the one after which the tests of a file no longer run (a build
// constraint: no test text removed or skipped, so only the census sees
// it) is rejected like a red build, naming the tests; the other is
// pushed. The round records the census of the baseline and the commit.
func TestPR_V4_FixThatLosesATestIsNotPushed(t *testing.T) {
	c := censusPR(t)
	ws := testWorkspace(t, c.bare, commandAgent(t, censusFixer, 0), "go test ./...")
	findings := []prloop.Finding{
		{ID: "T-tag", ThreadID: "T-tag", Path: "calc_test.go", EndLine: 1, Summary: "fix the test's package clause"},
		{ID: "T-ok", ThreadID: "T-ok", Path: "calc.go", EndLine: 5, Summary: "document Sub"},
	}
	res, err := ws.Fix(context.Background(), c.pr, 1, findings)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 1 || res.Addressed[0] != "T-ok" || res.CommitSHA == "" || remoteHead(t, c.bare) != res.CommitSHA {
		t.Fatalf("addressed %v blocked %+v commit %q: want only T-ok pushed", res.Addressed, res.Blocked, res.CommitSHA)
	}
	why := map[string]string{}
	for _, b := range res.Blocked {
		why[b.ID] = b.Reason
	}
	if r := why["T-tag"]; !strings.Contains(r, "no longer run: example.com/calc.TestAdd, example.com/calc.TestZero") {
		t.Errorf("T-tag: %q", r)
	}
	first, last := res.Censuses[0], res.Censuses[len(res.Censuses)-1]
	if first.Kind != prloop.CensusBaseline || first.Head != c.pr.HeadSHA || !first.Known || first.Ran != 2 ||
		last.Kind != prloop.CensusCommit || last.Head != res.CommitSHA || !last.Known || last.Ran != 2 || last.Skipped != 0 {
		t.Fatalf("censuses %v: want the baseline's and the commit's, 2 ran each", res.Censuses)
	}
}

// TestPR_V4_FindingMayRemoveATest: a test a finding of the round names
// and asks to remove may vanish (the census and PR-V3 read the same
// words); the removal is pushed.
func TestPR_V4_FindingMayRemoveATest(t *testing.T) {
	c := censusPR(t)
	ws := testWorkspace(t, c.bare, commandAgent(t, censusFixer, 0), "go test ./...")
	res, err := ws.Fix(context.Background(), c.pr, 1, []prloop.Finding{{ID: "T-delete", ThreadID: "T-delete", Path: "calc_test.go", EndLine: 11,
		Summary: "TestZero tests nothing TestAdd does not; remove it."}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 1 || res.CommitSHA == "" {
		t.Fatalf("result %+v: want the removal pushed", res)
	}
	last := res.Censuses[len(res.Censuses)-1]
	if !last.Known || last.Ran != 1 {
		t.Fatalf("census of the commit %v: want TestAdd alone", last)
	}
}

// TestPR_V4_NoTestCommandPushesNothing: with no test command found, no
// fixer runs and the findings are handed off "no test command"; with
// allow_untested the fix is pushed, its census saying it was untested.
func TestPR_V4_NoTestCommandPushesNothing(t *testing.T) {
	pr, bare := localPR(t, map[string]string{"notes.txt": "one\n"}, map[string]string{"notes.txt": "one\ntwo\n"})
	a := commandAgent(t, `cat >/dev/null; echo fixed >> notes.txt; echo '`+okRecord+`'`, 0)
	ws := testWorkspace(t, bare, a, "")
	ws.AllowUntested = false
	f := []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "notes.txt", EndLine: 2, Summary: "fix"}}
	head := remoteHead(t, bare)
	res, err := ws.Fix(context.Background(), pr, 1, f)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Blocked) != 1 || res.Blocked[0].Reason != prloop.NoTestCommand || res.CommitSHA != "" || a.runs.Load() != 0 || remoteHead(t, bare) != head {
		t.Fatalf("result %+v after %d fixer runs: want T1 handed off %q, nothing run or pushed", res, a.runs.Load(), prloop.NoTestCommand)
	}
	ws.AllowUntested = true
	res, err = ws.Fix(context.Background(), pr, 1, f)
	if err != nil {
		t.Fatal(err)
	}
	if res.CommitSHA == "" || len(res.Censuses) != 2 || res.Censuses[1].Known || res.Censuses[1].Head != res.CommitSHA {
		t.Fatalf("result %+v: want the fix pushed untested, its census unknown", res)
	}
	if !strings.Contains(res.Censuses[1].Census.String(), "untested") {
		t.Errorf("census %s", res.Censuses[1])
	}
}

// TestPR_V4_AFailingTestCountsWhateverTheExitStatus: a fix that breaks
// Add and adds a TestMain that runs the tests and exits 0 makes the test
// command green. Unasked, the TestMain is test infrastructure and the
// change is undone; asked for by a finding on those lines, the census
// still counts TestAdd failing, which the baseline passed. Either way
// nothing is pushed: the branch at the forge stays where it was.
func TestPR_V4_AFailingTestCountsWhateverTheExitStatus(t *testing.T) {
	for _, tc := range []struct {
		finding prloop.Finding
		want    string
	}{
		{prloop.Finding{ID: "T-exit0", ThreadID: "T-exit0", Path: "calc.go", EndLine: 3, Summary: "Add is slow"}, "the tests or the test command read"},
		{prloop.Finding{ID: "T-exit0", ThreadID: "T-exit0", Path: "calc_test.go", StartLine: 1, EndLine: 5, Summary: "Add a TestMain that sets the tests up"}, "--- FAIL: TestAdd"},
	} {
		c := censusPR(t)
		ws := testWorkspace(t, c.bare, commandAgent(t, censusFixer, 0), "go test ./...")
		res, err := ws.Fix(context.Background(), c.pr, 1, []prloop.Finding{tc.finding})
		if err != nil {
			t.Fatal(err)
		}
		if len(res.Addressed) != 0 || res.CommitSHA != "" || remoteHead(t, c.bare) != c.pr.HeadSHA {
			t.Fatalf("%s: addressed %v commit %q: want nothing pushed", tc.finding.Summary, res.Addressed, res.CommitSHA)
		}
		if len(res.Blocked) != 1 || !strings.Contains(res.Blocked[0].Reason, tc.want) {
			t.Fatalf("%s: blocked %+v: want %q", tc.finding.Summary, res.Blocked, tc.want)
		}
	}
}

// TestPR_V4_TheTestCommandIsFrozenFromTheBaseBranch: the pull request's
// head adds a Makefile whose test target passes whatever happens
// (discovery would prefer it to go.mod); the run's test command is still
// the base branch's `go test ./...`, so a fix that breaks Add is not
// pushed. The head's own Makefile is the PR's change, not the round's.
func TestPR_V4_TheTestCommandIsFrozenFromTheBaseBranch(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	p, bare := localPR(t, map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": censusCalc, "calc_test.go": censusCalcTest},
		map[string]string{"calc.go": censusCalc + "\nfunc Sub(a, b int) int { return a - b }\n", "Makefile": "test:\n\ttrue\n"})
	ws := testWorkspace(t, bare, commandAgent(t, censusFixer, 0), "")
	ws.AllowUntested = false
	var logs []string
	ws.Logf = func(format string, args ...any) { logs = append(logs, fmt.Sprintf(format, args...)) }
	res, err := ws.Fix(context.Background(), p, 1, []prloop.Finding{{ID: "T-break", ThreadID: "T-break", Path: "calc.go", EndLine: 3, Summary: "Add is slow"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Addressed) != 0 || res.CommitSHA != "" || remoteHead(t, bare) != p.HeadSHA {
		t.Fatalf("addressed %v commit %q: want the broken fix refused by the base's test command\n%s", res.Addressed, res.CommitSHA, strings.Join(logs, "\n"))
	}
	if len(res.Blocked) != 1 || !strings.Contains(res.Blocked[0].Reason, "TestAdd") {
		t.Fatalf("blocked %+v", res.Blocked)
	}
	if !slices.ContainsFunc(logs, func(l string) bool {
		return strings.Contains(l, `test command "go test ./..."`) && strings.Contains(l, "frozen")
	}) {
		t.Errorf("the log does not say which command was frozen:\n%s", strings.Join(logs, "\n"))
	}
}
