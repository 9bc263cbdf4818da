// Package prwork is the PR loop's work in a git clone: the fixers, the
// verification of what they did (PR-V1..V3), the build and test runs and
// their census (AG-T5, PR-V4), the commit and the push, the base sync, the
// recap's revert and the local review of a head. It implements the
// interfaces prloop owns (Workspace, Classifier, Recapper, BaseSyncer),
// and prloop, which holds Decide, never imports it.
package prwork

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/convergeloop/converge/internal/agent"
	"github.com/convergeloop/converge/internal/census"
	"github.com/convergeloop/converge/internal/forge"
	"github.com/convergeloop/converge/internal/prloop"
	"github.com/convergeloop/converge/internal/recap"
	"github.com/convergeloop/converge/internal/repo"
	localreview "github.com/convergeloop/converge/internal/review"
	"github.com/convergeloop/converge/internal/text"
	"github.com/convergeloop/converge/internal/verify"
)

// GitWorkspace is the Workspace on a real git clone under the state
// directory (the clone cache, clonecache.go), with a worktree per run
// (IF-4) held only while a step works on the files.
type GitWorkspace struct {
	// Checkout is the run's place in the clone cache: the clone, the
	// run's worktree, fetches and pushes.
	Checkout
	Agent agent.Agent
	// Reviewer runs the local multi-angle review (PR-S4); nil when no
	// agent that can review is configured.
	Reviewer *localreview.Reviewer
	// RecapJudge decides the recap gate's verdict (PR-G2); nil: every
	// recap is a HAND-OFF.
	RecapJudge *recap.Judge
	AgentEnv   []string      // scrubbed environment for agents (AG-B1)
	Budget     time.Duration // per agent run (AG-T1)
	// MaxFixers is how many fixers of a round run at once, one per file,
	// each in its own worktree (AG-P1); zero means pool.DefaultMax.
	MaxFixers int
	// Models is the fixer's model escalation ladder, the default first
	// (AG-E1); empty means the backend's one configured model.
	Models []string
	// Verifier is the judge agent asked whether each fix addresses its
	// finding (PR-V1(b)); nil: the diff's proof alone decides.
	Verifier agent.Agent
	// Proof is how a structural finding is proven (PR-V7): ProofRedGreen
	// ("" too) or ProofLines (changed lines alone, every reply saying so).
	// FreshVerifier agrees to a structural fix no test shows when no
	// judge (Verifier) is configured: an LLM fixer's backend, each time
	// in a fresh context; nil for a command fixer.
	Proof         string
	FreshVerifier agent.Agent
	// TestBudget time-boxes each build/test run (AG-T5); zero means
	// DefaultTestBudget.
	TestBudget time.Duration
	TestCmd    []string // overrides discovery (REPO-C1) when set
	Author     string   // commit author name
	Email      string   // commit author email
	Logf       func(format string, args ...any)

	// AllowUntested lets a fix be pushed when no test command is found;
	// without it such a fix is handed off "no test command" (PR-V4).
	AllowUntested bool
	// Bounds are what one round may push (PR-V3): a fixer whose change
	// takes the round over one is undone and its findings handed off,
	// naming the bound. A zero field is its default
	// (verify.DefaultBounds), one below zero no bound.
	Bounds verify.Bounds
	// TestsMayGo says which tests the round's findings ask to remove: a
	// candidate may lose those from its census (PR-V4). Nil: a test a
	// finding names and asks to remove or skip (verify.TestMayGo).
	TestsMayGo func(findings []prloop.Finding) func(testID string) bool

	// baselines are the test runs of heads, by SHA (AG-T5): a head is
	// tested once per run, and a pushed fix's own run is its head's.
	baselines map[string]testRun
	// usage is what the fixers of the Fix under way reported consuming
	// (PR-M5), every attempt of every fixer counted.
	usage agent.Usage
	// notes are the fixers' concerns and escalations of that Fix.
	notes []string
	// censuses are the test censuses of that Fix's runs (PR-V4), and
	// mayGo the tests its findings ask to remove.
	censuses []prloop.TestCensus
	mayGo    func(testID string) bool
	// frozenTest is the run's commands as discovered on the base branch
	// (testCommand), once; infra the test infrastructure of the Fix under
	// way, read on its head before any fixer ran (PR-V4).
	testMu     sync.Mutex
	frozenTest *repo.Commands
	infra      map[string]bool
	// vs is the verification of that Fix (PR-V1, PR-V2, PR-V3).
	vs verifyState
	// memory is what the next Fix's commit writes into the review
	// instructions' settled section (review_memory; reviewmemory.go).
	memory *prloop.ReviewMemory
}

