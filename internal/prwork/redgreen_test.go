//go:build unix

package prwork

import (
	"context"
	"os/exec"
	"strings"
	"testing"

	"github.com/convergeloop/converge/internal/prloop"
)

// rgFixer fixes Sub by the finding's id: T-rg also appends a test that
// fails without the fix; T-rewrite rewrites the buggy line equivalently
// and adds no test (a changed line, not a fix); T-green fixes Sub and
// appends a test that passes without the fix too.
const rgFixer = `task=$(cat)
case "$task" in *'"id":"T-rg"'*)
  sed -i 's/func Sub(a, b int) int { return a + b }/func Sub(a, b int) int { return a - b }/' calc.go
  printf '\nfunc TestSubtracts(t *testing.T) {\n\tif Sub(5, 3) != 2 {\n\t\tt.Fatal("Sub(5, 3)")\n\t}\n}\n' >> calc_test.go;;
esac
case "$task" in *'"id":"T-rewrite"'*)
  sed -i 's/func Sub(a, b int) int { return a + b }/func Sub(a, b int) int { return b + a }/' calc.go;;
esac
case "$task" in *'"id":"T-green"'*)
  sed -i 's/func Sub(a, b int) int { return a + b }/func Sub(a, b int) int { return a - b }/' calc.go
  printf '\nfunc TestAddAgain(t *testing.T) {\n\tif Add(1, 1) != 2 {\n\t\tt.Fatal("Add")\n\t}\n}\n' >> calc_test.go;;
esac
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["calc.go","calc_test.go"]}'`

// TestPR_V7_AStructuralFixIsProvenRedGreen: a structural finding is
// addressed only when a test converge ran fails on the round's base with
// only the fix's test changes and passes with the whole fix; a rewrite of
// the finding's lines with no such test (and no verifier: a command
// fixer, no judge), or a test that passes without the fix too, is not a
// proof and nothing is pushed. `proof: lines` takes the changed lines and
// says they are not proven.
func TestPR_V7_AStructuralFixIsProvenRedGreen(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	sub := censusCalc + "\nfunc Sub(a, b int) int { return a + b }\n"
	finding := func(id string) prloop.Finding {
		return prloop.Finding{ID: id, ThreadID: id, Path: "calc.go", StartLine: 5, EndLine: 5, Verdict: prloop.VerdictStructural,
			Summary: "Sub adds instead of subtracting."}
	}
	for _, tc := range []struct {
		id, proof string
		pushed    bool
		want      string
	}{
		{"T-rg", "", true, "proven by TestSubtracts: failed before the fix, passes with it"},
		{"T-rewrite", "", false, "no proof: the fix adds or changes no test that shows the finding"},
		{"T-green", "", false, "no proof: the fix's test changes (calc_test.go) pass without the fix too"},
		{"T-rewrite", ProofLines, true, "changed lines, not proven"},
	} {
		t.Run(tc.id+"/"+cmpOr(tc.proof, "red-green"), func(t *testing.T) {
			p, bare := localPR(t, map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": censusCalc, "calc_test.go": censusCalcTest},
				map[string]string{"calc.go": sub})
			ws := testWorkspace(t, bare, commandAgent(t, rgFixer, 0), "go test ./...")
			ws.Proof = tc.proof
			res, err := ws.Fix(context.Background(), p, 1, []prloop.Finding{finding(tc.id)})
			if err != nil {
				t.Fatal(err)
			}
			if tc.pushed {
				if len(res.Addressed) != 1 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA {
					t.Fatalf("addressed %v blocked %+v commit %q: want it pushed", res.Addressed, res.Blocked, res.CommitSHA)
				}
				if !strings.Contains(res.Proven[tc.id], tc.want) {
					t.Fatalf("proven %q, want %q", res.Proven[tc.id], tc.want)
				}
				return
			}
			if len(res.Addressed) != 0 || res.CommitSHA != "" || remoteHead(t, bare) != p.HeadSHA {
				t.Fatalf("addressed %v commit %q: want nothing pushed", res.Addressed, res.CommitSHA)
			}
			if len(res.Blocked) != 1 || !strings.Contains(res.Blocked[0].Reason, tc.want) {
				t.Fatalf("blocked %+v, want %q", res.Blocked, tc.want)
			}
		})
	}
}

// TestPR_V7_NoTestCanShowItTheFixersBackendAgreesInAFreshContext: a fix
// no test shows (a message's text) is proven by the verifier's agreement;
// with no judge, by the fixer's backend asked in a task of its own. It
// agreeing pushes the fix, saying so; it disagreeing hands it off "no
// proof", quoting it.
func TestPR_V7_NoTestCanShowItTheFixersBackendAgreesInAFreshContext(t *testing.T) {
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go")
	}
	msg := censusCalc + "\n// Describe says what Add does.\nfunc Describe() string { return \"adds tow numbers\" }\n"
	for _, verdict := range []string{"addressed", "not-addressed"} {
		t.Run(verdict, func(t *testing.T) {
			p, bare := localPR(t, map[string]string{"go.mod": "module example.com/calc\n\ngo 1.21\n", "calc.go": censusCalc, "calc_test.go": censusCalcTest},
				map[string]string{"calc.go": msg})
			fixer := commandAgent(t, `task=$(cat)
case "$task" in
*'"kind":"verify"'*) echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"verified","files_changed":[],"verdict":"`+verdict+`","why":"the message reads right now"}' ;;
*) sed -i 's/adds tow numbers/adds two numbers/' calc.go
   echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed the typo; no test can show a message text","files_changed":["calc.go"]}' ;;
esac`, 0)
			ws := testWorkspace(t, bare, fixer, "go test ./...")
			ws.FreshVerifier = fixer
			f := prloop.Finding{ID: "T-msg", ThreadID: "T-msg", Path: "calc.go", StartLine: 8, EndLine: 8, Verdict: prloop.VerdictStructural,
				Summary: "The message says 'tow'."}
			res, err := ws.Fix(context.Background(), p, 1, []prloop.Finding{f})
			if err != nil {
				t.Fatal(err)
			}
			if verdict == "addressed" {
				if len(res.Addressed) != 1 || res.CommitSHA == "" || remoteHead(t, bare) != res.CommitSHA ||
					!strings.Contains(res.Proven["T-msg"], "the verifier agreed in a fresh context (no test shows it): the message reads right now") {
					t.Fatalf("addressed %v proven %q blocked %+v: want it pushed on the verifier's word", res.Addressed, res.Proven, res.Blocked)
				}
				return
			}
			if len(res.Addressed) != 0 || res.CommitSHA != "" || len(res.Blocked) != 1 ||
				!strings.Contains(res.Blocked[0].Reason, "no proof: ") || !strings.Contains(res.Blocked[0].Reason, "the verifier did not agree") {
				t.Fatalf("addressed %v blocked %+v: want it handed off, no proof", res.Addressed, res.Blocked)
			}
		})
	}
}
