// Package agenttest holds what the real-CLI tests of the agent backends
// share: finding the CLI (skip without it, fail under CI=true), a git
// worktree to edit, a fakemodel to talk to and the wire checks against it,
// the check of the agent's environment, the run stopped at its budget
// with a look for processes it left behind, the summary asked for at the
// budget, and the judges' verdicts read from a read-only run; and for the
// loops' tests, an agent that reports a usage (Reporting).
package agenttest

import (
	"bytes"
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/emulator/fakemodel"
	"github.com/convergeloop/converge/internal/proc"
)

// RealCLI returns the real CLI's program from envVar or PATH. Without it
// the test is skipped with a message saying how to install it — except
// under CI=true, where it fails: CI must run the real-CLI tests.
func RealCLI(t testing.TB, envVar, name, npmPackage string) string {
	t.Helper()
	bin, err := agent.ResolveBinary("", envVar, name, nil)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("CI=true but the real %s CLI is missing: %v (.ci/run installs %s from npm)", name, err, npmPackage)
		}
		t.Skipf("real %s CLI not installed (%v): install %s from npm, or set %s to its path", name, err, npmPackage, envVar)
	}
	return bin
}

// realRuns holds a place for each real-CLI test of this test binary
// running now.
var realRuns = make(chan struct{}, 2)

// Parallel marks t parallel, then waits until fewer than two other tests
// that called it are running; t keeps its place until it and its cleanups
// end. A Bun or Node CLI runs JIT and garbage-collector threads beside its
// main one, and more of them at once cost more CPU for the same runs:
// OpenCode's tests took 222 CPU-seconds four at a time on 2 vCPUs and 165
// two at a time, in about the same wall time (BENCHMARKS.md).
func Parallel(t *testing.T) {
	t.Parallel()
	realRuns <- struct{}{}
	t.Cleanup(func() { <-realRuns })
}

// Repo is a new git repository holding files (path → content).
func Repo(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for _, args := range [][]string{{"init", "-q"}, {"config", "user.email", "t@example.com"}, {"config", "user.name", "t"}} {
		if out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput(); err != nil {
			t.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// CheckWire fails t for anything fakemodel saw go wrong, a tool call that
// got no tool result, and a tool result that reports an error.
func CheckWire(t testing.TB, srv *fakemodel.Server) {
	t.Helper()
	for _, e := range srv.Errors() {
		t.Errorf("fakemodel: %s", e)
	}
	for _, c := range srv.Unanswered() {
		t.Errorf("tool call %s %s %s got no tool result", c.ID, c.Name, c.Input)
	}
	for _, c := range srv.Calls() {
		if r, ok := srv.Result(c.ID); ok && r.IsError {
			t.Errorf("tool call %s %s %s failed: %s", c.ID, c.Name, c.Input, r.Content)
		}
	}
}

// ProcessesWithEnv lists the pids of live processes whose environment
// holds marker (Linux /proc; nil elsewhere). A test gives an agent run a
// unique marker variable and looks for it after the run was stopped.
func ProcessesWithEnv(marker string) []int {
	var pids []int
	for _, p := range proc.Processes() {
		if p.Zombie || p.PID == os.Getpid() {
			continue
		}
		if env, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(p.PID), "environ")); err == nil && bytes.Contains(env, []byte(marker)) {
			pids = append(pids, p.PID)
		}
	}
	return pids
}

// Serve serves a fakemodel answering from scripts for the rest of t and
// returns it with its URL.
func Serve(t testing.TB, scripts ...fakemodel.Script) (*fakemodel.Server, string) {
	t.Helper()
	srv := fakemodel.New(scripts...)
	hs := httptest.NewServer(srv)
	t.Cleanup(hs.Close)
	return srv, hs.URL
}

// CheckEnvDump fails t when the environment dump at path (`env > path`,
// run by the agent) cannot be read or sets any of names: variables that
// must not reach the agent (SEC-2).
func CheckEnvDump(t testing.TB, path string, names ...string) {
	t.Helper()
	env, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the agent's environment dump: %v", err)
	}
	for _, name := range names {
		if strings.Contains("\n"+string(env), "\n"+name+"=") {
			t.Errorf("the agent's environment has %s", name)
		}
	}
}

