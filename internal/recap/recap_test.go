package recap

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/agent/command"
)

var ledger = Input{
	PR: "https://github.com/o/r/pull/7", Title: "Add stats", BaseDiffLines: 40, LoopDiffLines: 90, RoundCount: 10,
	Rounds: []Round{
		{N: 1, Commit: "c1", Findings: []Entry{{ID: "T1", Where: "a.go:10", Disposition: "addressed"}}},
		{N: 2, Commit: "", Findings: []Entry{{ID: "T2", Where: "b.go:3", Disposition: "escalated"}}},
		{N: 3, Commit: "c3", Findings: []Entry{{ID: "T3", Where: "a.go:10", Disposition: "addressed"}}},
	},
}

// answer is a judge's line; a HAND-OFF recommends a separate PR.
func answer(verdict string, rounds []int, reason string) string {
	rec := ""
	if verdict == HandOff {
		rec = RecommendSeparatePR
	}
	return answerRec(verdict, rounds, rec, reason)
}

// answerRec is a judge's line with recommendation rec ("": none).
func answerRec(verdict string, rounds []int, rec, reason string) string {
	r := map[string]any{"verdict": verdict, "reason": reason}
	if rounds != nil {
		r["revert_rounds"] = rounds
	}
	if rec != "" {
		r["recommendation"] = rec
	}
	b, _ := json.Marshal(map[string]any{"status": "complete", "next_action": "", "needs_extension_minutes": 0,
		"summary": "recapped", "files_changed": []string{}, "recap": r})
	return string(b)
}

// TestPR_G2_VerdictIsSchemaValidatedAndFailClosed: only a schema-valid
// last line counts; REVERT-AND-SHIP must name rounds with a loop commit;
// anything else is HAND-OFF, never CONTINUE.
func TestPR_G2_VerdictIsSchemaValidatedAndFailClosed(t *testing.T) {
	for _, tc := range []struct {
		name, out string
		valid     bool
		decision  string
		rounds    []int
	}{
		{"continue", answer(Continue, nil, "all in scope"), true, Continue, nil},
		{"revert", "thinking…\n" + answer(RevertAndShip, []int{3, 1}, "round 3 redid round 1"), true, RevertAndShip, []int{1, 3}},
		{"hand-off", answer(HandOff, nil, "needs a redesign"), true, HandOff, nil},
		{"revert a round without a commit", answer(RevertAndShip, []int{2}, "x"), false, HandOff, nil},
		{"revert a round not in the ledger", answer(RevertAndShip, []int{9}, "x"), false, HandOff, nil},
		{"revert nothing", answer(RevertAndShip, []int{}, "x"), false, HandOff, nil},
		{"continue naming rounds", answer(Continue, []int{1}, "x"), false, HandOff, nil},
		{"unknown verdict", strings.Replace(answer(Continue, nil, "x"), Continue, "SHIP-IT", 1), false, HandOff, nil},
		{"prose", "Looks fine to me, CONTINUE.", false, HandOff, nil},
		{"answer then prose", answer(Continue, nil, "x") + "\nbye", false, HandOff, nil},
		{"files changed", strings.Replace(answer(Continue, nil, "x"), `"files_changed":[]`, `"files_changed":["a.go"]`, 1), false, HandOff, nil},
		{"hand-off without a recommendation", answerRec(HandOff, nil, "", "x"), false, HandOff, nil},
		{"empty", "", false, HandOff, nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v := Parse(tc.out, ledger)
			if v.Valid != tc.valid || v.Decision != tc.decision || !equal(v.RevertRounds, tc.rounds) {
				t.Fatalf("got %+v", v)
			}
			if !v.Valid && v.Why == "" {
				t.Fatal("an invalid verdict says no why")
			}
		})
	}
}

func equal(a, b []int) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestPR_G2_JudgeRunsAsAnAgent: the judge is any agent backend; it gets
// the recap prompt, and its answer line is the verdict. No judge at all
// is a HAND-OFF.
func TestPR_G2_JudgeRunsAsAnAgent(t *testing.T) {
	dir := t.TempDir()
	in := filepath.Join(dir, "task.json")
	script := filepath.Join(dir, "judge.sh")
	body := "#!/bin/sh\ncat > '" + in + "'\necho '" + answer(RevertAndShip, []int{3}, "round 3 undid round 1") + "'\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	a, err := command.New([]string{"/bin/sh", script}, command.Options{Name: "judge"})
	if err != nil {
		t.Fatal(err)
	}
	j := &Judge{Agent: a, Budget: 10 * time.Second, Workdir: dir, Env: agent.ScrubEnv([]string{"PATH=/usr/bin:/bin"})}
	v, err := j.Run(context.Background(), ledger)
	if err != nil || !v.Valid || v.Decision != RevertAndShip || !equal(v.RevertRounds, []int{3}) {
		t.Fatalf("got %+v, %v", v, err)
	}
	raw, _ := os.ReadFile(in)
	var task struct{ Kind, Prompt string }
	_ = json.Unmarshal(raw, &task)
	if task.Kind != TaskKind || !strings.Contains(task.Prompt, "recap gate") || !strings.Contains(task.Prompt, `"base_diff_lines": 40`) ||
		!strings.Contains(task.Prompt, "| Add stats") {
		t.Fatalf("the judge did not get the recap: %+v", task)
	}
	var none *Judge
	if v, _ := none.Run(context.Background(), ledger); v.Valid || v.Decision != HandOff {
		t.Fatalf("no judge: %+v", v)
	}
}