// DefaultTestBudget is the time-box of one build/test run (AG-T5, PR-S10).
const DefaultTestBudget = 10 * time.Minute

var _ prloop.Workspace = (*GitWorkspace)(nil)

func (w *GitWorkspace) logf(format string, args ...any) {
	if w.Logf != nil {
		w.Logf(format, args...)
	}
}

var (
	_ prloop.PushChecker = (*GitWorkspace)(nil)
	_ prloop.Releaser    = (*GitWorkspace)(nil)
)

// Fix applies the round's findings on the PR's current head, keeps only
// changes that add no test failure to the head's own (PR-S10, AG-T5), and
// commits and pushes at most one commit carrying the round trailer
// (PR-S11). Never force-pushes. A fixer that cannot run, even on its
// retry, ends the round with a *agent.RunFailure (AG-T4), not with
// dispositions.
func (w *GitWorkspace) Fix(ctx context.Context, pr *forge.PullRequest, round int, findings []prloop.Finding) (prloop.FixResult, error) {
	return w.FixChecked(ctx, pr, round, findings, prloop.PushCheck{})
}

// FixChecked is Fix whose commit is checked before the push (PR-S8): a
// commit that undoes what an earlier loop commit changed on the same
// lines is not pushed. The findings whose fixes did that are handed off
// with check's reason, and the round's other addressed findings are fixed
// again without them, until a commit passes or nothing is left to push.
func (w *GitWorkspace) FixChecked(ctx context.Context, pr *forge.PullRequest, round int, findings []prloop.Finding, check prloop.PushCheck) (res prloop.FixResult, err error) {
	res = prloop.FixResult{Round: round}
	w.usage, w.notes = agent.Usage{}, nil
	w.vs.tree = ""
	defer func() { res.Usage, res.Notes = w.usage, w.notes }()
	w.beginCensus(findings)
	defer func() { res.Censuses = w.endCensus(pr.HeadSHA, res.CommitSHA) }()
	defer func() { res.Proven = w.provenFor(res.Addressed) }()
	var handed []prloop.BlockedFinding
	defer func() { res.Blocked = append(res.Blocked, handed...) }()
	fs := findings
	for {
		var undone map[string]string
		res, undone, err = w.fixOnce(ctx, pr, round, fs, check)
		if err != nil || len(undone) == 0 {
			return res, err
		}
		// Not pushed (PR-S8). Each attempt drops at least one finding,
		// so this ends.
		var again []prloop.Finding
		for _, f := range bottomUp(fs) {
			switch why, ok := undone[f.ID]; {
			case ok:
				handed = append(handed, prloop.BlockedFinding{ID: f.ID, Reason: why})
			case slices.Contains(res.Addressed, f.ID):
				again = append(again, f)
			}
		}
		if len(again) == 0 {
			res.Addressed = nil
			return res, nil
		}
		// What the attempt could not address stays handed off as it
		// said; what it did is fixed again without the reverting ones.
		handed = append(handed, res.Blocked...)
		w.logf("round %d's commit would undo an earlier loop commit; not pushed: fixing the other %d finding(s) again without it", round, len(again))
		fs = again
	}
}