// StoppedAtBudget runs a fix task whose model never answers under budget
// and checks that the run comes back partial/budget-exceeded, within
// maxTook when that is not zero, and leaves no process behind. The
// summary turn at the budget (AG-T1), if the run has one, gets no answer
// either: the agent should have a short SummaryBudget. newAgent
// returns the backend talking to url with env (a marker variable) added
// to its environment.
func StoppedAtBudget(t *testing.T, budget, maxTook time.Duration, newAgent func(url, env string) agent.Agent) {
	t.Helper()
	dir := Repo(t, map[string]string{"a.txt": "x\n"})
	_, url := Serve(t, fakemodel.Script{Turns: []fakemodel.Turn{{Text: "never sent", Delay: time.Minute}}})
	marker := fmt.Sprintf("converge-budget-%d", time.Now().UnixNano())
	a := newAgent(url, "CONVERGE_TEST_MARKER="+marker)
	start := time.Now()
	res, err := a.Run(context.Background(), agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: budget,
		Findings: []agent.Finding{{ID: "f", Body: "fix it"}}})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	if took := time.Since(start); maxTook > 0 && took > maxTook {
		t.Errorf("run took %s, budget %s", took, budget)
	}
	if res.Record.Status != agent.StatusPartial || res.Record.Reason != agent.ReasonBudgetExceeded {
		t.Errorf("record = %+v, want partial/budget-exceeded", res.Record)
	}
	if left := ProcessesWithEnv(marker); len(left) > 0 {
		t.Errorf("processes of the stopped run still alive: %v", left)
	}
}

// Summary is the script of SummaryAtBudget: the edit the model makes
// through a real tool call, and what the file holds after it.
type Summary struct {
	// File is the file the edit changes, relative to the repository; it
	// holds "hello world\n" before.
	File string
	// Edit is the tool call that edits it; Want is its content after.
	Edit fakemodel.ToolCall
	Want string
	// ReadOnly, when set, checks the summary request for what says that
	// turn cannot edit (the tools offered, the sandbox in its body), and
	// returns what it found wrong.
	ReadOnly func(r fakemodel.Request) string
	// Usage, when set, checks the stopped run's usage against what
	// fakemodel served: the edit's step and the summary turn carry
	// tokens of every kind (SummaryUsage).
	Usage func(t *testing.T, res agent.Result, srv *fakemodel.Server)
}

// SummaryUsage is what fakemodel serves each model turn of
// SummaryAtBudget's run that answers: the edit's step, then the summary.
var SummaryUsage = []fakemodel.Usage{
	{InputTokens: 11, OutputTokens: 3, CacheReadTokens: 7},
	{InputTokens: 1000, OutputTokens: 100},
}

// SummaryNextAction is the next action of the partial record the model
// answers the summary request with, in SummaryAtBudget.
const SummaryNextAction = "update the second greeting in the docs too"

// Stall is the delay of a model turn that must not come within any
// budget a test gives, its retries' doubled budgets included: fakemodel
// drops it when the run stops. (A minute was not: a run retried at two
// minutes got the stalled turn's text as its answer.)
const Stall = time.Hour

// StallTries is how many budgets, each twice the one before, a test gives
// a real CLI to reach its stalled turn. A Node CLI takes seconds of CPU to
// start (Gemini CLI about five), and a 2-vCPU machine at a load average
// of 25 gave it less than a tenth of a CPU: 48 s were not enough. What
// such a test measures is what happens at the budget, not how soon the
// CLI starts, so it waits for the machine: six tries from 6 s reach 192 s.
const StallTries = 6

// UntilStalled calls run with budget, then with twice it, for at most
// StallTries budgets, until run reports that the CLI reached the model
// turn that stalls (the one a test's budget must stop); t fails when no
// budget was enough. A CLI starting on a loaded machine may spend a small
// budget before its first request, and what such tests measure is the
// stop, not how soon the CLI starts.
func UntilStalled(t *testing.T, budget time.Duration, run func(budget time.Duration) (stalled bool)) {
	t.Helper()
	for try := 1; ; try++ {
		if run(budget) {
			return
		}
		if try == StallTries {
			t.Fatalf("the CLI never reached the stalled turn, in %d budgets up to %s", try, budget)
		}
		t.Logf("the CLI did not reach the stalled turn in %s; trying again with %s", budget, 2*budget)
		budget *= 2
	}
}

// LoadedSummaryBudget is the summary turn's time-box in the tests of
// SummaryAtBudget: CI's loaded machines have taken more than the
// product's 30 s to start a Node CLI again on its session, and the
// scripted summary answers at once, so a long box costs nothing.
const LoadedSummaryBudget = 2 * time.Minute

