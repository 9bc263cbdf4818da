package mcpserver_test

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/convergeloop/converge/internal/mcpserver"
	"github.com/convergeloop/converge/internal/store"
)

// gitRepo makes a git repository in a new directory with files, committed.
func gitRepo(t *testing.T, files map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "repo")
	must(t, os.MkdirAll(dir, 0o755))
	for name, body := range files {
		must(t, os.WriteFile(filepath.Join(dir, name), []byte(body), 0o644))
	}
	git(t, dir, "init", "-q")
	git(t, dir, "add", "-A")
	git(t, dir, "-c", "user.name=tester", "-c", "user.email=tester@example.com", "commit", "-qm", "init")
	return dir
}

func git(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := exec.Command("git", append([]string{"-C", dir}, args...)...).CombinedOutput()
	if err != nil {
		t.Fatalf("git %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// script writes a shell script named name into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	must(t, os.WriteFile(p, []byte(body), 0o755))
	return p
}

// started is what a start tool answers.
type started struct {
	Runs     []mcpserver.Run `json:"runs"`
	PID      int             `json:"pid"`
	Output   string          `json:"output"`
	ExitCode *int            `json:"exit_code"`
}

// ended waits until run has ended and returns it as run_status shows it.
func ended(t *testing.T, cs *mcp.ClientSession, run string) mcpserver.Run {
	t.Helper()
	var r mcpserver.Run
	waitFor(t, "run "+run+" ends", func() bool {
		r = mcpserver.Run{}
		call(t, cs, "run_status", map[string]any{"run": run}, &r)
		return r.ExitCode != nil
	})
	return r
}

const statusComplete = `{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"wrote done","files_changed":["state.txt"]}`

// TestLOOP_1_MCPStartLoopRunsInTheBackground: start_loop starts converge
// loop on a repository as a converge of its own and answers once the run
// is in the store, running and held by that converge; the run goes on
// without the call, iterates the agent until the done-check converge
// runs passes, and commits the iteration on the branch with its ticket
// as trailer. Its log and proof then read as any run's.
func TestLOOP_1_MCPStartLoopRunsInTheBackground(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	repo := gitRepo(t, map[string]string{"state.txt": "todo\n", "check.sh": "grep -qx done state.txt\n"})
	agent := script(t, work, "agent.sh", "cat >/dev/null\necho done > state.txt\necho '"+statusComplete+"'\n")
	state := filepath.Join(work, "state")
	cs := session(t, state, nil, buildConverge(t))

	var out started
	call(t, cs, "start_loop", map[string]any{
		"workdir": repo, "goal": "make the check pass", "check": "sh check.sh",
		"agent_cmd": "sh " + agent, "max_iterations": 3,
	}, &out)
	stopOnCleanup(t, out.PID)
	if len(out.Runs) != 1 || out.PID == 0 || out.Output == "" {
		t.Fatalf("start_loop: want one run, the pid and the output file, got %+v", out)
	}
	r := out.Runs[0]
	if r.Kind != "loop" || !strings.Contains(r.Target, "repo") || !strings.HasPrefix(r.ID, "r-") {
		t.Fatalf("start_loop: the run is not the loop on the repository: %+v", r)
	}
	if r.ExitCode == nil && (r.Alive == nil || !*r.Alive) {
		t.Fatalf("start_loop: the run is running but no converge holds it: %+v", r)
	}
	// In the store itself, recorded by the converge the tool started.
	db, err := store.Open(context.Background(), filepath.Join(state, "converge.db"))
	must(t, err)
	stored, err := db.GetRun(context.Background(), r.ID)
	db.Close()
	if err != nil || stored.Kind != "loop" || stored.Target != r.Target {
		t.Fatalf("the store does not hold the loop run %s: %+v %v", r.ID, stored, err)
	}

	r = ended(t, cs, r.ID)
	if r.Status != "complete" || *r.ExitCode != 0 {
		b, _ := os.ReadFile(out.Output)
		t.Fatalf("the loop ended %s (exit %d), want complete:\n%s", r.Status, *r.ExitCode, b)
	}
	// The outcome in the repository: one commit of the iteration, with
	// its ticket, holding the agent's change; nothing left uncommitted.
	if got := git(t, repo, "log", "-1", "--format=%(trailers:key=Converge-Loop,valueonly)"); strings.TrimSpace(got) != r.ID+".iter.01" {
		t.Errorf("the head's Converge-Loop trailer is %q, want %s.iter.01", got, r.ID)
	}
	if got := git(t, repo, "show", "HEAD:state.txt"); got != "done\n" {
		t.Errorf("state.txt at the head: %q", got)
	}
	if got := git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the work tree is not clean:\n%s", got)
	}
	if t.Failed() {
		b, _ := os.ReadFile(out.Output)
		t.Logf("the loop's output:\n%s\ngit log:\n%s", b, git(t, repo, "log", "--all", "--format=%H %s%n%b"))
	}

	var lg struct{ Log string }
	call(t, cs, "run_log", map[string]any{"run": r.ID}, &lg)
	if !strings.Contains(lg.Log, r.ID+".iter.01") || !strings.Contains(lg.Log, "complete") {
		t.Errorf("run_log of the loop:\n%s", lg.Log)
	}
	var pf struct {
		Run  mcpserver.Run `json:"run"`
		Text string        `json:"text"`
	}
	call(t, cs, "run_proof", map[string]any{"run": r.ID}, &pf)
	if pf.Run.ID != r.ID || pf.Run.Status != "complete" || pf.Text == "" {
		t.Errorf("run_proof of the loop: %+v", pf)
	}
}

// TestPR_G5_MCPStopEndsAPlanRun: start_plan starts converge plan run in
// the background; stop_run on it, while its implementer works, ends the
// run at once as converge stop does: blocked (exit 3), the task's work
// undone, nothing committed.
func TestPR_G5_MCPStopEndsAPlanRun(t *testing.T) {
	t.Parallel()
	work := t.TempDir()
	repo := gitRepo(t, map[string]string{"README": "a repository\n"})
	plan, hold, impl, review := heldPlan(t, work)
	cs := session(t, filepath.Join(work, "state"), nil, buildConverge(t))

	var out started
	call(t, cs, "start_plan", map[string]any{
		"workdir": repo, "plan": plan, "agent_cmd": "sh " + impl, "review_agent_cmd": "sh " + review,
	}, &out)
	stopOnCleanup(t, out.PID)
	if len(out.Runs) != 1 || out.Runs[0].Kind != "plan" || out.Runs[0].ExitCode != nil {
		t.Fatalf("start_plan: want one running plan run, got %+v", out)
	}
	id := out.Runs[0].ID
	waitFor(t, "the implementer starts", func() bool {
		_, err := os.Stat(filepath.Join(work, "started"))
		return err == nil
	})

	var stop struct{ Message string }
	call(t, cs, "stop_run", map[string]any{"run": id}, &stop)
	r := ended(t, cs, id)
	// The hold stays: the run ended because it was stopped, not because
	// its agent finished.
	if _, err := os.Stat(hold); err != nil {
		t.Fatal(err)
	}
	if r.Status != "blocked" || *r.ExitCode != 3 {
		b, _ := os.ReadFile(out.Output)
		t.Fatalf("the stopped plan ended %s (exit %d), want blocked (exit 3):\n%s", r.Status, *r.ExitCode, b)
	}
	if got := strings.TrimSpace(git(t, repo, "rev-list", "--count", "HEAD")); got != "1" {
		t.Errorf("the branch has %s commits, want the 1 it started with", got)
	}
	if got := git(t, repo, "status", "--porcelain"); got != "" {
		t.Errorf("the work tree is not clean:\n%s", got)
	}
	var lg struct{ Log string }
	call(t, cs, "run_log", map[string]any{"run": id}, &lg)
	if !strings.Contains(lg.Log, "stopped by a human") {
		t.Errorf("the plan's log does not say it was stopped:\n%s", lg.Log)
	}
}

// TestREL_3_MCPStartWithBadInputIsOneToolError: a start the command
// refuses (no done-check, a malformed PR URL, a missing plan) is a tool
// error with converge's one line and its exit code, and records no run;
// words that would move the run to another store are refused before
// anything starts.
func TestREL_3_MCPStartWithBadInputIsOneToolError(t *testing.T) {
	t.Parallel()
	repo := gitRepo(t, map[string]string{"README": "a repository\n"})
	state := t.TempDir()
	cs := session(t, state, nil, buildConverge(t))
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"start_loop", map[string]any{"workdir": repo, "goal": "g", "agent_cmd": "true", "max_iterations": 1}, "loop needs one done-check"},
		{"start_pr", map[string]any{"prs": []string{"not-a-url"}}, "not-a-url"},
		{"start_plan", map[string]any{"workdir": repo, "plan": "missing.yaml", "agent_cmd": "true"}, "missing.yaml"},
	} {
		msg := toolError(t, callRaw(t, cs, c.tool, c.args), c.tool)
		if !strings.Contains(msg, c.want) || !strings.Contains(msg, "exit 2") {
			t.Errorf("%s: want converge's line naming %q and exit 2, got %s", c.tool, c.want, msg)
		}
	}
	msg := toolError(t, callRaw(t, cs, "start_loop", map[string]any{"workdir": repo, "goal": "g", "check": "true", "agent_cmd": "true", "max_iterations": 1, "args": []string{"--state=/tmp/elsewhere"}}), "start_loop")
	if !strings.Contains(msg, "may not set --state") {
		t.Errorf("start_loop with --state in args: %s", msg)
	}
	var list struct{ Runs []mcpserver.Run }
	call(t, cs, "list_runs", map[string]any{"limit": 0}, &list)
	if len(list.Runs) != 0 {
		t.Errorf("refused starts recorded runs: %+v", list.Runs)
	}
}

// heldPlan writes into work a one-task plan whose implementer writes
// a.txt, touches "started" beside itself and then waits while the hold
// file exists, and a reviewer that approves: a plan run the test can
// catch with its implementer at work.
func heldPlan(t *testing.T, work string) (plan, hold, impl, review string) {
	t.Helper()
	plan = script(t, work, "plan.yaml", "groups:\n  - name: only\n    tasks:\n      - {id: a, prompt: Write a.txt., files: [a.txt]}\n")
	hold = script(t, work, "hold", "")
	impl = script(t, work, "impl.sh", `dir=$(dirname "$0")
cat >/dev/null
echo a > a.txt
touch "$dir/started"
while [ -f "$dir/hold" ]; do sleep 0.05; done
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"wrote a","files_changed":["a.txt"],"implementer_status":"DONE"}'
`)
	review = script(t, work, "review.sh", `cat >/dev/null
echo '{"status":"complete","next_action":"","needs_extension_minutes":0,"summary":"fine","files_changed":[],"approved":true,"issues":[]}'
`)
	return plan, hold, impl, review
}