// fixOnce is one attempt of a FixChecked: fixers, build and test, the
// commit and, when check finds nothing undone in it, the push. A commit
// check holds back is dropped, the worktree put back on the head, and
// the findings that undid an earlier commit are returned with why.
func (w *GitWorkspace) fixOnce(ctx context.Context, pr *forge.PullRequest, round int, findings []prloop.Finding, check prloop.PushCheck) (res prloop.FixResult, undone map[string]string, err error) {
	res = prloop.FixResult{Round: round}
	if err := w.atHead(ctx, pr); err != nil {
		return res, nil, err
	}
	ordered := bottomUp(findings)
	test := w.testCommand(ctx, pr)
	if len(test) == 0 && !w.AllowUntested {
		return w.untested(res, ordered), nil, nil
	}
	// What the tests and the test command read, on the head before any
	// fixer ran: the fixers may not change it (PR-V4).
	w.infra = map[string]bool{}
	for _, p := range repo.TestInfra(w.worktree.Dir, test) {
		w.infra[p] = true
	}
	var base *testRun
	if len(test) > 0 {
		b, err := w.baseline(ctx, pr.HeadSHA, test)
		if err != nil {
			return res, nil, err
		}
		base = &b
		if !b.ok() {
			res.BaselineRed = true
			res.BaselineTail = strings.Join(b.excerpt(nil), "\n")
			w.logf("tests are already red on the PR's head %s, before any fix; fixes are judged against that: %s",
				text.ShortSHA(pr.HeadSHA), strings.Join(b.excerpt(nil), " | "))
		}
	}

	outcomes, err := w.apply(ctx, pr, round, ordered)
	if err != nil {
		return res, nil, err
	}
	applied := appliedIDs(outcomes)
	var final *testRun // the test run of the tree that gets committed
	if len(applied) > 0 && base != nil {
		tr, err := w.runTests(ctx, test)
		if err != nil {
			return res, nil, err
		}
		if bad := judge(base, tr); bad != "" {
			// A red build goes back to the fixers once, with its output,
			// for one more try within the round (PR-S10).
			w.logf("tests failed with the round's fixes; giving the fixers the failing output for one more try: %s", bad)
			outs, tr2, still, err := w.retryRed(ctx, pr, round, ordered, test, base, tr, bad)
			switch {
			case err != nil:
				return res, nil, err
			case tr2 != nil:
				w.logf("the fixers' second try passes the tests")
				outcomes, final = outs, tr2
			case len(applied) > 1:
				// Still red: keep only the fixes that are green one by one.
				w.logf("the fixers' second try is red too; trying the fixes one at a time: %s", still)
				outcomes, final, err = w.applyEach(ctx, pr, round, ordered, test, base)
				if err != nil {
					return res, nil, err
				}
			default:
				// One fix, tried twice, the second time with the failure
				// in hand: handed off, quoting it.
				if err := w.reset(ctx, pr.HeadSHA); err != nil {
					return res, nil, err
				}
				for _, id := range applied {
					outcomes[id] = agent.FindingOutcome{FindingID: id, Status: agent.StatusBlocked, Reason: still}
				}
			}
			applied = appliedIDs(outcomes)
		} else {
			final = &tr
		}
		if final != nil && !final.ok() {
			w.logf("keeping the fixes: their tests fail only where the PR's head already failed")
		}
	}
	if final != nil {
		res.TestsPassed = final.ok()
	} else {
		res.TestsPassed = !res.BaselineRed
	}
	for _, f := range ordered {
		o := outcomes[f.ID]
		if o.Status == agent.StatusComplete {
			res.Addressed = append(res.Addressed, f.ID)
		} else {
			res.Blocked = append(res.Blocked, prloop.BlockedFinding{ID: f.ID, Reason: handOff(&res, o.Reason)})
		}
	}
	if len(applied) == 0 {
		return res, nil, nil
	}
	if err := w.restoreVerified(ctx); err != nil {
		return res, nil, err
	}
	memPaths := w.writeReviewMemory(ctx)
	msg := commitMessage(round, ordered, res.Addressed)
	sha, err := w.commit(ctx, repo.CommitOptions{
		Message:     msg,
		AuthorName:  w.Author,
		AuthorEmail: w.Email,
	})
	if errors.Is(err, repo.ErrNothingToCommit) {
		// Fixers reported success but changed nothing: nothing was addressed.
		for _, id := range res.Addressed {
			res.Blocked = append(res.Blocked, prloop.BlockedFinding{ID: id, Reason: handOff(&res, "the fix changed nothing")})
		}
		res.Addressed = nil
		return res, nil, nil
	}
	if err != nil {
		return res, nil, err
	}
	// What the commit changes, line by line: checked before the push, and
	// kept for the checks of later rounds (PR-S8). A commit whose hunks
	// cannot be read is not compared, and pushed.
	hunks, herr := commitHunks(ctx, w.worktree, sha)
	if herr != nil {
		w.logf("could not read the hunks of %s; it is not compared with earlier rounds: %v", text.ShortSHA(sha), herr)
	} else if held, notes := check.Undone(withoutPaths(hunks, memPaths), ordered, res.Addressed); len(held) > 0 {
		for _, n := range notes {
			w.logf("%s", n)
			w.notes = append(w.notes, n)
		}
		if err := w.reset(ctx, pr.HeadSHA); err != nil {
			return res, nil, err
		}
		return res, held, nil
	}
	if err := w.push(ctx, pr); err != nil {
		return res, nil, err
	}
	if final != nil {
		// The pushed tree is the one just tested: that run is the new
		// head's baseline, so the next round does not test it again.
		w.baselines[sha] = *final
	}
	add, del, err := w.worktree.DiffLines(ctx, sha+"~1", sha)
	if err != nil {
		return res, nil, err
	}
	res.CommitSHA = sha
	res.LinesChanged = add + del - w.memoryLines(ctx, sha, memPaths)
	res.Hunks = withoutPaths(hunks, memPaths)
	return res, nil, nil
}

