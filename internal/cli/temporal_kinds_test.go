package cli

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.temporal.io/sdk/converter"
	"go.temporal.io/sdk/testsuite"
	"go.temporal.io/sdk/workflow"

	"github.com/convergeloop/converge/internal/checkloop"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/exitcode"
	"github.com/convergeloop/converge/internal/plan"
	"github.com/convergeloop/converge/internal/temporal"
	"github.com/convergeloop/converge/internal/temporal/kinds"
	"github.com/convergeloop/converge/internal/testutil"
)

// The loop and plan kinds on the Temporal engine, in the SDK's test
// environment (time skipping) with the worker's own binding (bindLoop,
// bindPlan): real git repositories, real checks run with sh -c, and
// scripted command agents. Outcomes are read in the repository.

// kindsEnv is a test workflow environment with the worker's loop and
// plan kinds registered, bound by a worker runtime with its own state
// directory.
func kindsEnv(t *testing.T) (*testsuite.TestWorkflowEnvironment, *workerRuntime) {
	t.Helper()
	var s testsuite.WorkflowTestSuite
	env := s.NewTestWorkflowEnvironment()
	// Agents and checks are real processes: give a loaded machine time.
	env.SetTestTimeout(5 * time.Minute)
	ios, _, _ := testIO(nil)
	rt := &workerRuntime{ios: ios, opts: &workerOptions{StateDir: t.TempDir()}}
	t.Cleanup(rt.close)
	rt.registerLocalKinds(env)
	return env, rt
}

// gitT runs git in dir and returns its output.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("git %v: %v\n%s", args, err, out)
	}
	return string(out)
}

// commitFiles writes files into the repository and commits them.
func commitFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, body := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	gitT(t, dir, "add", "-A")
	gitT(t, dir, "-c", "user.name=tester", "-c", "user.email=tester@example.com", "commit", "-q", "-m", "files")
}

// trailers are the values of a trailer key on the branch's commits.
func trailers(t *testing.T, dir, key string) []string {
	t.Helper()
	return strings.Fields(gitT(t, dir, "log", "--format=%(trailers:key="+key+",valueonly)"))
}

func cleanTree(t *testing.T, dir string) {
	t.Helper()
	if s := gitT(t, dir, "status", "--porcelain"); s != "" {
		t.Fatalf("the work tree is not clean:\n%s", s)
	}
}

// todoRepo is a repository with n TODO lines and a check that passes once
// none is left; scripts is a directory for the agents, outside it.
func todoRepo(t *testing.T, n int) (dir, scripts string) {
	t.Helper()
	dir, scripts = localRepo(t)
	var todo strings.Builder
	for i := 1; i <= n; i++ {
		todo.WriteString("TODO " + string(rune('0'+i)) + "\n")
	}
	commitFiles(t, dir, map[string]string{
		"todo.txt": todo.String(),
		"check.sh": "if grep -n TODO todo.txt; then exit 1; fi\n",
	})
	return dir, scripts
}

const statusLine = `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"%s","files_changed":[]}`

// removeOne is a body agent that removes one TODO line per iteration.
func removeOne(t *testing.T, scripts string) string {
	p := filepath.Join(scripts, "remove.sh")
	writeScript(t, p, "cat >/dev/null\nsed -i '1d' todo.txt\necho '"+strings.Replace(statusLine, "%s", "removed one TODO", 1)+"'\n")
	return "sh " + p
}

func loopKindParams(dir, agentCmd string, maxIter int) kinds.LoopParams {
	return kinds.LoopParams{
		Repo: dir, Goal: "no TODO left", Check: "sh check.sh", Agent: "command", AgentCmd: agentCmd,
		MaxIterations: maxIter, StallAfter: checkloop.DefaultStallIterations, Confirm: 1,
		AgentTimeout: time.Minute, CheckTimeout: time.Minute, NoAgentCheck: true,
	}
}