// SummaryAtBudget runs a fix task whose model edits a file through a real
// tool call, then stalls past budget (AG-T1), and checks that the run was
// stopped and then told to summarize in its own session: fakemodel got
// the summary request in the same conversation (carrying the edit's tool
// result and the task's prompt) and answered it with a partial record,
// which is the run's record with its next action and the concern of the
// summary, and earns an extension; the edit is kept; nothing the run
// started is alive afterwards. newAgent returns the backend talking to
// url with env (a marker variable) added to its environment.
//
// The run must reach the stalled turn before its budget, which a CLI
// starting on a loaded machine may not: then the run is tried again with
// twice the budget (UntilStalled), so the budget can stay small.
func SummaryAtBudget(t *testing.T, budget time.Duration, s Summary, newAgent func(url, env string) agent.Agent) {
	t.Helper()
	partial := `{"status":"partial","next_action":"` + SummaryNextAction + `","needs_extension_minutes":4,` +
		`"summary":"the first greeting is changed","files_changed":["` + s.File + `"]}`
	var (
		dir, marker string
		srv         *fakemodel.Server
		task        agent.Task
		res         agent.Result
		err         error
		a           agent.Agent
	)
	UntilStalled(t, budget, func(budget time.Duration) bool {
		dir = Repo(t, map[string]string{s.File: "hello world\n"})
		var url string
		srv, url = Serve(t,
			fakemodel.Script{Match: agent.SummaryRequest, FromMatch: true, Turns: []fakemodel.Turn{
				{Text: "Stopping as asked.\n" + partial, Usage: SummaryUsage[1]},
			}},
			fakemodel.Script{Match: "greet-finding", Turns: []fakemodel.Turn{
				{Text: "Changing the greeting.", Calls: []fakemodel.ToolCall{s.Edit}, Usage: SummaryUsage[0]},
				{Text: "never sent", Delay: Stall},
			}},
		)
		marker = fmt.Sprintf("converge-summary-%d", time.Now().UnixNano())
		a = newAgent(url, "CONVERGE_TEST_MARKER="+marker)
		task = agent.Task{Kind: agent.TaskKindFix, Workdir: dir, Budget: budget,
			Findings: []agent.Finding{{ID: "greet-finding", Path: s.File, EndLine: 1, Body: "Say hello to converge, not the world."}}}
		res, err = a.Run(context.Background(), task)
		if err != nil {
			t.Fatalf("run: %v\nstderr: %s", err, res.Stderr)
		}
		return slices.ContainsFunc(srv.Requests(), func(r fakemodel.Request) bool { return r.Script == 1 && r.Turn == 1 })
	})
	if left := ProcessesWithEnv(marker); len(left) > 0 {
		t.Errorf("processes of the run still alive: %v", left)
	}
	CheckWire(t, srv)

	got, err := os.ReadFile(filepath.Join(dir, s.File))
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != s.Want {
		t.Errorf("%s = %q, want the edit kept: %q", s.File, got, s.Want)
	}

	// The summary request reached the model in the stopped run's
	// conversation: it carries the edit's tool result and the task.
	calls := srv.Calls()
	if len(calls) == 0 {
		t.Fatal("the model made no tool call")
	}
	var summary []fakemodel.Request
	for _, r := range srv.Requests() {
		if r.Script == 0 && !r.Side {
			summary = append(summary, r)
		}
	}
	if len(summary) == 0 {
		t.Fatalf("fakemodel got no summary request; stderr: %s", res.Stderr)
	}
	sameSession := false
	for _, r := range summary[0].Results {
		sameSession = sameSession || r.ID == calls[0].ID
	}
	if !sameSession || !strings.Contains(string(summary[0].Body), "<<<REVIEW-COMMENT") {
		t.Errorf("the summary request is not in the run's conversation: tool results %+v, body %.300s", summary[0].Results, summary[0].Body)
	}
	if s.ReadOnly != nil {
		for _, r := range summary {
			if bad := s.ReadOnly(r); bad != "" {
				t.Errorf("the summary turn may edit: %s", bad)
			}
		}
	}

	rec := res.Record
	if rec.Status != agent.StatusPartial || rec.NextAction != SummaryNextAction || rec.NeedsExtensionMinutes != 4 {
		t.Errorf("record = %+v, want the partial record of the summary", rec)
	}
	if !slices.Contains(rec.Concerns, agent.SummaryConcern) {
		t.Errorf("concerns = %q, want %q", rec.Concerns, agent.SummaryConcern)
	}
	if f := agent.FailureOf(a.Name(), res, nil); f != nil {
		t.Errorf("FailureOf = %v, want the record taken as the agent's answer", f)
	}
	if next, ok := task.Extended(rec); !ok || next.Budget != 4*time.Minute {
		t.Errorf("Extended = %v, %v; want an extension of 4m", next.Budget, ok)
	}
	if s.Usage != nil {
		s.Usage(t, res, srv)
	}
}

// Reporting is an agent whose every run reports Usage, as a CLI reports
// its tokens and price: for the tests of what a loop adds up.
type Reporting struct {
	agent.Agent
	Usage agent.Usage
}

func (r Reporting) Run(ctx context.Context, t agent.Task) (agent.Result, error) {
	res, err := r.Agent.Run(ctx, t)
	res.Usage = r.Usage
	return res, err
}

// Main is the TestMain of a real CLI's package: its runs are supervised
// as converge's main supervises them, so the CLI runs contained (SEC-7)
// as converge runs it.
func Main(m *testing.M) {
	proc.Supervise()
	os.Exit(m.Run())
}