// atHead puts the run's worktree on the PR's head as the forge shows it,
// clean: the worktree made when the run holds none, the head fetched,
// the tree reset.
func (w *GitWorkspace) atHead(ctx context.Context, pr *forge.PullRequest) error {
	made, err := w.useWorktree(ctx, pr)
	if err != nil {
		return err
	}
	if made {
		// A worktree just added at the head is the head, clean.
		return nil
	}
	if err := w.fetch(ctx, pr); err != nil {
		return err
	}
	return w.reset(ctx, pr.HeadSHA)
}

// commitHunks reads what commit sha changed against its first parent,
// line by line (PR-S8).
func commitHunks(ctx context.Context, g *repo.Git, sha string) ([]prloop.Hunk, error) {
	diff, err := g.Run(ctx, "diff", "--unified=0", "--no-renames", "--no-color", "--no-ext-diff",
		"--src-prefix=a/", "--dst-prefix=b/", sha+"~1", sha, "--")
	if err != nil {
		return nil, err
	}
	return prloop.ParseHunks(diff), nil
}

// handOff is the reason a blocked finding is handed off with; on a head
// whose tests were red before any fix it says so, with the failing lines,
// so the human does not blame the fix (AG-T5).
func handOff(r *prloop.FixResult, reason string) string {
	reason = strings.TrimSpace(reason)
	if reason == "" {
		reason = "the fixer could not address it"
	}
	if r.BaselineRed {
		reason += "; the tests were already red on the PR's head before any fix: " +
			strings.ReplaceAll(r.BaselineTail, "\n", " | ")
	}
	return reason
}