func runLoopKind(t *testing.T, p kinds.LoopParams) (*testsuite.TestWorkflowEnvironment, temporal.Result[checkloop.State]) {
	t.Helper()
	env, _ := kindsEnv(t)
	k := kinds.Check(nil)
	env.ExecuteWorkflow(k.WorkflowType(), temporal.Input[kinds.LoopParams, kinds.LoopSetup, checkloop.State, checkloop.ActResult]{Params: p})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	var r temporal.Result[checkloop.State]
	if err := env.GetWorkflowError(); err != nil {
		return env, r
	}
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return env, r
}

// wantLoopEnd checks the run's terminal and that the workflow's result
// reads it as the engines do.
func wantLoopEnd(t *testing.T, env *testsuite.TestWorkflowEnvironment, r temporal.Result[checkloop.State], status checkloop.Status, code exitcode.Code) {
	t.Helper()
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	tm := r.State.Terminal
	if tm == nil {
		t.Fatalf("no terminal; state %+v", r.State)
	}
	if tm.Status != status || tm.ExitCode != code || r.Terminal.Status != string(status) || r.Terminal.Code != code {
		t.Fatalf("terminal %s exit %d (%q), result %+v; want %s exit %d", tm.Status, tm.ExitCode, tm.Message, r.Terminal, status, code)
	}
}

func TestLOOP_5_TemporalLoopEndsCompleteWhenItsCheckPasses(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	env, r := runLoopKind(t, loopKindParams(dir, removeOne(t, scripts), 5))
	wantLoopEnd(t, env, r, checkloop.StatusComplete, exitcode.OK)
	// In the repository: both TODOs gone, one commit per iteration with
	// its trailer, naming the workflow's run.
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); strings.Contains(string(b), "TODO") {
		t.Fatalf("todo.txt still holds a TODO:\n%s", b)
	}
	got := trailers(t, dir, checkloop.TrailerKey)
	if len(got) != 2 || got[1] != checkloop.TicketID(r.RunID, 1) || got[0] != checkloop.TicketID(r.RunID, 2) {
		t.Fatalf("trailers %v, want the tickets of iterations 1 and 2 of run %s", got, r.RunID)
	}
	cleanTree(t, dir)
	// The bound loop's events are the workflow's log: the worker's start
	// line, and each commit.
	log := workflowLog(t, env)
	if !strings.Contains(log, "start: run "+r.RunID+" on "+dir) || strings.Count(log, "commit: ") != 2 || !strings.Contains(log, "terminal: complete") {
		t.Fatalf("log:\n%s", log)
	}
}

// workflowLog is the workflow's log query, a line per event.
func workflowLog(t *testing.T, env *testsuite.TestWorkflowEnvironment) string {
	t.Helper()
	v, err := env.QueryWorkflow(temporal.QueryLog)
	if err != nil {
		t.Fatal(err)
	}
	var events []engine.Event
	if err := v.Get(&events); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range events {
		b.WriteString(e.Kind + ": " + e.Message + "\n")
	}
	return b.String()
}

func TestPR_G5_TemporalStopSignalStopsTheLoop(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	env, _ := kindsEnv(t)
	env.RegisterDelayedCallback(func() { env.SignalWorkflow(temporal.SignalStop, nil) }, 0)
	env.ExecuteWorkflow(kinds.Check(nil).WorkflowType(), temporal.Input[kinds.LoopParams, kinds.LoopSetup, checkloop.State, checkloop.ActResult]{Params: loopKindParams(dir, removeOne(t, scripts), 5)})
	var r temporal.Result[checkloop.State]
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	wantLoopEnd(t, env, r, checkloop.StatusBlocked, exitcode.Human)
	if got := trailers(t, dir, checkloop.TrailerKey); len(got) != 0 {
		t.Fatalf("trailers %v: a stopped loop commits nothing more", got)
	}
}

