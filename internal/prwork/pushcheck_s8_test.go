package prwork_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/repo"
	"github.com/convergeloop/converge/internal/testutil/hubtest"
)

// calcFixer is a command fixer that does what each finding of its task
// says, in free text: no suggestion says it before the fix.
const calcFixer = `task=$(cat)
case "$task" in *"Use a shift"*) sed -i 's|return n / 2|return n >> 1|' calc.go;; esac
case "$task" in *"Go back to dividing"*) sed -i 's|return n >> 1|return n / 2|' calc.go;; esac
case "$task" in *"Say twice"*) sed -i 's|// Double doubles n.|// Double returns twice n.|' calc.go;; esac
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fixed","files_changed":["calc.go"]}'`

// TestPR_S8_RevertingFixIsNeverPushed: round 1 replaced Half's division
// by a shift. In round 2 a reviewer asks in free text to go back, and the
// fixer does: that commit would undo round 1 on the same line, so it never
// reaches the forge. The finding is handed off citing both rounds; the
// round's other fix is pushed alone, and the forge's head keeps round 1's
// line. When the revert is the round's only fix, nothing is pushed.
func TestPR_S8_RevertingFixIsNeverPushed(t *testing.T) {
	for _, tt := range []struct {
		name  string
		other bool // a second, unrelated finding in round 2
	}{
		{"with another fix in the round", true},
		{"the revert alone", false},
	} {
		t.Run(tt.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
			defer cancel()
			hub, n, ref := calcPR(t)
			tok := hub.Tokens().Author
			client := hubtest.Client(t, hub, tok)
			p := filepath.Join(t.TempDir(), "fixer.sh")
			if err := os.WriteFile(p, []byte(calcFixer+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			fixer, err := command.New([]string{"sh", p}, command.Options{Name: "fixer"})
			if err != nil {
				t.Fatal(err)
			}
			ws := &prwork.GitWorkspace{
				Checkout: prwork.Checkout{
					Root:     t.TempDir(),
					RunID:    "r-s8",
					CloneURL: hub.GitURL("acme", "calc"),
					GitEnv:   repo.AuthEnvFor(hub.GitURL("acme", "calc"), tok, hub.CAFile()),
				},
				Agent:    fixer,
				AgentEnv: agent.ScrubEnv(os.Environ()),
				Budget:   time.Minute,
				Author:   "converge",
				Email:    "converge@example.com",
			}
			observe := func() *forge.PullRequest {
				pr, err := client.Observe(ctx, ref)
				if err != nil {
					t.Fatal(err)
				}
				return pr
			}
			// Round 1: the shift, pushed.
			r1, err := ws.Fix(ctx, observe(), 1, []prloop.Finding{{ID: "T1", ThreadID: "T1", Path: "calc.go", StartLine: 10, EndLine: 10, Summary: "Use a shift here."}})
			if err != nil || r1.CommitSHA == "" || len(r1.Hunks) == 0 {
				t.Fatalf("round 1: %+v %v", r1, err)
			}
			state := prloop.State{Round: 2, Rounds: []prloop.RoundRecord{{N: 1, CommitSHA: r1.CommitSHA, Hunks: r1.Hunks}, {N: 2, HeadSHA: r1.CommitSHA}}}

			// Round 2: the way back, and perhaps another fix.
			fs := []prloop.Finding{{ID: "T2", ThreadID: "T2", Path: "calc.go", StartLine: 10, EndLine: 10, Summary: "Go back to dividing by two, as it was."}}
			if tt.other {
				fs = append(fs, prloop.Finding{ID: "T3", ThreadID: "T3", Path: "calc.go", StartLine: 3, EndLine: 3, Summary: "Say twice in the doc comment."})
			}
			r2, err := ws.FixChecked(ctx, observe(), 2, fs, prloop.NewPushCheck(state))
			if err != nil {
				t.Fatal(err)
			}
			i := slices.IndexFunc(r2.Blocked, func(b prloop.BlockedFinding) bool { return b.ID == "T2" })
			if i < 0 || slices.Contains(r2.Addressed, "T2") {
				t.Fatalf("T2 addressed %v, blocked %+v: want it handed off", r2.Addressed, r2.Blocked)
			}
			why := r2.Blocked[i].Reason
			if !strings.Contains(why, "oscillation") || !strings.Contains(why, "round 2") || !strings.Contains(why, "round 1 (commit "+r1.CommitSHA[:7]) || !strings.Contains(why, "did not push") {
				t.Fatalf("T2's reason must cite both rounds: %q", why)
			}
			if !slices.ContainsFunc(r2.Notes, func(n string) bool { return strings.Contains(n, "escalated: T2") }) {
				t.Fatalf("the round's notes %v do not record it", r2.Notes)
			}

			// At the forge: no commit on the branch ever held the way back.
			st, err := hub.PR("acme", "calc", n)
			if err != nil {
				t.Fatal(err)
			}
			pr := observe()
			for _, c := range pr.Commits {
				if strings.Contains(c.Message, "Go back") || strings.Contains(c.Message, "T2") {
					t.Fatalf("a commit for the way back reached the forge: %s", c.Message)
				}
			}
			if tt.other {
				if r2.CommitSHA == "" || st.HeadSHA != r2.CommitSHA || !slices.Equal(r2.Addressed, []string{"T3"}) {
					t.Fatalf("head %s, round 2 pushed %q addressing %v: want T3's fix alone pushed", st.HeadSHA, r2.CommitSHA, r2.Addressed)
				}
			} else if r2.CommitSHA != "" || st.HeadSHA != r1.CommitSHA || len(r2.Addressed) != 0 {
				t.Fatalf("head %s, round 2 pushed %q addressing %v: want nothing pushed", st.HeadSHA, r2.CommitSHA, r2.Addressed)
			}
			g := &repo.Git{Dir: t.TempDir(), Env: append(os.Environ(), hub.GitEnv(tok)...)}
			if _, err := repo.Clone(ctx, hub.GitURL("acme", "calc"), g.Dir, g.Env); err != nil {
				t.Fatal(err)
			}
			if _, err := g.Run(ctx, "fetch", "origin", "+refs/heads/*:refs/remotes/origin/*"); err != nil {
				t.Fatal(err)
			}
			calc, err := g.Run(ctx, "show", st.HeadSHA+":calc.go")
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(calc, "return n >> 1") || strings.Contains(calc, "return n / 2") {
				t.Fatalf("the head undid round 1:\n%s", calc)
			}
			if tt.other && !strings.Contains(calc, "// Double returns twice n.") {
				t.Fatalf("the head lacks the other fix:\n%s", calc)
			}
		})
	}
}