// baseline is the test run of head, run once per head (AG-T5). The
// worktree is reset afterwards so nothing the tests wrote is committed.
func (w *GitWorkspace) baseline(ctx context.Context, head string, test []string) (testRun, error) {
	if b, ok := w.baselines[head]; ok {
		w.censuses = append(w.censuses, prloop.TestCensus{Kind: prloop.CensusBaseline, Head: head, Census: b.census.Summary()})
		return b, nil
	}
	b, err := w.runTests(ctx, test)
	if err != nil {
		return testRun{}, err
	}
	if n := len(w.censuses); n > 0 {
		// runTests recorded it as a candidate: it is the head's.
		w.censuses[n-1].Kind, w.censuses[n-1].Head = prloop.CensusBaseline, head
	}
	if w.baselines == nil {
		w.baselines = map[string]testRun{}
	}
	w.baselines[head] = b
	return b, w.reset(ctx, head)
}

func (w *GitWorkspace) reset(ctx context.Context, sha string) error {
	for _, args := range [][]string{
		{"checkout", "--quiet", "--force", "--detach", sha},
		{"reset", "--quiet", "--hard", sha},
		{"clean", "-fdq"},
	} {
		// The worktree is the run's own (it holds the PR's lock): an
		// index lock in it is a killed git's.
		if _, err := gitLocked(ctx, w.clone.Dir, w.worktree, args...); err != nil {
			return fmt.Errorf("reset worktree: %w", err)
		}
	}
	return nil
}

// task is the fix task of fs, to run in dir.
func (w *GitWorkspace) task(round int, dir string, fs []prloop.Finding) agent.Task {
	t := agent.Task{Kind: agent.TaskKindFix, RunID: w.RunID, Round: round, Workdir: dir, Budget: w.Budget, Env: w.AgentEnv}
	for _, f := range fs {
		t.Findings = append(t.Findings, agent.Finding{
			ID: f.ID, ThreadID: f.ThreadID, Path: f.Path, StartLine: f.StartLine, EndLine: f.EndLine,
			Body: f.Summary, Author: f.Author, Source: f.Source,
			Outdated: f.Outdated, OrigStart: f.OrigStart, OrigEnd: f.OrigEnd, OriginalCommit: f.OriginalCommit,
			Structural: f.Verdict == prloop.VerdictStructural,
		})
	}
	return t
}

// applyEach applies fixes one at a time from a clean head, keeping each
// that adds no test failure to the baseline; the kept ones are then
// re-applied together and tested again, which is the run returned.
func (w *GitWorkspace) applyEach(ctx context.Context, pr *forge.PullRequest, round int, fs []prloop.Finding, test []string, base *testRun) (map[string]agent.FindingOutcome, *testRun, error) {
	out := map[string]agent.FindingOutcome{}
	var keep []prloop.Finding
	for _, f := range fs {
		if err := w.reset(ctx, pr.HeadSHA); err != nil {
			return nil, nil, err
		}
		outs, err := w.apply(ctx, pr, round, []prloop.Finding{f})
		if err != nil {
			return nil, nil, err
		}
		o := outs[f.ID]
		if o.Status == agent.StatusComplete {
			tr, err := w.runTests(ctx, test)
			if err != nil {
				return nil, nil, err
			}
			if bad := judge(base, tr); bad != "" {
				o = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked, Reason: tr.redReason("tests fail with this fix: ", bad)}
			} else {
				keep = append(keep, f)
			}
		}
		out[f.ID] = o
	}
	if err := w.reset(ctx, pr.HeadSHA); err != nil {
		return nil, nil, err
	}
	if len(keep) == 0 {
		return out, nil, nil
	}
	again, err := w.apply(ctx, pr, round, keep)
	if err != nil {
		return nil, nil, err
	}
	for id, o := range again {
		out[id] = o
	}
	tr, err := w.runTests(ctx, test)
	if err != nil {
		return nil, nil, err
	}
	if bad := judge(base, tr); bad != "" {
		// Green alone, red together: push nothing this round.
		if err := w.reset(ctx, pr.HeadSHA); err != nil {
			return nil, nil, err
		}
		for _, f := range keep {
			out[f.ID] = agent.FindingOutcome{FindingID: f.ID, Status: agent.StatusBlocked, Reason: tr.redReason("fixes conflict in tests: ", bad)}
		}
		return out, nil, nil
	}
	return out, &tr, nil
}

