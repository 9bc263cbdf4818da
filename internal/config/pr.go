package config

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/engine"
	"github.com/convergeloop/converge/internal/forge/forgehttp"
	"github.com/convergeloop/converge/internal/pool"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/prwork"
	"github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/review/copilot"
	"github.com/convergeloop/converge/internal/verify"
)

// PRFields are the PR loop's tunables (PR-M4): the one place where every
// default is listed. The values come from the packages that own them
// (prloop.DefaultConfig, agent.DefaultBudget, …), so a default is written
// once and named here.
func PRFields() []Field {
	d := prloop.DefaultConfig()
	dur := func(x time.Duration) string { return x.String() }
	return append([]Field{
		// Caps and guards (PR-T5, PR-T6, PR-T3, PR-G1).
		{Key: "max_iterations", Kind: Int, Min: 1, Default: strconv.Itoa(d.MaxIterations), Help: "maximum rounds"},
		{Key: "max_wall_clock", Kind: Duration, Min: 1, Default: dur(d.MaxWallClock), Help: "maximum wall-clock time of a run"},
		{Key: "max_cost", Kind: Float, Min: 0, Default: strconv.FormatFloat(d.MaxCostUSD, 'g', -1, 64), Check: finite, Help: "end the run cap-exhausted once its agents reported this much cost in USD (PR-T5); an agent run that reports no price ends a bounded run too, as its cost cannot be checked; 0: no bound"},
		{Key: "diff_multiplier", Kind: Float, Min: 1, Default: strconv.FormatFloat(d.DiffMultiplier, 'g', -1, 64), Help: "the loop's own lines may grow to this multiple of the PR's lines at start (PR-T6)"},
		{Key: "max_structural_rounds", Kind: Int, Min: 1, Default: strconv.Itoa(d.MaxStructuralRounds), Help: "consecutive structural rounds before convergence-failure (PR-T6)"},
		{Key: "idle_timeout", Kind: Duration, Min: 1, Default: dur(d.IdleTimeout), Help: "no activity on the PR for this long ends the run idle-timeout (PR-T3)"},
		// Waits of a round (PR-S1, PR-S2).
		{Key: "review_start_window", Kind: Duration, Min: 1, Default: dur(d.ReviewStartWindow), Help: "how long a requested review by the forge's bot (Copilot, GitLab Duo) may take to start before its latest review of the head is taken instead"},
		{Key: "review_wait", Kind: Duration, Min: 1, Default: dur(d.ReviewWaitMax), Help: "longest wait for a requested review by the forge's bot to land"},
		{Key: "ci_wait", Kind: Duration, Min: 1, Default: dur(d.CIWaitMax), Help: "longest wait for CI to settle on a head"},
		// Back-offs (PR-S2, REL-1).
		{Key: "poll_min", Kind: Duration, Min: 0.001, Default: dur(60 * time.Second), Help: "first wait between polls"},
		{Key: "poll_max", Kind: Duration, Min: 0.001, Default: dur(600 * time.Second), Help: "longest wait between polls (back-off cap)"},
		{Key: "fault_budget", Kind: Duration, Min: 0.001, Default: dur(engine.DefaultFaultBudget), Help: "how long forge outages and rate limits are ridden out before the run ends errored"},
		// The forge client's (REL-1); read from flags, the environment and
		// --config only, as one client serves every PR of a host.
		{Key: "forge_timeout", Kind: Duration, Min: 0.001, Default: dur(forgehttp.DefaultTimeout), Help: "time-box of one forge request; a read past it is retried, a write is not (it may have landed)"},
		{Key: "forge_backoff", Kind: Duration, Min: 0.001, Default: dur(forgehttp.DefaultBackoff), Help: "first back-off of a retried forge request; each retry doubles it"},
		{Key: "forge_concurrency", Kind: Int, Min: 1, Default: strconv.Itoa(forgehttp.DefaultMaxConcurrent), Help: "forge requests in flight at once per API host"},
		// Per-step budgets (AG-T1, AG-T5).
		{Key: "agent_timeout", Kind: Duration, Min: 1, Default: dur(agent.DefaultBudget), Help: "time-box of one agent run; at it the agent is stopped, and a run without a status record is retried once"},
		{Key: "test_timeout", Kind: Duration, Min: 1, Default: dur(prwork.DefaultTestBudget), Help: "time-box of one build/test run; a run stopped at it counts as failing"},
		{Key: "test_cmd", Kind: String, Default: "", Help: "test command (default: discovered from the repository, REPO-C1)"},
		{Key: "allow_untested", Kind: Bool, Default: "false", Help: "push fixes although no test command is found; false: such fixes are handed off \"no test command\" (PR-V4)"},
		{Key: "proof", Kind: String, Default: prwork.ProofRedGreen, Help: "how a structural finding's fix is proven (PR-V7): red-green, by a test that fails without the fix and passes with it, else the verifier's agreement (the judge, or an LLM fixer in a fresh context), else a trusted suggestion applied verbatim, else handed off \"no proof\"; lines: changed lines alone, every reply saying \"changed lines, not proven\"", Check: func(v string) error {
			if v != prwork.ProofRedGreen && v != prwork.ProofLines {
				return fmt.Errorf("%q is not red-green or lines", v)
			}
			return nil
		}},
		// What one round may push (PR-V3).
		{Key: "max_push_bytes", Kind: Int, Min: 0, Default: strconv.FormatInt(verify.DefaultPushBytes, 10), Help: "bytes a round's change may add in all (a text file by its added lines, a binary file by its size); a fixer whose change takes the round over it is undone and its findings handed off naming the bound (PR-V3); 0: no bound"},
		{Key: "max_file_bytes", Kind: Int, Min: 0, Default: strconv.FormatInt(verify.DefaultFileBytes, 10), Help: "bytes a round's change may add to one file; a fixer's change over it is undone and its findings handed off naming the bound (PR-V3); 0: no bound"},
		{Key: "max_push_files", Kind: Int, Min: 0, Default: strconv.Itoa(verify.DefaultPushFiles), Help: "files a round's change may touch; a fixer whose change takes the round over it is undone and its findings handed off naming the bound (PR-V3); 0: no bound"},
		// Fixers (AG-P1, AG-E1).
		{Key: "max_parallel_fixers", Kind: Int, Min: 1, Default: strconv.Itoa(pool.DefaultMax), Help: "fixers of a round that run at once, one per file, each in its own git worktree (AG-P1)"},
		{Key: "agent_models", Kind: List, Default: "", Help: "the fixer's model escalation ladder, default model first: a second NEEDS_CONTEXT or a BLOCKED re-dispatches on the next (AG-E1); empty: the agent's one configured model"},
		// What the repository has.
		{Key: "expects_copilot", Kind: Bool, Default: strconv.FormatBool(d.ExpectsBot), Help: "the forge's review bot (Copilot on GitHub, GitLab Duo on GitLab) reviews this repository; false: single-iteration mode (PR-M3)"},
		{Key: "expects_github_checks", Kind: Bool, Default: strconv.FormatBool(!d.ExpectNoChecks), Help: "the repository has CI; false: two-stable does not wait for checks (PR-T1(2))"},
		{Key: "recap_interval", Kind: Int, Min: 0, Default: strconv.Itoa(d.RecapInterval), Help: "every this many rounds, counted from the forge's history, a judge recaps the run: CONTINUE, REVERT-AND-SHIP or HAND-OFF (PR-G2); 0: never"},
		{Key: "fix_minor", Kind: Bool, Default: strconv.FormatBool(d.FixMinor), Help: "send minor review points (wording, naming, style) to the fixers too; false: reply that a human decides, and leave them open (PR-S9)"},
		{Key: "trusted_bots", Kind: List, Default: strings.Join(copilot.DefaultAllowlist(), ","), Help: "bot logins whose findings are trusted (PR-O2; matched lower-case)"},
		// The local review (PR-S4).
		{Key: "review_angles", Kind: List, Default: review.DefaultAngleNames(), Help: "angles of the local review, one agent run each", Check: func(v string) error {
			_, err := review.ParseAngles(v)
			return err
		}},
		{Key: "review_instructions", Kind: String, Default: prwork.ReviewInstructionsFile, Help: "the repository's shared review instructions, read by the local review", Check: relPath},
		{Key: "review_memory", Kind: Bool, Default: strconv.FormatBool(d.ReviewMemory), Help: "keep a machine-written section of review_instructions listing the points converge deferred or escalated, with why, synced into " + prwork.CopilotInstructionsFile + " so both reviewers read them; written only in a round's own commit"},
		{Key: "review_escalation", Kind: Bool, Default: "true", Help: "after a round whose local review found structural items, the next local review looks harder: review_escalation_angles added, the next model of review_models, every angle at its highest effort (PR-S4); false: every round's review is the same"},
		{Key: "review_escalation_angles", Kind: List, Default: review.DefaultEscalationAngleNames(), Help: "angles an escalated local review adds", Check: func(v string) error {
			if v == "" {
				return nil
			}
			_, err := review.ParseAngles(v)
			return err
		}},
		{Key: "review_models", Kind: List, Default: "", Help: "the review agent's model escalation ladder, default model first: an escalated review runs on the next (PR-S4, AG-E1); empty: the agent's one configured model"},
		// Base sync (PR-S14).
		{Key: "sync_base", Kind: Bool, Default: strconv.FormatBool(d.SyncBase), Help: "bring a branch that lacks commits of its base (BEHIND, or behind by the forge's compare) up to date with a merge commit (tested, pushed, never forced) once everything else converged (PR-S14); a conflicting (DIRTY) branch always ends base-moved"},
	}, AgentFields()...)
}

