package dashboard

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/store"
)

// hostile is text a reviewer wrote: rendered, it must stay text.
const hostile = `<img src=x onerror="window.__pwned=1">Use <b>bounds</b> & check`

// seeded names the runs seedStore writes.
type seeded struct {
	Done, Errored, Running string
	RunningPR              string
}

var t0 = time.Date(2026, 11, 30, 9, 0, 0, 0, time.UTC)

// seedStore writes three runs through the store's own API, as the PR loop
// writes them: a two-stable run of four rounds with findings, threads,
// actions, decisions and a proof; an errored run; a run still going (two
// rounds so far).
func seedStore(t *testing.T) (*store.Store, seeded) {
	t.Helper()
	ctx := context.Background()
	db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s := seeded{Done: "r-20261130-d0d0d0", Errored: "r-20261130-e1e1e1", Running: "r-20261130-a2a2a2",
		RunningPR: "https://github.com/octo-org/textstats/pull/9"}

	// The finished run: four rounds, the last one clean.
	pr := "https://github.com/octo-org/textstats/pull/7"
	rounds := []struct {
		findings []prloop.Finding
		lines    int
		cost     float64
	}{
		{[]prloop.Finding{
			{ID: "PRRT_1", ThreadID: "PRRT_1", Path: "stats.go", EndLine: 12, Summary: hostile, Verdict: prloop.VerdictStructural, Source: "copilot", Author: "copilot-pull-request-reviewer"},
			{ID: "PRRT_2", ThreadID: "PRRT_2", Path: "stats.go", EndLine: 30, Summary: "Typo in comment", Verdict: prloop.VerdictMinor, Source: "copilot", Author: "copilot-pull-request-reviewer"},
			{ID: "PRRT_3", ThreadID: "PRRT_3", Path: "main.go", EndLine: 4, Summary: "Handle the empty input", Verdict: prloop.VerdictStructural, Source: "human", Author: "octocat"},
		}, 18, 0.42},
		{[]prloop.Finding{
			{ID: "PRRT_4", ThreadID: "PRRT_4", Path: "stats.go", EndLine: 14, Summary: "Off by one in the loop bound", Verdict: prloop.VerdictStructural, Source: "copilot", Author: "copilot-pull-request-reviewer"},
			{ID: "local-1", Path: "stats_test.go", EndLine: 8, Summary: "No test for the empty case", Verdict: prloop.VerdictStructural, Source: "local", Author: "converge"},
		}, 25, 0.31},
		{[]prloop.Finding{
			{ID: "PRRT_5", ThreadID: "PRRT_5", Path: "README.md", EndLine: 3, Summary: "Wording", Verdict: prloop.VerdictMinor, Source: "copilot", Author: "copilot-pull-request-reviewer"},
		}, 4, 0.12},
		{nil, 0, 0},
	}
	st := prloop.State{Phase: prloop.PhaseDone, Round: 4, StartedAt: t0, InitialHead: "aaaa1111", InitialDiffLines: 40, LoopDiffLines: 47}
	if err := db.CreateRun(ctx, store.Run{ID: s.Done, Kind: "pr", Target: pr, StartedAt: t0}); err != nil {
		t.Fatal(err)
	}
	disp := map[string]prloop.Disposition{"PRRT_1": prloop.DispAddressed, "PRRT_2": prloop.DispAddressed, "PRRT_3": prloop.DispDeferred,
		"PRRT_4": prloop.DispAddressed, "local-1": prloop.DispAddressed, "PRRT_5": prloop.DispStale}
	for i, rd := range rounds {
		n := i + 1
		head := fmt.Sprintf("%08x", 0xb0000000+n)
		rr := prloop.RoundRecord{N: n, HeadSHA: head, ReviewID: fmt.Sprintf("PRR_%d", n), Findings: rd.findings,
			Structural: len(rd.findings) > 0 && rd.findings[0].Verdict == prloop.VerdictStructural, StartedAt: t0.Add(time.Duration(i) * 10 * time.Minute),
			Usage: agent.Usage{InputTokens: 1000, OutputTokens: 200, CostUSD: rd.cost, CostReported: rd.cost > 0, Runs: 1, PricedRuns: 1}}
		if rd.lines > 0 {
			rr.CommitSHA = fmt.Sprintf("%08x", 0xc0000000+n)
			rr.Hunks = []prloop.Hunk{{Path: "stats.go", OldStart: 10, OldCount: rd.lines / 2, NewStart: 10, NewCount: rd.lines - rd.lines/2}}
		}
		st.Rounds = append(st.Rounds, rr)
		summary, _ := json.Marshal(rr)
		if err := db.AddRound(ctx, store.Round{RunID: s.Done, N: n, HeadSHA: head, StartedAt: rr.StartedAt, CommitSHA: rr.CommitSHA, Structural: rr.Structural, Summary: summary}); err != nil {
			t.Fatal(err)
		}
		var fs []store.Finding
		for _, f := range rd.findings {
			d := disp[f.ID]
			fs = append(fs, store.Finding{ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, EndLine: f.EndLine, Summary: f.Summary,
				Verdict: string(f.Verdict), Source: f.Source, Author: f.Author, Disposition: string(d)})
			if f.ThreadID != "" {
				resolved := d != prloop.DispDeferred
				st.Threads = append(st.Threads, prloop.ThreadRecord{ThreadID: f.ThreadID, Round: n, Disposition: d, HeadSHA: head, Resolved: resolved,
					Reason: map[bool]string{true: "", false: "conflicts with the maintainer's reply"}[resolved]})
				for _, kind := range map[bool][]string{true: {"reply", "resolve"}, false: {"reply"}}[resolved] {
					a, _, err := db.BeginAction(ctx, store.Action{RunID: s.Done, Round: n, Kind: kind, Target: f.ThreadID})
					if err != nil {
						t.Fatal(err)
					}
					if err := db.FinishAction(ctx, a.Key, store.ActionDone, nil); err != nil {
						t.Fatal(err)
					}
				}
			}
		}
		if err := db.AddFindings(ctx, s.Done, n, fs); err != nil {
			t.Fatal(err)
		}
		for _, e := range []store.Event{
			{Kind: "observe", Round: n, Message: "observed head " + head},
			{Kind: "request-review", Round: n, Message: "asked copilot to review " + head},
			{Kind: "fix", Round: n, Message: fmt.Sprintf("fixed %d finding(s)", len(rd.findings))},
		} {
			e.Time = rr.StartedAt.Add(time.Minute)
			if err := db.AppendEvent(ctx, s.Done, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := db.AppendEvent(ctx, s.Done, store.Event{Time: t0.Add(41 * time.Minute), Kind: "note", Round: 2, Message: hostile}); err != nil {
		t.Fatal(err)
	}
	proof := prloop.Proof{PR: pr, HeadSHA: "b0000004", ReviewedCommit: "b0000004", ReviewID: "PRR_4", ReviewSource: "copilot",
		ReviewedAt: t0.Add(40 * time.Minute), CIState: "SUCCESS", EscalatedThreads: []string{}, HandOffs: []string{"PRRT_3"},
		UntrustedThreads: []string{}, RoundsRun: 4, RevertedRounds: []int{}, MergeState: "CLEAN"}
	st.Terminal = &prloop.Terminal{Reason: prloop.ReasonTwoStable, Message: "two-stable: a clean copilot review of the head and green CI", Proof: &proof}
	saveState(t, db, s.Done, st)
	pj, _ := json.Marshal(proof)
	if err := db.FinishRun(ctx, s.Done, string(prloop.ReasonTwoStable), 0, pj); err != nil {
		t.Fatal(err)
	}

	// The errored run: one round, then the fixer could not run.
	est := prloop.State{Phase: prloop.PhaseDone, Round: 1, StartedAt: t0.Add(time.Hour), InitialDiffLines: 12,
		Terminal: &prloop.Terminal{Reason: prloop.ReasonErrored, ExitCode: 1, Message: "the fixer could not run: claude: API key rejected",
			AgentFailure: &prloop.AgentFailure{Agent: "claude", Kind: "auth", Message: "API key rejected"}}}
	if err := db.CreateRun(ctx, store.Run{ID: s.Errored, Kind: "pr", Target: "https://github.com/octo-org/textstats/pull/8", StartedAt: t0.Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	addRound(t, db, s.Errored, 1, prloop.Finding{ID: "PRRT_E1", ThreadID: "PRRT_E1", Path: "x.go", EndLine: 2, Summary: "Nil check", Verdict: prloop.VerdictStructural, Source: "copilot"})
	saveState(t, db, s.Errored, est)
	if err := db.FinishRun(ctx, s.Errored, string(prloop.ReasonErrored), 1, nil); err != nil {
		t.Fatal(err)
	}

	// The running run: two rounds so far.
	if err := db.CreateRun(ctx, store.Run{ID: s.Running, Kind: "pr", Target: s.RunningPR, StartedAt: t0.Add(2 * time.Hour)}); err != nil {
		t.Fatal(err)
	}
	for n := 1; n <= 2; n++ {
		addRound(t, db, s.Running, n, prloop.Finding{ID: fmt.Sprintf("PRRT_R%d", n), ThreadID: fmt.Sprintf("PRRT_R%d", n), Path: "y.go", EndLine: n, Summary: "Check the error", Verdict: prloop.VerdictStructural, Source: "copilot"})
	}
	saveState(t, db, s.Running, prloop.State{Phase: prloop.PhaseAwaitReview, Round: 2, StartedAt: t0.Add(2 * time.Hour), InitialDiffLines: 10})
	return db, s
}

// addRound records round n of a run with one finding and a 6-line commit,
// as the loop's ledger does.
func addRound(t *testing.T, db *store.Store, run string, n int, f prloop.Finding) {
	t.Helper()
	ctx := context.Background()
	rr := prloop.RoundRecord{N: n, HeadSHA: fmt.Sprintf("%08x", 0xd0000000+n), Findings: []prloop.Finding{f}, Structural: true,
		CommitSHA: fmt.Sprintf("%08x", 0xe0000000+n), Hunks: []prloop.Hunk{{Path: f.Path, OldCount: 2, NewCount: 4}},
		StartedAt: t0.Add(time.Duration(n) * time.Minute), Usage: agent.Usage{CostUSD: 0.05, CostReported: true, Runs: 1, PricedRuns: 1}}
	summary, _ := json.Marshal(rr)
	if err := db.AddRound(ctx, store.Round{RunID: run, N: n, HeadSHA: rr.HeadSHA, StartedAt: rr.StartedAt, CommitSHA: rr.CommitSHA, Structural: true, Summary: summary}); err != nil {
		t.Fatal(err)
	}
	if err := db.AddFindings(ctx, run, n, []store.Finding{{ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, EndLine: f.EndLine,
		Summary: f.Summary, Verdict: string(f.Verdict), Source: f.Source, Author: f.Author}}); err != nil {
		t.Fatal(err)
	}
}

func saveState(t *testing.T, db *store.Store, run string, st prloop.State) {
	t.Helper()
	b, err := json.Marshal(st)
	if err != nil {
		t.Fatal(err)
	}
	status := store.StatusRunning
	if st.Terminal != nil {
		status = string(st.Terminal.Reason)
	}
	if err := db.SaveState(context.Background(), run, b, status); err != nil {
		t.Fatal(err)
	}
}

// seededFinding is the finding a running run's round n finds.
func seededFinding(n int) prloop.Finding {
	return prloop.Finding{ID: fmt.Sprintf("PRRT_R%d", n), ThreadID: fmt.Sprintf("PRRT_R%d", n), Path: "y.go", EndLine: n,
		Summary: "Check the error", Verdict: prloop.VerdictStructural, Source: "copilot"}
}