// testCommand is the run's build/test command: test_cmd when set, else
// the one discovered on the PR's base branch, once for the run (PR-V4):
// what the head says — its README's testing section, a Makefile target, a
// package.json script a fixer edited — never changes what "the tests
// pass" means. Nil when none can be found (or the base cannot be read:
// fail closed, no untested push).
func (w *GitWorkspace) testCommand(ctx context.Context, pr *forge.PullRequest) []string {
	if len(w.TestCmd) > 0 {
		return w.TestCmd
	}
	w.testMu.Lock()
	defer w.testMu.Unlock()
	if w.frozenTest != nil {
		return w.frozenTest.Test
	}
	c, base, err := w.discoverOnBase(ctx, pr)
	if err != nil {
		w.logf("the test command cannot be found on the base branch %s: %v", pr.BaseRef, err)
		return nil
	}
	w.frozenTest = &c
	if len(c.Test) > 0 {
		w.logf("test command %q, from the base branch %s at %s (%s); frozen for the run", strings.Join(c.Test, " "), pr.BaseRef, text.ShortSHA(base), c.Why[repo.KindTest])
	}
	return c.Test
}

// maxDiscoverBytes bounds one file of the base branch that discovery
// reads.
const maxDiscoverBytes = 1 << 20

// discoverOnBase runs command discovery (REPO-C1) on the files at the
// root of the PR's base branch, as fetched into the clone, and says which
// commit that was.
func (w *GitWorkspace) discoverOnBase(ctx context.Context, pr *forge.PullRequest) (repo.Commands, string, error) {
	if w.clone == nil {
		return repo.Commands{}, "", errors.New("no clone")
	}
	base, err := w.clone.Run(ctx, "rev-parse", "--verify", "--quiet", "refs/remotes/origin/"+pr.BaseRef+"^{commit}")
	if err != nil {
		return repo.Commands{}, "", fmt.Errorf("read %s: %w", pr.BaseRef, err)
	}
	base = strings.TrimSpace(base)
	ls, err := w.clone.Run(ctx, "ls-tree", "-z", "--long", base)
	if err != nil {
		return repo.Commands{}, "", err
	}
	dir, err := os.MkdirTemp("", "converge-base-")
	if err != nil {
		return repo.Commands{}, "", err
	}
	defer os.RemoveAll(dir)
	for _, e := range strings.Split(ls, "\x00") {
		// <mode> SP <type> SP <object> SP+ <size> TAB <name>
		meta, name, ok := strings.Cut(e, "\t")
		f := strings.Fields(meta)
		if !ok || len(f) != 4 || f[1] != "blob" || (f[0] != "100644" && f[0] != "100755") || strings.ContainsAny(name, "/\x00") {
			continue
		}
		if n, err := strconv.ParseInt(f[3], 10, 64); err != nil || n > maxDiscoverBytes {
			continue
		}
		b, err := w.clone.Run(ctx, "cat-file", "blob", f[2])
		if err != nil {
			return repo.Commands{}, "", err
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(b), 0o600); err != nil {
			return repo.Commands{}, "", err
		}
	}
	return repo.Discover(dir), base, nil
}

// runTests runs the build/test command in the worktree under its
// time-box. A run stopped at the budget is red; only a command that could
// not run at all is an error.
func (w *GitWorkspace) runTests(ctx context.Context, argv []string) (testRun, error) {
	tr, err := w.runTestsIn(ctx, w.worktree.Dir, argv)
	if err == nil {
		w.censuses = append(w.censuses, prloop.TestCensus{Kind: prloop.CensusCandidate, Census: tr.census.Summary()})
	}
	return tr, err
}