// AgentFields are the settings every agent CLI backend of a run gets, in
// converge pr, loop and plan alike.
func AgentFields() []Field {
	return []Field{
		{Key: "agent_env", Kind: List, Repeatable: true, Default: "", Check: envNames,
			Help: "more variables of converge's environment passed to every agent CLI as they are (a provider's key, a config path; repeatable); a forge token never passes, whatever its name"},
		{Key: "agent_retry_bound", Kind: Duration, Min: 1, Default: agent.DefaultRetryBound.String(),
			Help: "how long an agent CLI may keep retrying a failing model request before its run is stopped errored, naming the endpoint"},
	}
}

// envNames accepts a list of variable names: no name empty or holding a
// '=' (a NAME=VALUE would set a value, which agent_env never does).
func envNames(v string) error {
	if v == "" {
		return nil
	}
	for _, n := range strings.Split(v, ",") {
		if err := EnvName(n); err != nil {
			return err
		}
	}
	return nil
}

// EnvName checks one variable name of agent_env.
func EnvName(n string) error {
	switch {
	case strings.TrimSpace(n) == "":
		return fmt.Errorf("an empty variable name; name a variable of converge's environment, e.g. AWS_PROFILE")
	case strings.Contains(n, "="):
		return fmt.Errorf("%q is not a variable name: agent_env names variables passed as they are, it sets none; give the name only (%s)", n, strings.SplitN(n, "=", 2)[0])
	case strings.Contains(n, "*"):
		return fmt.Errorf("%q is a pattern: agent_env names variables one by one, so that no credential passes by accident; list each name", n)
	case strings.ContainsAny(n, " \t\n\x00"):
		return fmt.Errorf("%q is not a variable name (it holds a space or a control character)", n)
	}
	return nil
}

// finite refuses NaN and the infinities, which ParseFloat reads.
func finite(v string) error {
	if x, _ := strconv.ParseFloat(v, 64); math.IsNaN(x) || math.IsInf(x, 0) {
		return fmt.Errorf("%s is not a finite number", v)
	}
	return nil
}

// relPath accepts a path inside the repository.
func relPath(v string) error {
	if v == "" || strings.HasPrefix(v, "/") || strings.Contains("/"+v+"/", "/../") {
		return fmt.Errorf("%q must be a path inside the repository", v)
	}
	return nil
}