func TestLOOP_5_TemporalLoopEndsLimitedAtMaxIterations(t *testing.T) {
	dir, scripts := todoRepo(t, 3)
	env, r := runLoopKind(t, loopKindParams(dir, removeOne(t, scripts), 1))
	wantLoopEnd(t, env, r, checkloop.StatusLimited, exitcode.Bound)
	if got := trailers(t, dir, checkloop.TrailerKey); len(got) != 1 {
		t.Fatalf("trailers %v, want the one iteration's commit", got)
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); strings.Count(string(b), "TODO") != 2 {
		t.Fatalf("todo.txt:\n%s", b)
	}
	cleanTree(t, dir)
}

func TestLOOP_5_TemporalLoopEndsStalledWhenNothingChanges(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	idle := filepath.Join(scripts, "idle.sh")
	writeScript(t, idle, "cat >/dev/null\necho '"+strings.Replace(statusLine, "%s", "looked, changed nothing", 1)+"'\n")
	p := loopKindParams(dir, "sh "+idle, 10)
	p.StallAfter = 2
	env, r := runLoopKind(t, p)
	wantLoopEnd(t, env, r, checkloop.StatusStalled, exitcode.Convergence)
	if n := len(r.State.Iterations); n != 2 {
		t.Fatalf("%d iterations, want the 2 that stalled", n)
	}
	if got := trailers(t, dir, checkloop.TrailerKey); len(got) != 0 {
		t.Fatalf("trailers %v: nothing should be committed", got)
	}
}