// runTestsIn is runTests in dir, its census recorded nowhere.
func (w *GitWorkspace) runTestsIn(ctx context.Context, dir string, argv []string) (testRun, error) {
	budget := w.TestBudget
	if budget <= 0 {
		budget = DefaultTestBudget
	}
	env := w.AgentEnv
	if env == nil {
		env = agent.ScrubEnv(os.Environ())
	}
	// The census (PR-V4) is taken where the runner reports its tests;
	// the output is what the plain command prints, for the excerpts.
	r, err := census.Run(ctx, census.Spec{Dir: dir, Argv: argv, Env: env, Budget: budget, MaxOutput: 64 << 10})
	if err != nil {
		return testRun{}, fmt.Errorf("run tests %s: %w", strings.Join(argv, " "), err)
	}
	if !r.Census.Known {
		w.logf("no test census of this run (%s): %s", strings.Join(argv, " "), r.Census.Why)
	}
	return testRun{out: r.Output, code: r.ExitCode, timedOut: r.TimedOut, budget: budget, census: r.Census, mayGo: w.mayGo, untestedOK: w.AllowUntested}, nil
}

// testRun is one build/test run.
type testRun struct {
	out      string
	code     int
	timedOut bool
	budget   time.Duration
	// census is the run's test census (PR-V4); mayGo the tests the
	// round's findings ask to remove, which it may lose.
	census census.Census
	mayGo  func(testID string) bool
	// untestedOK: allow_untested, which also lets a fix through on which
	// no test ran (a repository whose tests run none is untested).
	untestedOK bool
}

// lostTests prefixes judge's reason when a run's census holds against
// the baseline's (PR-V4): tests lost or newly failing. It is the whole
// reason, not a failure excerpt.
const lostTests = "the test census rejects the fix: "

// ok: the run is green — exit status 0 within its budget, and no test
// failed, whatever the exit status says (PR-V4: a TestMain that exits 0,
// a `|| true`): by its census where the runner reports one, else by the
// runners' failure lines in its output.
func (t testRun) ok() bool {
	if t.code != 0 || t.timedOut {
		return false
	}
	if t.census.Known {
		return t.census.Failed == 0
	}
	return len(census.Failures(t.out)) == 0
}

// redReason words a red run for a hand-off: a time-out as such, else
// prefix and the failing lines.
func (t testRun) redReason(prefix, lines string) string {
	if t.timedOut || strings.HasPrefix(lines, lostTests) {
		return lines
	}
	return prefix + lines
}

// excerpt is the first failing lines of a red run, one detail line after
// each, limited to those whose key is in only (all when only is nil):
// what a hand-off quotes. Output without recognisable failure lines gives
// its last lines, and no output its exit status, so it is never empty.
func (t testRun) excerpt(only map[string]bool) []string {
	if t.timedOut {
		return []string{"tests timed out after " + fmtDuration(t.budget)}
	}
	var out []string
	for _, f := range census.Failures(t.out) {
		if only != nil && !only[f.Key] {
			continue
		}
		out = append(out, f.Lines...)
		if len(out) >= maxExcerpt {
			return out[:maxExcerpt]
		}
	}
	if len(out) > 0 {
		return out
	}
	lines := nonEmptyLines(t.out)
	if len(lines) == 0 {
		return []string{fmt.Sprintf("exit status %d, no output", t.code)}
	}
	return lines[max(0, len(lines)-maxExcerpt):]
}

const maxExcerpt = 6

