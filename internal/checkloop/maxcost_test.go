package checkloop

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/store"
)

// spender is an agent that changes the tree a little on every run and
// reports what it consumed the way its kind does: a CLI in Result.Usage
// (with a stray cost_usd on its last line, which must not count twice),
// a command with cost_usd on its last line only.
type spender struct {
	cli   bool
	usage agent.Usage
	line  float64 // the cost_usd its last line says
	runs  int
}

func (s *spender) Name() string { return "spender" }

func (s *spender) Run(_ context.Context, t agent.Task) (agent.Result, error) {
	s.runs++
	if err := os.WriteFile(filepath.Join(t.Workdir, fmt.Sprintf("step%d.txt", s.runs)), []byte("x\n"), 0o644); err != nil {
		return agent.Result{}, err
	}
	rec := agent.StatusRecord{Status: agent.StatusComplete, Summary: "tried", FilesChanged: []string{}}
	res := agent.Result{Record: rec, Output: fmt.Sprintf(`{"status":"complete","summary":"tried","cost_usd":%g}`, s.line)}
	if s.cli {
		res.Usage = s.usage
	}
	return res, nil
}

// TestLOOP_1_MaxCostBoundsTheAgentsReportedUsage: --max-cost counts what
// the agents reported: a CLI's Usage.CostUSD (its last line's cost_usd
// not counted again), or a command's cost_usd line. The run that crosses
// the bound ends limited, and its result holds the counted cost and the
// tokens, per iteration and in all.
func TestLOOP_1_MaxCostBoundsTheAgentsReportedUsage(t *testing.T) {
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("needs git")
	}
	cli := agent.Usage{InputTokens: 1000, CacheReadTokens: 500, OutputTokens: 100, CostUSD: 0.40, CostReported: true}
	for _, tc := range []struct {
		name string
		a    *spender
	}{
		{"cli reports usage", &spender{cli: true, usage: cli, line: 5}},
		{"command reports cost_usd", &spender{line: 0.40}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dir := t.TempDir()
			gitT(t, dir, "init", "-q", "-b", "main")
			gitT(t, dir, "config", "user.name", "t")
			gitT(t, dir, "config", "user.email", "t@example.com")
			writeT(t, dir, "README", "x\n")
			gitT(t, dir, "add", "-A")
			gitT(t, dir, "commit", "-qm", "init")
			ws, err := OpenWorkspace(ctx, dir)
			if err != nil {
				t.Fatal(err)
			}
			db, err := store.Open(ctx, filepath.Join(t.TempDir(), "converge.db"))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			const run = "r-maxcost"
			if err := db.CreateRun(ctx, store.Run{ID: run, Kind: Kind, Target: Kind + ":" + dir}); err != nil {
				t.Fatal(err)
			}
			cfg := Config{Goal: "make the check pass", Oracle: Oracle{Class: Mechanical, Command: "echo not yet; exit 1"}, Agent: "spender",
				MaxIterations: 10, MaxCostUSD: 1.00, AgentBudget: time.Minute}
			l := NewLoop(run, Deps{Tickets: db, Workspace: ws, Agent: tc.a, Journal: &engine.StoreJournal[State]{DB: db, RunID: run, Status: StatusOf}, PID: os.Getpid()})
			final, err := l.Run(ctx, NewState(run, cfg), engine.Options{PollMin: time.Millisecond})
			if err != nil {
				t.Fatal(err)
			}
			res := BuildResult(final, time.Now())
			if res.Status != StatusLimited || res.Bounds.CostUSD != 1.20 || res.Bounds.Cost != agent.CostKnown || len(res.Iterations) != 3 {
				t.Fatalf("want limited after 3 iterations at $1.20 reported: %s (%s), %d iterations, bounds %+v", res.Status, res.Message, len(res.Iterations), res.Bounds)
			}
			u := res.Usage
			if u.AgentRuns != 3 || u.PricedRuns != 3 || u.CostUSD == nil || *u.CostUSD < 1.1999 || *u.CostUSD > 1.2001 {
				t.Fatalf("usage %+v", u)
			}
			if tc.a.cli && (u.InputTokens != 3000 || u.CacheReadTokens != 1500 || u.OutputTokens != 300) {
				t.Fatalf("tokens %+v, want every run's", u)
			}
			if it := res.Iterations[0].Usage; it == nil || it.AgentRuns != 1 || *it.CostUSD != 0.40 {
				t.Fatalf("iteration 1 usage %+v", it)
			}
		})
	}
}

// TestLOOP_7_ResultSaysACostNoAgentReportedIsNotReported: the result's
// bounds and usage, and the summary and log that print them, say "not
// reported" for a cost no agent reported (a Codex-like CLI reports
// tokens only), never $0.00; tokens are still counted.
func TestLOOP_7_ResultSaysACostNoAgentReportedIsNotReported(t *testing.T) {
	st := NewState("r-1", Config{Goal: "g", Oracle: Oracle{Class: Mechanical, Command: "false"}, MaxIterations: 3, MaxCostUSD: 2})
	st.Terminal = &Terminal{Status: StatusLimited, ExitCode: 4, Message: "max-iterations 3 reached"}
	u := agent.Usage{InputTokens: 700, OutputTokens: 70, Runs: 1}
	st.Iterations = []Iteration{{N: 1, Ticket: TicketID("r-1", 1), Stage: StageClosed, Outcome: OutcomeNoChange, Usage: u}}
	st.Usage = u
	res := BuildResult(st, time.Now())
	if res.Bounds.Cost != agent.CostNotReported || res.Usage.CostUSD != nil || res.Usage.OutputTokens != 70 {
		t.Fatalf("bounds %+v usage %+v", res.Bounds, res.Usage)
	}
	var b strings.Builder
	WriteSummary(&b, res)
	if err := WriteLog(&b, store.Run{ID: "r-1", Target: "loop:/x"}, st, nil, nil); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	if strings.Contains(out, "$0.00") || strings.Count(out, "cost not reported") < 3 || !strings.Contains(out, "700 input, 70 output token(s) in 1 agent run(s)") {
		t.Fatalf("summary and log:\n%s", out)
	}
}