func TestLOOP_8_TemporalLoopEndsBlockedOnAFlakyCheck(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	// The check fails first (the baseline), passes after iteration 1,
	// then fails on the same tree when converge runs it again. Its
	// counter is a file git ignores in the work tree: a contained check
	// (SEC-7) writes nothing outside it, and its /tmp is its own.
	flaky := filepath.Join(scripts, "flaky.sh")
	count := filepath.Join(dir, ".flaky-count")
	if err := os.WriteFile(filepath.Join(dir, ".git", "info", "exclude"), []byte(".flaky-count\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	writeScript(t, flaky, "n=$(cat "+count+" 2>/dev/null || echo 0); n=$((n+1)); echo $n > "+count+"; echo run $n; [ $n -eq 2 ]\n")
	p := loopKindParams(dir, removeOne(t, scripts), 3)
	p.Check, p.Confirm, p.ConfirmSet = "sh "+flaky, 2, true
	env, r := runLoopKind(t, p)
	wantLoopEnd(t, env, r, checkloop.StatusBlocked, exitcode.Human)
	if !strings.Contains(r.State.Terminal.Message, "flaky") {
		t.Fatalf("terminal message %q does not say the check is flaky", r.State.Terminal.Message)
	}
	if b, _ := os.ReadFile(count); strings.TrimSpace(string(b)) != "3" {
		t.Fatalf("the check ran %s time(s), want 3 (baseline, pass, its rerun)", b)
	}
}

func TestAG_T4_TemporalLoopAgentThatCannotRunEndsFailed(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	broken := filepath.Join(scripts, "broken.sh")
	writeScript(t, broken, "cat >/dev/null\necho 'cannot start' >&2\necho TODO-partial >> todo.txt\nexit 3\n")
	env, r := runLoopKind(t, loopKindParams(dir, "sh "+broken, 3))
	wantLoopEnd(t, env, r, checkloop.StatusFailed, exitcode.Error)
	// Its partial change is undone; nothing committed.
	if got := trailers(t, dir, checkloop.TrailerKey); len(got) != 0 {
		t.Fatalf("trailers %v", got)
	}
	cleanTree(t, dir)
}

func TestIF_4_TemporalLoopRefusesADirtyTree(t *testing.T) {
	dir, scripts := todoRepo(t, 2)
	if err := os.WriteFile(filepath.Join(dir, "wip.txt"), []byte("mine\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	env, _ := runLoopKind(t, loopKindParams(dir, removeOne(t, scripts), 3))
	be, ok := temporal.AsBindError(env.GetWorkflowError())
	if !ok || be.Code != exitcode.Usage || !strings.Contains(be.Message, "uncommitted changes (wip.txt)") {
		t.Fatalf("workflow error %v, want the worker's refusal of the dirty tree, exit 2", env.GetWorkflowError())
	}
	if b, _ := os.ReadFile(filepath.Join(dir, "todo.txt")); strings.Count(string(b), "TODO") != 2 {
		t.Fatalf("todo.txt changed:\n%s", b)
	}
}

// planRepo is a repository with one commit and a plan file beside it.
func planRepo(t *testing.T, planYAML string) (dir, scripts, file string) {
	t.Helper()
	dir, scripts = localRepo(t)
	commitFiles(t, dir, map[string]string{"README": "a repository\n"})
	file = filepath.Join(scripts, "plan.yaml")
	if err := os.WriteFile(file, []byte(planYAML), 0o644); err != nil {
		t.Fatal(err)
	}
	return dir, scripts, file
}

// implementer writes <task>.txt and reports DONE, except for the tasks
// the case lines handle first.
func implementer(t *testing.T, scripts, cases string) string {
	p := filepath.Join(scripts, "impl.sh")
	writeScript(t, p, `input=$(cat)
id=$(printf '%s' "$input" | sed -n 's/.*"run_id":"[^"]*\.task\.\([A-Za-z0-9_-]*\)\.[0-9]*".*/\1/p')
st() { printf '{"status":"%s","next_action":"","needs_extension_minutes":0,"summary":"%s","files_changed":[],"implementer_status":"%s"%s}\n' "$1" "$2" "$3" "$4"; }
case "$id" in
`+cases+`
  *) echo "$id" > "$id.txt"; st complete "wrote $id" DONE ;;
esac
`)
	return "sh " + p
}

func approver(t *testing.T, scripts string) string {
	p := filepath.Join(scripts, "review.sh")
	writeScript(t, p, `cat >/dev/null
printf '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":true,"issues":[]}\n'
`)
	return "sh " + p
}

func planKindParams(dir, file, impl, review string, parallel int) kinds.PlanParams {
	b, _ := os.ReadFile(file)
	return kinds.PlanParams{
		Repo: dir, File: file, Data: string(b), Agent: "command", AgentCmd: impl,
		ReviewAgent: "command", ReviewAgentCmd: review, AgentTimeout: time.Minute, Parallel: parallel, NoAgentCheck: true,
	}
}

func runPlanKind(t *testing.T, p kinds.PlanParams) (*testsuite.TestWorkflowEnvironment, *workerRuntime, temporal.Result[plan.State]) {
	t.Helper()
	env, rt := kindsEnv(t)
	k := kinds.Plan(nil)
	env.ExecuteWorkflow(k.WorkflowType(), temporal.Input[kinds.PlanParams, kinds.PlanSetup, plan.State, plan.ActResult]{Params: p})
	if !env.IsWorkflowCompleted() {
		t.Fatal("workflow did not complete")
	}
	if err := env.GetWorkflowError(); err != nil {
		t.Fatalf("workflow error: %v", err)
	}
	var r temporal.Result[plan.State]
	if err := env.GetWorkflowResult(&r); err != nil {
		t.Fatal(err)
	}
	return env, rt, r
}

func wantPlanEnd(t *testing.T, r temporal.Result[plan.State], status plan.Status, code exitcode.Code) {
	t.Helper()
	tm := r.State.Terminal
	if tm == nil {
		t.Fatalf("no terminal; state %+v", r.State)
	}
	if tm.Status != status || tm.ExitCode != code || r.Terminal.Status != string(status) || r.Terminal.Code != code {
		t.Fatalf("terminal %s exit %d (%q), result %+v; want %s exit %d", tm.Status, tm.ExitCode, tm.Message, r.Terminal, status, code)
	}
}

const twoGroups = `groups:
  - name: one
    parallel: true
    tasks:
      - {id: a, prompt: Write a.txt., files: [a.txt]}
      - {id: b, prompt: Write b.txt., files: [b.txt]}
  - name: two
    tasks:
      - {id: c, prompt: Write c.txt., files: [c.txt], depends_on: [b]}
`

func TestPLAN_1_TemporalPlanEndsCompleteWithEveryTaskCommitted(t *testing.T) {
	dir, scripts, file := planRepo(t, twoGroups)
	// --parallel 2: group one runs in worktrees under the worker's state
	// directory.
	_, rt, r := runPlanKind(t, planKindParams(dir, file, implementer(t, scripts, ""), approver(t, scripts), 2))
	wantPlanEnd(t, r, plan.StatusComplete, exitcode.OK)
	got := trailers(t, dir, "Converge-Task")
	if len(got) != 3 {
		t.Fatalf("trailers %v, want one commit per task", got)
	}
	for _, id := range []string{"a", "b", "c"} {
		if !strings.Contains(strings.Join(got, " "), plan.TaskRef(r.RunID, id)) {
			t.Errorf("no commit of task %s (%s) on the branch: %v", id, plan.TaskRef(r.RunID, id), got)
		}
		if _, err := os.Stat(filepath.Join(dir, id+".txt")); err != nil {
			t.Errorf("task %s's file: %v", id, err)
		}
	}
	cleanTree(t, dir)
	// The run's worktrees are gone once it ended.
	if wt := gitT(t, dir, "worktree", "list"); strings.Count(wt, "\n") != 1 {
		t.Fatalf("worktrees left:\n%s", wt)
	}
	if ents, _ := os.ReadDir(filepath.Join(rt.opts.StateDir, "work", "plan", r.RunID)); len(ents) != 0 {
		t.Fatalf("the run's worktree directory holds %d entries", len(ents))
	}
}

func TestPLAN_1_TemporalPlanEndsBlockedWithABlockedTask(t *testing.T) {
	dir, scripts, file := planRepo(t, twoGroups)
	impl := implementer(t, scripts, `  b) echo partial > b.txt; st blocked "no schema" BLOCKED ',"reason":"the schema it needs is not in the repository"' ;;`)
	_, _, r := runPlanKind(t, planKindParams(dir, file, impl, approver(t, scripts), 1))
	wantPlanEnd(t, r, plan.StatusBlocked, exitcode.Human)
	got := trailers(t, dir, "Converge-Task")
	if len(got) != 1 || got[0] != plan.TaskRef(r.RunID, "a") {
		t.Fatalf("trailers %v, want task a's commit alone (b blocked, c skipped)", got)
	}
	for _, id := range []string{"b", "c"} {
		if _, err := os.Stat(filepath.Join(dir, id+".txt")); err == nil {
			t.Errorf("%s.txt is on the branch", id)
		}
	}
	cleanTree(t, dir)
}

func TestAG_T4_TemporalPlanAgentThatCannotRunEndsFailed(t *testing.T) {
	dir, scripts, file := planRepo(t, twoGroups)
	impl := implementer(t, scripts, `  a) echo 'cannot start' >&2; exit 3 ;;`)
	_, _, r := runPlanKind(t, planKindParams(dir, file, impl, approver(t, scripts), 1))
	wantPlanEnd(t, r, plan.StatusFailed, exitcode.Error)
	if _, err := os.Stat(filepath.Join(dir, "a.txt")); err == nil {
		t.Error("a.txt is on the branch")
	}
	cleanTree(t, dir)
}

// TestIF_1_TemporalLoopAndPlanRefuseTheLocalEnginesFlags: with --engine
// temporal, a flag that is each worker's or the local state store's is
// refused with one line and exit 2, before any cluster is dialled (the
// address given answers nothing).
func TestIF_1_TemporalLoopAndPlanRefuseTheLocalEnginesFlags(t *testing.T) {
	dir, scripts, file := planRepo(t, twoGroups)
	eng := []string{"--engine", "temporal", "--temporal-address", "127.0.0.1:1"}
	loop := slices.Concat([]string{"loop", "--goal", "g", "--check", "true", "--max-iterations", "1", "--workdir", dir}, eng)
	for _, tc := range []struct {
		args []string
		want string
	}{
		{slices.Concat(loop, []string{"--state", scripts}), "--state is each worker's with --engine temporal"},
		{slices.Concat(loop, []string{"--fresh"}), "--fresh reads the local state store"},
		{slices.Concat(loop, []string{"--predecessor", "r-1"}), "--predecessor reads the local state store"},
		{append([]string{"plan", "run", file, "--workdir", dir, "--state", scripts}, eng...), "--state is each worker's with --engine temporal"},
		{append([]string{"plan", "run", file, "--workdir", dir, "--fresh"}, eng...), "--fresh reads the local state store"},
		{append([]string{"plan", "run", filepath.Join(scripts, "none.yaml"), "--workdir", dir}, eng...), "plan file:"},
	} {
		ios, _, errOut := testIO(nil)
		if code := Run(t.Context(), tc.args, ios); code != exitcode.Usage || !strings.Contains(errOut.String(), tc.want) || strings.Count(errOut.String(), "\n") != 1 {
			t.Errorf("%v: exit %d, stderr %q; want exit 2 and one line saying %q", tc.args, code, errOut.String(), tc.want)
		}
	}
}

// acrossWorkers runs a workflow that continues as new every few steps,
// each run of it served by a new worker (a new runtime, as after a
// worker's death) with the state directory state, and returns its end
// and how many workers served it.
func acrossWorkers[P, D, S, R any](t *testing.T, wfType, state string, in temporal.Input[P, D, S, R]) (*testsuite.TestWorkflowEnvironment, temporal.Result[S], int) {
	t.Helper()
	var r temporal.Result[S]
	for workers := 1; ; workers++ {
		if workers > 200 {
			t.Fatalf("%d workers and no end: the run goes round in circles", workers)
		}
		env, rt := kindsEnv(t)
		rt.opts.StateDir = state
		env.ExecuteWorkflow(wfType, in)
		var can *workflow.ContinueAsNewError
		if err := env.GetWorkflowError(); errors.As(err, &can) {
			if err := converter.GetDefaultDataConverter().FromPayloads(can.Input, &in); err != nil {
				t.Fatal(err)
			}
			if in.Setup == nil {
				t.Fatal("continued as new without the recorded setup")
			}
			continue
		}
		if err := env.GetWorkflowResult(&r); err != nil {
			t.Fatal(err)
		}
		return env, r, workers
	}
}

// TestREL_2_TemporalLoopGoesOnOnAnotherWorker: every few steps the
// workflow continues as new, and each run of it is served by a new
// worker on the same machine: each binds the loop again from the
// recorded setup (mid-iteration, on a tree the iteration changed), and
// the loop ends complete with each iteration committed once.
func TestREL_2_TemporalLoopGoesOnOnAnotherWorker(t *testing.T) {
	dir, scripts := todoRepo(t, 3)
	env, r, workers := acrossWorkers(t, kinds.Check(nil).WorkflowType(), t.TempDir(), temporal.Input[kinds.LoopParams, kinds.LoopSetup, checkloop.State, checkloop.ActResult]{
		Params: loopKindParams(dir, removeOne(t, scripts), 5), Options: temporal.Options{StepsPerRun: 1},
	})
	wantLoopEnd(t, env, r, checkloop.StatusComplete, exitcode.OK)
	if workers < 3 {
		t.Fatalf("%d workers served the run, want several", workers)
	}
	got := trailers(t, dir, checkloop.TrailerKey)
	want := []string{checkloop.TicketID(r.RunID, 3), checkloop.TicketID(r.RunID, 2), checkloop.TicketID(r.RunID, 1)}
	if !slices.Equal(got, want) {
		t.Fatalf("trailers %v, want %v: each iteration committed once", got, want)
	}
	cleanTree(t, dir)
}

// TestREL_2_TemporalPlanGoesOnOnAnotherWorker: the same for a plan with
// a parallel group: each task is committed once, and the plan ends
// complete.
func TestREL_2_TemporalPlanGoesOnOnAnotherWorker(t *testing.T) {
	dir, scripts, file := planRepo(t, twoGroups)
	_, r, workers := acrossWorkers(t, kinds.Plan(nil).WorkflowType(), t.TempDir(), temporal.Input[kinds.PlanParams, kinds.PlanSetup, plan.State, plan.ActResult]{
		Params: planKindParams(dir, file, implementer(t, scripts, ""), approver(t, scripts), 2), Options: temporal.Options{StepsPerRun: 1},
	})
	wantPlanEnd(t, r, plan.StatusComplete, exitcode.OK)
	if workers < 3 {
		t.Fatalf("%d workers served the run, want several", workers)
	}
	got := trailers(t, dir, "Converge-Task")
	slices.Sort(got)
	want := []string{plan.TaskRef(r.RunID, "a"), plan.TaskRef(r.RunID, "b"), plan.TaskRef(r.RunID, "c")}
	if !slices.Equal(got, want) {
		t.Fatalf("trailers %v, want %v: each task committed once", got, want)
	}
	cleanTree(t, dir)
}

// TestLOOP_5_PLAN_1_TemporalCommandsOnARealServer: `converge loop` and
// `converge plan run` with --engine temporal against a real Temporal dev
// server and a `converge worker` (runWorker), in this process: each
// starts its workflow, prints the log and the result as the local command
// does, and exits with its terminal's code; the work is in the
// repository.
func TestLOOP_5_PLAN_1_TemporalCommandsOnARealServer(t *testing.T) {
	hostPort := testutil.TemporalDevServer(t)
	eng := []string{"--engine", "temporal", "--temporal-address", hostPort, "--namespace", testutil.TemporalNamespace, "--task-queue", "kinds"}
	// A run that never ends detaches at the deadline: the test fails.
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	wios, _, werr := testIO(nil)
	done := make(chan error, 1)
	go func() {
		done <- runWorker(ctx, wios, &workerOptions{engine: engineOptions{Engine: engineTemporal, Address: hostPort, Namespace: testutil.TemporalNamespace, TaskQueue: "kinds"}, StateDir: t.TempDir()})
	}()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("worker: %v\n%s", err, werr.String())
		}
	})

	dir, scripts := todoRepo(t, 3)
	ios, out, errOut := testIO(nil)
	code := Run(ctx, slices.Concat([]string{"loop", "--goal", "no TODO left", "--check", "sh check.sh", "--agent-cmd", removeOne(t, scripts), "--max-iterations", "2", "--no-agent-check", "--workdir", dir}, eng), ios)
	if code != exitcode.Bound || !strings.Contains(out.String(), "converge loop: limited (exit 4)") || !strings.Contains(out.String(), "iter.02  commit") {
		t.Fatalf("loop: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	if got := trailers(t, dir, checkloop.TrailerKey); len(got) != 2 {
		t.Fatalf("loop trailers %v, want 2 commits", got)
	}
	cleanTree(t, dir)

	pdir, pscripts, file := planRepo(t, twoGroups)
	report := filepath.Join(pscripts, "report.md")
	ios, out, errOut = testIO(nil)
	code = Run(ctx, slices.Concat([]string{"plan", "run", file, "--agent-cmd", implementer(t, pscripts, ""), "--review-agent-cmd", approver(t, pscripts), "--no-agent-check", "--workdir", pdir, "--json", "--report", report}, eng), ios)
	if code != exitcode.OK || !strings.Contains(out.String(), `"status":"complete","exit_code":0`) {
		t.Fatalf("plan: exit %d\nstdout:\n%s\nstderr:\n%s", code, out, errOut)
	}
	assertEvents(t, out.String())
	if b, err := os.ReadFile(report); err != nil || !strings.Contains(string(b), "complete (exit 0)") {
		t.Fatalf("report: %v\n%s", err, b)
	}
	if got := trailers(t, pdir, "Converge-Task"); len(got) != 3 {
		t.Fatalf("plan trailers %v, want one commit per task", got)
	}
	cleanTree(t, pdir)
}
