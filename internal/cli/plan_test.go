package cli

import (
	"path/filepath"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"
)

// planScript runs one scenario of testdata/plan: real `converge plan run`
// command lines on a git repository the script creates, with `command`
// agents that are shell scripts.
func planScript(t *testing.T, name string) {
	t.Parallel()
	testscript.Run(t, testscript.Params{
		Files: []string{filepath.Join("testdata", "plan", name+".txtar")},
		Setup: func(env *testscript.Env) error {
			for _, k := range []string{"CONVERGE_TOKEN", "GH_TOKEN", "GITHUB_TOKEN", "GH_ENTERPRISE_TOKEN", "GITHUB_ENTERPRISE_TOKEN", "GITHUB_API_URL"} {
				env.Setenv(k, "")
			}
			env.Setenv("XDG_STATE_HOME", env.WorkDir+"/state")
			// The scripted agents write their logs in $WORK (SEC-7).
			env.Setenv("CONVERGE_SANDBOX_WRITABLE", env.WorkDir)
			checkEvents(env)
			return nil
		},
	})
}

// TestAG_T2_StatusesGroupsAndReport (with AG-P1, AG-E1, PLAN-1): a
// BLOCKED task skips its dependent while its siblings finish;
// NEEDS_CONTEXT is re-dispatched with more context, then escalated; the
// reviewer sees the diff, not the report; the tracking report's per-task
// fields.
func TestAG_T2_StatusesGroupsAndReport(t *testing.T) { planScript(t, "plan_1_groups") }

// TestPLAN_1_ReviewLoop: an important issue goes back to the implementer
// and is fixed on the second iteration; a reviewer that never approves
// blocks the task after 2 fix-review iterations, its commits taken off the
// branch; a critical concern blocks before review; a minor issue does not.
func TestPLAN_1_ReviewLoop(t *testing.T) { planScript(t, "plan_1_review_loop") }

// TestPLAN_1_ResumeAfterKill: converge killed (SIGKILL) mid-task resumes
// from its stored state without repeating the finished task or the
// interrupted ticket.
func TestPLAN_1_ResumeAfterKill(t *testing.T) { planScript(t, "plan_1_resume_after_kill") }

// TestPLAN_1_BadInput: a bad plan file or flag is exit 2 with one line
// naming the file and line, before any run is recorded.
func TestPLAN_1_BadInput(t *testing.T) { planScript(t, "plan_1_bad_input") }

// TestAG_P1_ParallelGroupInWorktrees: a parallel group's tasks run at
// once in worktrees of their own, a task on a shared file waits, a
// blocked task does not stop its group, and each task is its own commit.
func TestAG_P1_ParallelGroupInWorktrees(t *testing.T) { planScript(t, "ag_p1_parallel") }

// TestPLAN_1_Acceptance is issue 10's plan acceptance: six tasks in two
// parallel groups, NEEDS_CONTEXT twice, a BLOCKED task and its skipped
// dependent, and a report claiming work its diff does not contain, which
// the review catches.
func TestPLAN_1_Acceptance(t *testing.T) { planScript(t, "plan_1_acceptance") }

// TestPLAN_1_KillDuringParallelBatch (REL-2, AG-P1): converge killed
// while a parallel batch runs in pool worktrees; the same command line
// resumes, removes the worktrees the dead run left (the user's own
// worktree stays) before it dispatches, and each task ends done exactly
// once, nothing half-applied on the branch.
func TestPLAN_1_KillDuringParallelBatch(t *testing.T) { planScript(t, "plan_1_kill_parallel_batch") }

// TestPR_G5_StopPlanRun: `converge stop RUN` ends a plan run at once,
// stopping its agents (in the work tree, in a parallel batch's
// worktrees, and a reviewer): the tasks in progress BLOCKED, the rest SKIPPED, exit 3, a
// clean tree with nothing of them on the branch; the same command line
// then starts a new run rather than resuming the stopped one. A stop
// asked of a run whose converge was killed takes effect when it is
// resumed, and the killed dispatch's half change is dropped.
func TestPR_G5_StopPlanRun(t *testing.T) { planScript(t, "pr_g5_stop_plan_run") }

// TestAG_P1_FixAfterUnwindInOneStep: a blocked task's commit is taken off
// the branch and another task's fix is dispatched in the same step; the
// fix starts from the branch as the unwind left it, so the blocked
// task's work stays off.
func TestAG_P1_FixAfterUnwindInOneStep(t *testing.T) { planScript(t, "ag_p1_unwind_then_fix") }

// TestPLAN_1_KillAfterCommitBeforeRecord (REL-2): converge killed between
// committing a task's change and recording it; on resume the task runs
// again, and its change lands once: one commit per task.
func TestPLAN_1_KillAfterCommitBeforeRecord(t *testing.T) { planScript(t, "plan_1_kill_after_commit") }

// TestREL2_PlanUnrecordedCommitUnderAHumansIsNeitherRewrittenNorRepeated:
// the same kill, then a human commits on top before the rerun; see
// testdata/plan/plan_1_kill_after_commit_human_on_top.txtar.
func TestREL2_PlanUnrecordedCommitUnderAHumansIsNeitherRewrittenNorRepeated(t *testing.T) {
	planScript(t, "plan_1_kill_after_commit_human_on_top")
}

// TestPLAN_1_RecordAndContinue: a task not approved after 2 fix-review
// iterations is NOT_APPROVED, its open issues in the report and the
// decision log, its commits on the branch; its dependent and the rest
// run on; the run ends blocked, never complete.
func TestPLAN_1_RecordAndContinue(t *testing.T) { planScript(t, "plan_1_record_and_continue") }

// TestPLAN_1_OrchestratorJudgment: a task its implementer reports too
// large is split by the reviewer into parts that run in its place; a
// NEEDS_CONTEXT naming lines of a file gets those lines and nothing else;
// a concern the judge finds critical blocks the task before its review.
func TestPLAN_1_OrchestratorJudgment(t *testing.T) { planScript(t, "plan_1_judgment") }