// judge says why run tr is not acceptable against the head's baseline
// run, or "" when it is (AG-T5). On a green baseline any red run fails,
// as before: a round never pushes a red build. On a red baseline a run
// fails only by a failure line the baseline lacks — or, when neither has
// failure lines to compare, by another exit status — so a fix is not
// blamed for failures it found. A run that timed out always fails: what it
// would have printed is unknown. A run the build/test step would accept
// still fails when a test that ran at the baseline no longer runs or now
// skips, unless the round's findings ask to remove it (PR-V4), when a test
// fails that did not fail at the baseline (never waived), or when the
// baseline's tests were counted and the run's cannot be. Green means no
// failing test, whatever the exit status (testRun.ok).
func judge(base *testRun, tr testRun) string {
	if bad := judgeBuild(base, tr); bad != "" {
		return bad
	}
	if base == nil {
		return ""
	}
	d := census.Compare(base.census, tr.census).Except(tr.mayGo)
	if tr.untestedOK {
		d.NoneRan = false
	}
	if !d.Empty() {
		return lostTests + d.String()
	}
	return ""
}

// judgeBuild is judge without the census: the build/test verdict alone.
func judgeBuild(base *testRun, tr testRun) string {
	switch {
	case tr.timedOut:
		return "tests timed out after " + fmtDuration(tr.budget)
	case tr.ok():
		return ""
	case base == nil || base.ok() || base.timedOut:
		return strings.Join(tr.excerpt(nil), " | ")
	}
	had := map[string]bool{}
	for _, f := range census.Failures(base.out) {
		had[f.Key] = true
	}
	fails := census.Failures(tr.out)
	if len(fails) == 0 && len(had) == 0 {
		if tr.code == base.code {
			return ""
		}
		return fmt.Sprintf("exit status %d, was %d before the fix: %s", tr.code, base.code, strings.Join(tr.excerpt(nil), " | "))
	}
	added := map[string]bool{}
	for _, f := range fails {
		if !had[f.Key] {
			added[f.Key] = true
		}
	}
	switch {
	case len(fails) == 0:
		// Red in a way the baseline's failure lines do not show (a build
		// that no longer compiles, a crash): not the baseline's failure.
		return strings.Join(tr.excerpt(nil), " | ")
	case len(added) == 0:
		return ""
	}
	return strings.Join(tr.excerpt(added), " | ")
}

func nonEmptyLines(s string) []string {
	var out []string
	for _, l := range strings.Split(s, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			out = append(out, text.Clip(l, 200))
		}
	}
	return out
}

// fmtDuration drops the zero units time.Duration prints ("10m", not
// "10m0s") — it is read in replies.
func fmtDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}

func appliedIDs(m map[string]agent.FindingOutcome) []string {
	var ids []string
	for id, o := range m {
		if o.Status == agent.StatusComplete {
			ids = append(ids, id)
		}
	}
	sort.Strings(ids)
	return ids
}

// bottomUp orders findings by file, then by descending line, so that an
// edit never shifts the lines of a later one in the same file.
func bottomUp(fs []prloop.Finding) []prloop.Finding {
	out := append([]prloop.Finding(nil), fs...)
	sort.SliceStable(out, func(i, j int) bool {
		if out[i].Path != out[j].Path {
			return out[i].Path < out[j].Path
		}
		return out[i].EndLine > out[j].EndLine
	})
	return out
}

func commitMessage(round int, fs []prloop.Finding, addressed []string) string {
	done := map[string]bool{}
	for _, id := range addressed {
		done[id] = true
	}
	var b strings.Builder
	fmt.Fprintf(&b, "converge: address review findings (round %d)\n\n", round)
	var threads []string
	for _, f := range fs {
		if !done[f.ID] {
			continue
		}
		fmt.Fprintf(&b, "- %s:%d %s\n", f.Path, f.EndLine, prloop.FirstLine(f.Summary))
		if f.ThreadID != "" {
			threads = append(threads, f.ThreadID)
		}
	}
	fmt.Fprintf(&b, "\n%s: %s\n", prloop.CommitTrailer, strconv.Itoa(round))
	for _, id := range threads {
		fmt.Fprintf(&b, "%s: %s\n", prloop.AddressedTrailer, id)
	}
	return b.String()
}

func sanitize(host string) string { return strings.NewReplacer(":", "_", "/", "_").Replace(host) }
